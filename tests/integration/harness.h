/* SPDX-License-Identifier: MIT */
/*
 * Integration-test harness: a temporary state directory, the real daemon started and
 * stopped around each test, and the state file read through the public header.
 */
#ifndef BARRIERD_HARNESS_H
#define BARRIERD_HARNESS_H

#include <barrierd.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
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

#include "test_env.h"

struct harness {
	char dir[256];
	char state[300];
	char log[300];
	pid_t pid;
};

/* The harness of the test being run (one per test program). */
static struct harness H;

static inline uint64_t h_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline void h_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* A fresh directory under the build tree, reachable by everyone (0755). */
static inline void h_mkdir(struct harness *h)
{
	memset(h, 0, sizeof(*h));
	snprintf(h->dir, sizeof(h->dir), "%s/tests/tmp.XXXXXX", BARRIERD_BINARY_DIR);
	if (!mkdtemp(h->dir)) {
		perror("mkdtemp");
		exit(1);
	}
	chmod(h->dir, 0755);
	snprintf(h->state, sizeof(h->state), "%s/state", h->dir);
	snprintf(h->log, sizeof(h->log), "%s/daemon.log", h->dir);
	h->pid = -1;
}

static inline void h_rmdir(struct harness *h)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", h->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup of %s failed\n", h->dir);
}

/*
 * The daemon binary the tests run: BARRIERD_BIN, or $BARRIERD_TEST_DAEMON when set (to run the
 * same tests against another build, e.g. an older commit's, to see them fail there).
 */
static inline const char *h_daemon_bin(void)
{
	const char *env = getenv("BARRIERD_TEST_DAEMON");

	return env && *env ? env : BARRIERD_BIN;
}

/* Fork and exec bin with argv (NULL-terminated, without argv[0]); -1 cpu: no pinning. */
static inline pid_t h_spawn_bin(struct harness *h, const char *bin, int cpu,
				const char *const *args)
{
	const char *argv[40];
	int n = 0;
	pid_t pid;

	argv[n++] = bin;
	for (; args && *args && n < 38; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	pid = fork();
	if (pid == 0) {
		int fd = open(h->log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (fd >= 0) {
			dup2(fd, 2);
			dup2(fd, 1);
		}
		if (cpu >= 0) {
			cpu_set_t s;

			CPU_ZERO(&s);
			CPU_SET(cpu, &s);
			sched_setaffinity(0, sizeof(s), &s);
		}
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* Fork and exec the daemon (h_daemon_bin()); -1 cpu: no pinning. */
static inline pid_t h_spawn(struct harness *h, int cpu, const char *const *args)
{
	return h_spawn_bin(h, h_daemon_bin(), cpu, args);
}

/* The log's size now: a mark for h_log_has_since(). */
static inline long h_log_mark(const struct harness *h)
{
	struct stat st;

	return stat(h->log, &st) == 0 ? (long)st.st_size : 0;
}

/* Does the daemon log, from byte `from` on, contain needle? */
static inline int h_log_has_since(const struct harness *h, long from, const char *needle)
{
	char buf[65536];
	FILE *f = fopen(h->log, "r");
	size_t n;

	if (!f)
		return 0;
	if (fseek(f, from, SEEK_SET)) {
		fclose(f);
		return 0;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return strstr(buf, needle) != NULL;
}

static inline const struct barrierd_header *h_map(const char *path, size_t *size)
{
	struct stat st;
	void *m;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || st.st_size < 128) {
		close(fd);
		return NULL;
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return NULL;
	*size = (size_t)st.st_size;
	return m;
}

static inline uint64_t h_ld(const uint64_t *p)
{
	/* Hide the pointer's provenance: GCC 12 misreads atomics on flexible array members. */
	__asm__("" : "+r"(p));
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* Wait (hang guard: seconds) until the file says a daemon with this pid runs. */
static inline int h_wait_running(struct harness *h, pid_t pid)
{
	for (int i = 0; i < 1000; i++) {
		size_t sz;
		const struct barrierd_header *m = h_map(h->state, &sz);
		int status;

		if (m) {
			int ok = h_ld(&m->magic) == BARRIERD_MAGIC &&
				 (h_ld(&m->flags) & BARRIERD_FLAG_RUNNING) &&
				 h_ld(&m->daemon_pid) == (uint64_t)pid;

			munmap((void *)m, sz);
			if (ok)
				return 0;
		}
		if (waitpid(pid, &status, WNOHANG) == pid) {
			if (h->pid == pid)
				h->pid = -1; /* reaped: teardown must not wait for it */
			fprintf(stderr, "daemon exited early (status %d); its log:\n", status);
			char cmd[400];
			snprintf(cmd, sizeof(cmd), "cat '%s' >&2", h->log);
			if (system(cmd)) {
			}
			return -1;
		}
		h_sleep_ms(10);
	}
	fprintf(stderr, "daemon did not start within 10 s\n");
	return -1;
}

static inline int h_start(struct harness *h, int cpu, const char *const *extra)
{
	const char *args[32] = {"--state", h->state};
	int n = 2;

	for (; extra && *extra && n < 30; extra++)
		args[n++] = *extra;
	args[n] = NULL;
	h->pid = h_spawn(h, cpu, args);
	if (h->pid < 0)
		return -1;
	return h_wait_running(h, h->pid);
}

/* Wait for a child with a hang guard; returns its wait status or -1. */
static inline int h_reap(pid_t pid, int seconds)
{
	int status;

	for (int i = 0; i < seconds * 100; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		h_sleep_ms(10);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

static inline int h_stop(struct harness *h)
{
	int st;

	if (h->pid <= 0)
		return 0;
	kill(h->pid, SIGTERM);
	st = h_reap(h->pid, 10);
	h->pid = -1;
	return st;
}

/* Run a command; returns its exit status. */
static inline int h_system(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Pin the calling thread to one CPU. */
static inline void h_pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

/* nice-19 spinners on every CPU, for "loaded" runs; returns how many were started. */
static inline int h_spinners(pid_t *pids, int max)
{
	int n = (int)sysconf(_SC_NPROCESSORS_ONLN);

	if (n > max)
		n = max;
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			h_pin(i);
			if (nice(19) < 0) {
			}
			for (;;)
				__asm__ __volatile__("pause");
		}
	}
	return n;
}

static inline void h_kill_all(pid_t *pids, int n)
{
	for (int i = 0; i < n; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
}

/* cmocka fixtures: a fresh directory per test; the daemon (if started) stopped after it. */
__attribute__((unused)) static int h_setup(void **state)
{
	(void)state;
	h_mkdir(&H);
	return 0;
}

__attribute__((unused)) static int h_teardown(void **state)
{
	(void)state;
	h_stop(&H);
	h_rmdir(&H);
	return 0;
}

#endif
