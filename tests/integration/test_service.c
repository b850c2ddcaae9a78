// SPDX-License-Identifier: MIT
/*
 * The daemon as a service: sd_notify readiness on a NOTIFY_SOCKET this test creates, the
 * watchdog and status messages, the sandbox in every thread, and 30 s of service under it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "harness.h"

static int sock = -1;
static char sock_path[400];

static int setup(void **state)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	(void)state;
	h_mkdir(&H);
	snprintf(sock_path, sizeof(sock_path), "%s/notify", H.dir);
	if (strlen(sock_path) >= sizeof(sa.sun_path))
		return -1;
	memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
	sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sock < 0 || bind(sock, (struct sockaddr *)&sa, sizeof(sa)))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	h_stop(&H);
	if (sock >= 0)
		close(sock);
	sock = -1;
	h_rmdir(&H);
	return 0;
}

/* Next datagram within ms, or an empty string. */
static void next_msg(char *buf, size_t len, int ms)
{
	struct pollfd p = {.fd = sock, .events = POLLIN};
	ssize_t n;

	buf[0] = 0;
	if (poll(&p, 1, ms) <= 0)
		return;
	n = recv(sock, buf, len - 1, 0);
	buf[n > 0 ? n : 0] = 0;
}

static void check_sandboxed(pid_t pid)
{
	char dir[64], path[400], line[256];
	struct dirent *e;
	int threads = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
	d = opendir(dir);
	assert_non_null(d);
	while ((e = readdir(d))) {
		int seccomp = -1, nnp = -1;
		unsigned long long capeff = ~0ULL;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/status", dir, e->d_name);
		f = fopen(path, "r");
		assert_non_null(f);
		while (fgets(line, sizeof(line), f)) {
			sscanf(line, "Seccomp: %d", &seccomp);
			sscanf(line, "NoNewPrivs: %d", &nnp);
			sscanf(line, "CapEff: %llx", &capeff);
		}
		fclose(f);
		if (seccomp != 2 || nnp != 1 || capeff != 0)
			fail_msg("thread %s: Seccomp %d NoNewPrivs %d CapEff %llx", e->d_name,
				 seccomp, nnp, capeff);
		threads++;
	}
	closedir(d);
	assert_true(threads >= 3); /* main, doorbell and slot server */
}

static void readiness_watchdog_sandbox(void **state)
{
	const char *args[] = {"--state", H.state, NULL};
	char msg[512];
	struct barrierd *b;
	int watchdogs = 0, statuses = 0, barriers = 0, rings_before;
	uint64_t end;

	(void)state;
	setenv("NOTIFY_SOCKET", sock_path, 1);
	setenv("WATCHDOG_USEC", "1000000", 1);
	H.pid = h_spawn(&H, -1, args);
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	assert_true(H.pid > 0);

	/* READY=1 comes only once the file is published and valid. */
	for (int i = 0; i < 100; i++) {
		next_msg(msg, sizeof(msg), 100);
		if (strcmp(msg, "READY=1") == 0)
			break;
	}
	assert_string_equal(msg, "READY=1");
	assert_int_equal(barrierd_open(&b, H.state), 0);
	size_t sz;
	const struct barrierd_header *m = barrierd_mapping(b, &sz);
	assert_true(m->flags & BARRIERD_FLAG_RUNNING);
	assert_int_equal(m->daemon_pid, (uint64_t)H.pid);
	/* The slot server's thread runs (it served this handle): it is checked with the rest. */
	assert_true(barrierd_direct(b));
	check_sandboxed(H.pid);
	/*
	 * The main thread stores the heartbeat: at SCHED_FIFO, so that a machine full of runnable
	 * threads cannot delay it past the liveness bound (docs/LIFECYCLE.md, start-up step 14).
	 */
	assert_int_equal(sched_getscheduler(H.pid), SCHED_FIFO);

	/* 30 s under the sandbox: barriers, doorbell, watchdog and status keep coming. */
	rings_before =
	    (int)((const struct barrierd_ext *)((const char *)m + m->ext_offset))->doorbell_rings;
	end = bd_mono_ns() + 30ULL * 1000000000ULL;
	while (bd_mono_ns() < end) {
		assert_int_equal(barrierd_barrier(b, 5000000000LL), 0);
		barriers++;
		next_msg(msg, sizeof(msg), 20);
		if (strcmp(msg, "WATCHDOG=1") == 0)
			watchdogs++;
		else if (strncmp(msg, "STATUS=", 7) == 0)
			statuses++;
	}
	/* drain what is queued */
	for (next_msg(msg, sizeof(msg), 0); msg[0]; next_msg(msg, sizeof(msg), 0)) {
		if (strcmp(msg, "WATCHDOG=1") == 0)
			watchdogs++;
		else if (strncmp(msg, "STATUS=", 7) == 0)
			statuses++;
	}
	printf(
	    "30 s sandboxed: %d barriers, %d WATCHDOG=1, %d STATUS=, %d doorbell rings\n", barriers,
	    watchdogs, statuses,
	    (int)((const struct barrierd_ext *)((const char *)m + m->ext_offset))->doorbell_rings -
		rings_before);
	assert_true(watchdogs >= 40); /* every 0.5 s */
	assert_true(statuses >= 20);  /* every second */
	assert_true(
	    ((const struct barrierd_ext *)((const char *)m + m->ext_offset))->doorbell_rings >
	    (uint64_t)rings_before);
	check_sandboxed(H.pid);

	/* STOPPING=1 on SIGTERM, then a clean exit. */
	kill(H.pid, SIGTERM);
	for (int i = 0; i < 100; i++) {
		next_msg(msg, sizeof(msg), 100);
		if (strcmp(msg, "STOPPING=1") == 0)
			break;
	}
	assert_string_equal(msg, "STOPPING=1");
	int st = test_reap(H.pid, 10);
	H.pid = -1;
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	barrierd_close(b);
}

int main(void)
{
	test_require_root();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(readiness_watchdog_sandbox, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
