// SPDX-License-Identifier: MIT
/*
 * The real daemon around a test (harness.h).
 */
#define BARRIERD_BIN "" /* harness.h's default daemon is the including test's; unused here */
#include "harness.h"

#include <linux/futex.h>

void h_mkdir(struct harness *h)
{
	memset(h, 0, sizeof(*h));
	if (test_mkdtemp(h->dir, sizeof(h->dir), BARRIERD_BINARY_DIR "/tests")) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(h->state, sizeof(h->state), "%s/state", h->dir);
	snprintf(h->log, sizeof(h->log), "%s/daemon.log", h->dir);
	h->pid = -1;
}

void h_rmdir(struct harness *h)
{
	test_rmtree(h->dir);
}

pid_t h_spawn_bin(struct harness *h, const char *bin, int cpu, const char *const *args)
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
		if (cpu >= 0)
			test_pin(cpu);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

long h_log_mark(const struct harness *h)
{
	struct stat st;

	return stat(h->log, &st) == 0 ? (long)st.st_size : 0;
}

int h_log_has_since(const struct harness *h, long from, const char *needle)
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

int h_wait_running(struct harness *h, pid_t pid)
{
	for (int i = 0; i < 1000; i++) {
		size_t sz;
		const struct barrierd_header *m = map_ro(h->state, &sz);
		int status;

		if (m) {
			int ok = bd_load(&m->magic) == BARRIERD_MAGIC &&
				 (bd_load(&m->flags) & BARRIERD_FLAG_RUNNING) &&
				 bd_load(&m->daemon_pid) == (uint64_t)pid;

			munmap((void *)m, sz);
			if (ok)
				return 0;
		}
		if (waitpid(pid, &status, WNOHANG) == pid) {
			if (h->pid == pid)
				h->pid = -1; /* reaped: teardown must not wait for it */
			fprintf(stderr, "daemon exited early (status %d); its log:\n", status);
			if (test_system("cat '%s' >&2", h->log)) {
			}
			return -1;
		}
		test_sleep_ms(10);
	}
	fprintf(stderr, "daemon did not start within 10 s\n");
	return -1;
}

int h_start_bin(struct harness *h, const char *bin, int cpu, const char *const *extra)
{
	const char *args[32] = {"--state", h->state};
	int n = 2;

	for (; extra && *extra && n < 30; extra++)
		args[n++] = *extra;
	args[n] = NULL;
	h->pid = h_spawn_bin(h, bin, cpu, args);
	if (h->pid < 0)
		return -1;
	return h_wait_running(h, h->pid);
}

int h_stop(struct harness *h)
{
	int st;

	if (h->pid <= 0)
		return 0;
	kill(h->pid, SIGTERM);
	st = test_reap(h->pid, 10);
	h->pid = -1;
	return st;
}

/*
 * The original layout's wait on one of the two global words: the low half snapshotted before
 * the 64-bit check, so that a publication between the check and the sleep changes the futex
 * word and the sleep returns at once.
 */
static int raw_wait_word(const struct barrierd_header *m, const uint64_t *word, uint64_t t,
			 bool ring, uint64_t sleep_ns, uint64_t timeout_ns)
{
	struct timespec to = {.tv_sec = (time_t)(sleep_ns / TEST_SEC),
			      .tv_nsec = (long)(sleep_ns % TEST_SEC)};
	uint64_t start = bd_mono_ns();

	for (;;) {
		uint32_t w = bd_load_low(word);

		if (bd_load(word) > t)
			return 0;
		if (bd_mono_ns() - start > timeout_ns)
			return -ETIMEDOUT;
		if (ring)
			syscall(SYS_futex, &m->doorbell, FUTEX_WAKE, 1, NULL, NULL, 0);
		syscall(SYS_futex, word, FUTEX_WAIT, w, &to, NULL, 0);
	}
}

int h_raw_wait(const struct barrierd_header *m, uint64_t t, bool ring, uint64_t sleep_ns,
	       uint64_t timeout_ns)
{
	return raw_wait_word(m, &m->last_interrupt_ns, t, ring, sleep_ns, timeout_ns);
}

uint64_t h_raw_stamp_vtime(const struct barrierd_header *m)
{
	/* The caller's earlier stores are visible before the vtime it reads (rule 5). */
	bd_mfence();
	return bd_load(&m->vtime);
}

int h_raw_wait_vtime(const struct barrierd_header *m, uint64_t vtime, bool ring, uint64_t sleep_ns,
		     uint64_t timeout_ns)
{
	return raw_wait_word(m, &m->last_interrupt_vtime, vtime, ring, sleep_ns, timeout_ns);
}

int h_raw_barrier(const struct barrierd_header *m, bool ring, uint64_t sleep_ns,
		  uint64_t timeout_ns, uint64_t *stamp)
{
	bd_stamp_fence();
	*stamp = bd_mono_ns();
	return h_raw_wait(m, *stamp, ring, sleep_ns, timeout_ns);
}
