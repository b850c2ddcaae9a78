/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the barrierctl tests: run the binary as a subprocess with its output captured,
 * and check what it printed.  The state files they read come from the fake daemon
 * (fake_daemon.h) or the real one (harness.h).
 *
 * Everything is static inline so each test file uses what it needs without warnings.
 */
#ifndef BARRIERD_CLI_RUN_H
#define BARRIERD_CLI_RUN_H

#include <barrierd.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bd_sync.h"
#include "test_util.h"

extern char **environ;

#define CLI_HANG_GUARD_S 30 /* a run that takes this long is hung, not slow */

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
	uint64_t end = bd_mono_ns() + CLI_HANG_GUARD_S * TEST_SEC;
	int status = 0, hung = 0;

	while (cli_pump(p, 100, extra_fd)) {
		if (bd_mono_ns() > end) {
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

/* Run barrierctl with the arguments in ap (NULL-terminated); trust as in cli_argv(). */
static inline void bctl_va(struct cli_result *r, bool trust, va_list ap)
{
	const char *argv[64];

	cli_argv(argv, 64, trust, ap);
	cli_run_argv(r, argv, NULL);
}

/* barrierctl ARGS... NULL, as given (for usage tests). */
static inline void bctl_raw(struct cli_result *r, ...)
{
	va_list ap;

	va_start(ap, r);
	bctl_va(r, false, ap);
	va_end(ap);
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
	va_list ap;

	va_start(ap, r);
	bctl_va(r, true, ap);
	va_end(ap);
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

/* Print what the child said when an assertion is about to fail: the failure names the test. */
static inline void cli_show(const struct cli_result *r)
{
	fprintf(stderr, "exit %d (signal %d)\n--- stdout ---\n%s--- stderr ---\n%s--------------\n",
		r->code, r->sig, r->out, r->err);
}

/* Assert the exit code (cmocka), showing the child's output first when it differs. */
#define expect_code(r, want)                                                                       \
	do {                                                                                       \
		if ((r)->code != (want))                                                           \
			cli_show(r);                                                               \
		assert_int_equal((r)->code, (want));                                               \
	} while (0)

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

#endif
