/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the barrierctl tests: run the binary as a subprocess with its output captured,
 * and write state files the way a daemon would (built from <barrierd.h>'s structs, the one
 * definition of the layout), with an optional thread that keeps chosen CPUs fresh.
 *
 * Everything is static inline so each test file uses what it needs without warnings.
 */
#ifndef BARRIERD_CLI_RUN_H
#define BARRIERD_CLI_RUN_H

#include <barrierd.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define CLI_MS 1000000ULL
#define CLI_SEC 1000000000ULL
#define CLI_HANG_GUARD_S 30 /* a run that takes this long is hung, not slow */

static inline uint64_t cli_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * CLI_SEC + (uint64_t)ts.tv_nsec;
}

static inline void cli_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ---------------------------------------------------------------------------------------- */
/* Running barrierctl                                                                         */
/* ---------------------------------------------------------------------------------------- */

struct cli_result {
	int code;  /* exit status, or -1 when killed by a signal (see sig) or hung */
	int sig;   /* the terminating signal, 0 if it exited */
	char *out; /* NUL-terminated stdout */
	char *err; /* NUL-terminated stderr */
	size_t out_len, err_len;
};

struct cli_proc {
	pid_t pid;
	int out_fd, err_fd; /* read ends, -1 once at EOF */
	struct cli_result r;
};

static inline void cli_result_free(struct cli_result *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}

/* The environment minus BARRIERD_STATE, so that the tests see only the paths they pass. */
static inline char **cli_env(void)
{
	static char *env[512];
	int n = 0;

	for (char **e = environ; *e && n < 511; e++)
		if (strncmp(*e, BARRIERD_STATE_ENV "=", sizeof(BARRIERD_STATE_ENV)) != 0)
			env[n++] = *e;
	env[n] = NULL;
	return env;
}

/*
 * Start argv[0] with stdin from stdin_path (NULL: /dev/null), stdout to out_fd_child when >= 0
 * (a pty, say) or else a pipe, stderr to a pipe.  0 or -errno.
 */
static inline int cli_start(struct cli_proc *p, const char *const *argv, const char *stdin_path,
				int out_fd_child)
{
	posix_spawn_file_actions_t fa;
	int po[2] = {-1, -1}, pe[2], ret;

	memset(p, 0, sizeof(*p));
	p->out_fd = p->err_fd = -1;
	if ((out_fd_child < 0 && pipe2(po, O_CLOEXEC)) || pipe2(pe, O_CLOEXEC))
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, stdin_path ? stdin_path : "/dev/null", O_RDONLY,
					 0);
	posix_spawn_file_actions_adddup2(&fa, out_fd_child >= 0 ? out_fd_child : po[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
	ret = posix_spawn(&p->pid, argv[0], &fa, NULL, (char *const *)argv, cli_env());
	posix_spawn_file_actions_destroy(&fa);
	if (po[1] >= 0)
		close(po[1]);
	close(pe[1]);
	if (ret) {
		if (po[0] >= 0)
			close(po[0]);
		close(pe[0]);
		return -ret;
	}
	p->out_fd = out_fd_child >= 0 ? -1 : po[0];
	p->err_fd = pe[0];
	p->r.out = calloc(1, 1);
	p->r.err = calloc(1, 1);
	return 0;
}

static inline void cli_append(char **buf, size_t *len, const char *data, size_t n)
{
	char *nb = realloc(*buf, *len + n + 1);

	if (!nb)
		abort();
	memcpy(nb + *len, data, n);
	*len += n;
	nb[*len] = 0;
	*buf = nb;
}

/*
 * Read whatever the child has written, for up to wait_ms.  Returns 1 while some pipe is open,
 * 0 once every pipe reached EOF.  A pty master passed as extra_fd (>= 0) is read into stdout.
 */
static inline int cli_pump(struct cli_proc *p, int wait_ms, int *extra_fd)
{
	struct pollfd fds[3];
	int *owners[3], n = 0;
	char buf[8192];

	if (p->out_fd >= 0) {
		fds[n] = (struct pollfd){.fd = p->out_fd, .events = POLLIN};
		owners[n++] = &p->out_fd;
	}
	if (p->err_fd >= 0) {
		fds[n] = (struct pollfd){.fd = p->err_fd, .events = POLLIN};
		owners[n++] = &p->err_fd;
	}
	if (extra_fd && *extra_fd >= 0) {
		fds[n] = (struct pollfd){.fd = *extra_fd, .events = POLLIN};
		owners[n++] = extra_fd;
	}
	if (n == 0)
		return 0;
	if (poll(fds, (nfds_t)n, wait_ms) <= 0)
		return 1;
	for (int i = 0; i < n; i++) {
		ssize_t got;

		if (!fds[i].revents)
			continue;
		got = read(fds[i].fd, buf, sizeof(buf));
		if (got <= 0) {
			/* EOF, or EIO from a pty master once the child closed the slave. */
			if (got == 0 || errno != EINTR) {
				close(*owners[i]);
				*owners[i] = -1;
			}
			continue;
		}
		if (owners[i] == &p->err_fd)
			cli_append(&p->r.err, &p->r.err_len, buf, (size_t)got);
		else
			cli_append(&p->r.out, &p->r.out_len, buf, (size_t)got);
	}
	return 1;
}

/* Collect everything, reap the child (killing it past the hang guard) and fill *r. */
static inline void cli_finish(struct cli_proc *p, struct cli_result *r, int *extra_fd)
{
	uint64_t end = cli_now() + CLI_HANG_GUARD_S * CLI_SEC;
	int status = 0, hung = 0;

	while (cli_pump(p, 100, extra_fd)) {
		if (cli_now() > end) {
			hung = 1;
			kill(p->pid, SIGKILL);
			break;
		}
		/* A pty master gives no EOF while we hold it: stop once the child is gone. */
		if (extra_fd && *extra_fd >= 0 && p->err_fd < 0 &&
			waitpid(p->pid, &status, WNOHANG) == p->pid) {
			while (cli_pump(p, 50, extra_fd) && *extra_fd >= 0)
				;
			p->pid = -1;
			break;
		}
	}
	if (p->pid > 0)
		waitpid(p->pid, &status, 0);
	if (p->out_fd >= 0)
		close(p->out_fd);
	if (p->err_fd >= 0)
		close(p->err_fd);
	*r = p->r;
	r->code = hung ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	r->sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	if (hung)
		fprintf(stderr, "hang guard: %d s passed, the child was killed\n",
			CLI_HANG_GUARD_S);
}

/* Run argv to completion. */
static inline int cli_run_argv(struct cli_result *r, const char *const *argv,
			       const char *stdin_path)
{
	struct cli_proc p;
	int ret = cli_start(&p, argv, stdin_path, -1);

	memset(r, 0, sizeof(*r));
	if (ret) {
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(-ret));
		r->code = -1;
		return ret;
	}
	cli_finish(&p, r, NULL);
	return 0;
}

/* argv for barrierctl: the binary, the NULL-terminated args, and optionally --trusted-uid. */
static inline void cli_argv(const char **argv, size_t max, bool trust, va_list ap)
{
	static char uid[32];
	size_t n = 0;
	const char *a;

	argv[n++] = BARRIERCTL_BIN;
	while ((a = va_arg(ap, const char *)) != NULL && n < max - 3)
		argv[n++] = a;
	/*
	 * Files a test writes are owned by the test's user: root's are trusted anyway, anyone
	 * else names their uid, which keeps these tests runnable without root.
	 */
	if (trust && geteuid() != 0) {
		snprintf(uid, sizeof(uid), "%u", (unsigned)geteuid());
		argv[n++] = "--trusted-uid";
		argv[n++] = uid;
	}
	argv[n] = NULL;
}

/* barrierctl ARGS... NULL, as given (for usage tests). */
static inline void bctl_raw(struct cli_result *r, ...)
{
	const char *argv[64];
	va_list ap;

	va_start(ap, r);
	cli_argv(argv, 64, false, ap);
	va_end(ap);
	cli_run_argv(r, argv, NULL);
}

/* barrierctl with a NULL-terminated array of arguments, as given. */
static inline void bctl_rawv(struct cli_result *r, const char *const *args)
{
	const char *argv[64];
	size_t n = 0;

	argv[n++] = BARRIERCTL_BIN;
	for (; args && *args && n < 63; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	cli_run_argv(r, argv, NULL);
}

/* barrierctl COMMAND ARGS... NULL, trusting the test's own files. */
static inline void bctl(struct cli_result *r, ...)
{
	const char *argv[64];
	va_list ap;

	va_start(ap, r);
	cli_argv(argv, 64, true, ap);
	va_end(ap);
	cli_run_argv(r, argv, NULL);
}

/* Start barrierctl COMMAND ARGS... NULL in the background (stdout to out_fd if >= 0). */
static inline int bctl_start(struct cli_proc *p, int out_fd, ...)
{
	const char *argv[64];
	va_list ap;

	va_start(ap, out_fd);
	cli_argv(argv, 64, true, ap);
	va_end(ap);
	return cli_start(p, argv, NULL, out_fd);
}

/* Does python3 accept this text as JSON and does `check` (a Python expression on d) hold? */
static inline int cli_json_check(const char *dir, const char *json, const char *check)
{
	char path[PATH_MAX], script[2048];
	struct cli_result r;
	FILE *f;
	int code;

	snprintf(path, sizeof(path), "%s/out.json", dir);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(json, f);
	fclose(f);
	snprintf(script, sizeof(script),
		 "import json,sys\n"
		 "d=json.load(sys.stdin)\n"
		 "ok=(%s)\n"
		 "print('check failed:', %s, file=sys.stderr) if not ok else None\n"
		 "sys.exit(0 if ok else 1)\n",
		 check ? check : "True", "repr(d)[:3000]");
	const char *argv[] = {"/usr/bin/env", "python3", "-c", script, NULL};
	cli_run_argv(&r, argv, path);
	if (r.code != 0)
		fprintf(stderr, "python3 (%d): %s\nfor: %s\n", r.code, r.err, check ? check : "");
	code = r.code;
	cli_result_free(&r);
	return code;
}

/* Lines of text that contain needle. */
static inline int cli_count(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

/* ---------------------------------------------------------------------------------------- */
/* A state file written by the test                                                          */
/* ---------------------------------------------------------------------------------------- */

struct simfile {
	char dir[PATH_MAX / 2];
	char path[PATH_MAX];
	uint64_t ncpu;
	size_t size;
	struct barrierd_header *h; /* read-write shared mapping: the daemon's side */
	struct barrierd_ext *x;
	uint64_t fresh_mask; /* __atomic: CPUs the refresher keeps at "now" */
	pthread_t thread;
	int running, stop; /* __atomic */
};

static inline void sim_st(uint64_t *p, uint64_t v)
{
	/* One aligned 64-bit store per word, as the daemon publishes. */
	__asm__("" : "+r"(p));
	__atomic_store_n(p, v, __ATOMIC_SEQ_CST);
}

static inline uint64_t sim_ld(const uint64_t *p)
{
	__asm__("" : "+r"(p));
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/*
 * A file as a live daemon leaves it: every CPU busy with evidence at `now`, the global value
 * their minimum, vtime above every per-CPU vtime, credit counters that differ per CPU and per
 * kind (so that a reader mixing them up shows), heartbeat now with a 10 s period (a slow test
 * machine never sees it go stale by accident).  In a fresh 0755 directory under /tmp.
 */
static inline int sim_create(struct simfile *s, uint64_t ncpu)
{
	uint64_t now = cli_now();
	struct barrierd_header *h;
	struct barrierd_ext *x;
	int fd, ret = 0;

	memset(s, 0, sizeof(*s));
	s->ncpu = ncpu;
	s->size = barrierd_file_size(ncpu);
	snprintf(s->dir, sizeof(s->dir), "/tmp/barrierctl-test.XXXXXX");
	if (!mkdtemp(s->dir) || chmod(s->dir, 0755))
		return -errno;
	snprintf(s->path, sizeof(s->path), "%s/state", s->dir);
	fd = open(s->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)s->size) || fchmod(fd, 0644))
		ret = -errno;
	h = ret ? MAP_FAILED : mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (!ret && h == MAP_FAILED)
		ret = -errno;
	close(fd);
	if (ret)
		return ret;
	x = (struct barrierd_ext *)((char *)h + barrierd_ext_offset(ncpu));
	s->h = h;
	s->x = x;
	h->ncpu = ncpu;
	h->magic = BARRIERD_MAGIC;
	h->abi_major = BARRIERD_ABI_MAJOR;
	h->abi_minor = BARRIERD_ABI_MINOR;
	h->header_size = sizeof(*h);
	h->cpu_stride = sizeof(struct barrierd_cpu);
	h->generation = 7;
	h->heartbeat_ns = now;
	h->heartbeat_period_ns = 10 * CLI_SEC;
	h->daemon_pid = 4242;
	for (int i = 0; i < 16; i++)
		h->boot_id[i] = (uint8_t)(0x10 + i);
	h->ext_offset = barrierd_ext_offset(ncpu);
	for (uint64_t c = 0; c < ncpu; c++) {
		h->per_cpu[c].last_interrupt_ns = now;
		h->per_cpu[c].last_interrupt_vtime = 1000 - c;
		x->cpu[c].state = BARRIERD_CPU_BUSY;
		x->cpu[c].credit_event = 100 + c;
		x->cpu[c].credit_idle = 200 + c;
		x->cpu[c].credit_offline = 300 + c;
	}
	h->vtime = 1000;
	h->last_interrupt_ns = now;
	h->last_interrupt_vtime = 1000 - (ncpu - 1);
	x->ext_size = s->size - barrierd_ext_offset(ncpu);
	x->ext_header_size = sizeof(*x);
	x->ext_cpu_stride = sizeof(struct barrierd_ext_cpu);
	x->last_advance_ns = now;
	x->last_advance_cause = BARRIERD_CAUSE_IDLE | (1ULL << 8);
	x->passes = 55;
	x->credit_passes = 5;
	x->doorbell_rings = 3;
	/* Flags last, as the daemon does: the file is complete before it says "running". */
	sim_st(&h->flags, BARRIERD_FLAG_RUNNING | BARRIERD_FEAT_EXTENSION | BARRIERD_FEAT_DOORBELL);
	return 0;
}

/* Fold the per-CPU values into the global one (their minimum), waking its waiters. */
static inline void sim_fold(struct simfile *s)
{
	uint64_t mn = UINT64_MAX;

	for (uint64_t c = 0; c < s->ncpu; c++) {
		uint64_t v = sim_ld(&s->h->per_cpu[c].last_interrupt_ns);

		mn = v < mn ? v : mn;
	}
	sim_st(&s->h->last_interrupt_ns, mn);
	syscall(SYS_futex, &s->h->last_interrupt_ns, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* CPU c: this state, with its evidence age_ms old. */
static inline void sim_cpu(struct simfile *s, uint64_t c, uint64_t state, uint64_t age_ms)
{
	uint64_t now = cli_now();

	sim_st(&s->x->cpu[c].state, state);
	sim_st(&s->h->per_cpu[c].last_interrupt_ns, now - age_ms * CLI_MS);
	sim_fold(s);
}

static inline void *sim_refresh_main(void *arg)
{
	struct simfile *s = arg;

	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		uint64_t now = cli_now(), mask = __atomic_load_n(&s->fresh_mask, __ATOMIC_ACQUIRE);

		for (uint64_t c = 0; c < s->ncpu && c < 64; c++)
			if (mask & (1ULL << c))
				sim_st(&s->h->per_cpu[c].last_interrupt_ns, now);
		sim_fold(s);
		sim_st(&s->h->heartbeat_ns, now);
		cli_sleep_ms(2);
	}
	return NULL;
}

/*
 * Keep the CPUs in mask at "now" (and the heartbeat) every 2 ms, like a daemon serving busy
 * CPUs, so that a default 50 ms threshold holds however slowly barrierctl starts.
 */
static inline int sim_refresh(struct simfile *s, uint64_t mask)
{
	__atomic_store_n(&s->fresh_mask, mask, __ATOMIC_RELEASE);
	if (s->running)
		return 0;
	__atomic_store_n(&s->stop, 0, __ATOMIC_RELEASE);
	if (pthread_create(&s->thread, NULL, sim_refresh_main, s))
		return -EAGAIN;
	s->running = 1;
	return 0;
}

static inline void sim_refresh_stop(struct simfile *s)
{
	if (!s->running)
		return;
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
	pthread_join(s->thread, NULL);
	s->running = 0;
}

static inline void sim_destroy(struct simfile *s)
{
	char cmd[PATH_MAX + 32];

	sim_refresh_stop(s);
	if (s->h)
		munmap(s->h, s->size);
	s->h = NULL;
	if (s->dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cleanup of %s failed\n", s->dir);
	}
}

#endif
