// SPDX-License-Identifier: MIT
/*
 * The daemon's life cycle against the real binary: resetting foreign files before anything
 * can fail, vtime across restarts, a second instance, SIGTERM, and bad input.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "harness.h"

/* Run the daemon to completion (it is expected to fail); returns its exit status. */
static int run_expect_exit(const char *const *args)
{
	pid_t pid = h_spawn(&H, -1, args);
	int st = test_reap(pid, 20);

	assert_true(st != -1); /* hang guard */
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* The whole log (the harness reads it from an offset). */
static int log_has(const char *needle)
{
	return h_log_has_since(&H, 0, needle);
}

/* A file of ours from another boot, or of the original daemon, holding far-future values. */
static void write_stale_file(int with_magic)
{
	long ncpu = (long)test_possible_cpus();
	size_t size = barrierd_file_size((uint64_t)ncpu);
	uint8_t *buf = calloc(1, size);
	struct barrierd_header *h = (void *)buf;
	int fd;

	h->ncpu = (uint64_t)ncpu;
	h->vtime = 1ULL << 50;
	h->last_interrupt_ns = 1ULL << 62;
	h->last_interrupt_vtime = 1ULL << 50;
	for (long c = 0; c < ncpu; c++) {
		h->per_cpu[c].last_interrupt_ns = (1ULL << 62) + (uint64_t)c;
		h->per_cpu[c].last_interrupt_vtime = 1ULL << 50;
	}
	if (with_magic) {
		h->magic = BARRIERD_MAGIC;
		h->abi_major = 1;
		h->header_size = 128;
		h->cpu_stride = 16;
		h->flags = BARRIERD_FLAG_RUNNING;
		h->heartbeat_ns = 1ULL << 62;
		memset(h->boot_id, 0xab, 16); /* not this boot */
		h->ext_offset = barrierd_ext_offset((uint64_t)ncpu);
	}
	fd = open(H.state, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, with_magic ? size : 128 + 16 * (size_t)ncpu),
			 (ssize_t)(with_magic ? size : 128 + 16 * (size_t)ncpu));
	close(fd);
	free(buf);
}

static void assert_zeroed_and_stopped(void)
{
	size_t sz = 0;
	const struct barrierd_header *m = map_ro(H.state, &sz);

	assert_non_null(m);
	assert_true(bd_load(&m->flags) & BARRIERD_FLAG_STOPPED);
	assert_false(bd_load(&m->flags) & BARRIERD_FLAG_RUNNING);
	/* vtime is not a time: it is raised above every old vtime word, never zeroed */
	assert_int_equal(bd_load(&m->vtime), (1ULL << 50) + 1);
	assert_int_equal(bd_load(&m->ncpu), test_possible_cpus());
	assert_int_equal(bd_load(&m->last_interrupt_ns), 0);
	assert_int_equal(bd_load(&m->last_interrupt_vtime), 0);
	assert_true(bd_load(&m->heartbeat_ns) <=
		    bd_mono_ns()); /* the failed daemon's last sign of life */
	for (uint64_t c = 0; c < m->ncpu; c++) {
		assert_int_equal(bd_load(&m->per_cpu[c].last_interrupt_ns), 0);
		assert_int_equal(bd_load(&m->per_cpu[c].last_interrupt_vtime), 0);
	}
	munmap((void *)m, sz);
}

static void foreign_boot_reset_even_if_load_fails(void **state)
{
	const char *args[] = {"--state", H.state, "-t", "irq/no_such_tracepoint", NULL};

	(void)state;
	write_stale_file(1);
	assert_int_not_equal(run_expect_exit(args), 0);
	assert_true(log_has("another boot"));
	assert_true(log_has("unknown tracepoint"));
	assert_zeroed_and_stopped();
}

static void original_daemon_file_reset(void **state)
{
	const char *args[] = {"--state", H.state, "-t", "irq/no_such_tracepoint", NULL};

	(void)state;
	write_stale_file(0);
	assert_int_not_equal(run_expect_exit(args), 0);
	assert_true(log_has("no barrierd magic"));
	assert_zeroed_and_stopped();
}

/*
 * vtime across a restart: a stamp taken before it is passed only with evidence, and the new
 * daemon resumes vtime above everything published, so a stamp taken after the restart cannot
 * be passed by values the old daemon left.  The handles here (and in the other stop and restart
 * cases) wait on the file alone: the slots would pass the ns barriers without the daemon
 * publishing what the cases then look at.
 */
static void restart_vtime(void **state)
{
	const struct barrierd_header *m;
	struct barrierd *b;
	uint64_t v1, v2, gen1, maxold = 0;
	size_t sz = 0;

	(void)state;
	assert_int_equal(h_start(&H, -1, NULL), 0);
	assert_int_equal(test_open_file_only(&b, H.state, NULL), 0);
	m = map_ro(H.state, &sz);
	for (int i = 0; i < 50; i++) /* let the old daemon publish plenty of vtime */
		assert_int_equal(barrierd_barrier(b, 5000000000LL), 0);
	gen1 = bd_load(&m->generation);
	v1 = barrierd_stamp_vtime(b);
	assert_int_equal(h_stop(&H) & 0xff00, 0);
	for (uint64_t c = 0; c < m->ncpu; c++) {
		uint64_t v = bd_load(&m->per_cpu[c].last_interrupt_vtime);
		maxold = v > maxold ? v : maxold;
	}
	assert_int_equal(h_start(&H, -1, NULL), 0);
	assert_int_equal(bd_load(&m->generation), gen1 + 1);

	/* With the new daemon frozen, nothing new is published: a fresh stamp must not pass. */
	kill(H.pid, SIGSTOP);
	v2 = barrierd_stamp_vtime(b);
	assert_true(v2 > maxold);
	assert_false(barrierd_passed_vtime(b, v2));
	kill(H.pid, SIGCONT);

	/* The stamp from before the restart passes, through new evidence. */
	assert_int_equal(barrierd_wait_vtime(b, v1, 5000000000LL), 0);
	assert_int_equal(barrierd_wait_vtime(b, v2, 5000000000LL), 0);
	for (uint64_t c = 0; c < m->ncpu; c++)
		assert_true(bd_load(&m->per_cpu[c].last_interrupt_vtime) > v2);
	/* and the handle opened before the restart serves ns barriers too */
	assert_int_equal(barrierd_barrier(b, 5000000000LL), 0);
	barrierd_close(b);
	munmap((void *)m, sz);
}

static void second_instance_fails(void **state)
{
	const char *args[] = {"--state", H.state, NULL};
	size_t sz = 0;
	const struct barrierd_header *m;

	(void)state;
	assert_int_equal(h_start(&H, -1, NULL), 0);
	assert_int_not_equal(run_expect_exit(args), 0);
	assert_true(log_has("another barrierd already serves"));
	m = map_ro(H.state, &sz);
	assert_int_equal(bd_load(&m->daemon_pid), (uint64_t)H.pid);
	assert_true(bd_load(&m->flags) & BARRIERD_FLAG_RUNNING);
	munmap((void *)m, sz);
}

static void sigterm_leaves_valid_file(void **state)
{
	struct barrierd *b;
	const struct barrierd_header *m;
	size_t sz = 0;
	uint64_t g;
	int st;

	(void)state;
	assert_int_equal(h_start(&H, -1, NULL), 0);
	assert_int_equal(test_open_file_only(&b, H.state, NULL), 0);
	assert_int_equal(barrierd_barrier(b, 5000000000LL), 0);
	st = h_stop(&H);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	m = map_ro(H.state, &sz);
	assert_int_equal(bd_load(&m->magic), BARRIERD_MAGIC);
	assert_true(bd_load(&m->flags) & BARRIERD_FLAG_STOPPED);
	g = bd_load(&m->last_interrupt_ns);
	assert_true(g > 0); /* values stay: they are true */
	assert_true(log_has("stopping"));
	/* still a valid file; a wait now reports the daemon gone instead of hanging */
	barrierd_close(b);
	assert_int_equal(barrierd_open(&b, H.state), 0);
	assert_int_equal(barrierd_barrier(b, 5000000000LL), -ESTALE);
	barrierd_close(b);
	munmap((void *)m, sz);
}

/*
 * A writer that takes the file over once our daemon stopped (the original barrierd, whose
 * lock is the same file) is no evidence: readers cap values at the stop snapshot, and our
 * next daemon resets what it finds changed.
 */
static void takeover_after_stop_not_trusted(void **state)
{
	struct barrierd *b;
	uint64_t t, *w;
	size_t sz;

	(void)state;
	assert_int_equal(h_start(&H, -1, NULL), 0);
	assert_int_equal(test_open_file_only(&b, H.state, NULL), 0);
	assert_int_equal(barrierd_barrier(b, 5000000000LL), 0);
	assert_int_equal(WEXITSTATUS(h_stop(&H)), 0);
	t = barrierd_stamp_ns(b);
	/* the impostor: every time word raised past t */
	struct barrierd_header *m = test_map_rw(H.state, &sz);
	assert_non_null(m);
	w = &m->last_interrupt_ns;
	bd_store(w, t + 1);
	for (uint64_t c = 0; c < m->ncpu; c++)
		bd_store(&m->per_cpu[c].last_interrupt_ns, t + 1);
	assert_false(barrierd_passed(b, t));
	cpu_set_t all;
	CPU_ZERO(&all);
	for (uint64_t c = 0; c < m->ncpu; c++)
		CPU_SET(c, &all);
	assert_int_equal(barrierd_wait_cpus(b, t, &all, sizeof(all), 100000000LL), -ESTALE);

	/* our next daemon does not adopt those values */
	assert_int_equal(h_start(&H, -1, NULL), 0);
	/* Another writer's doing, with a warning. */
	assert_true(log_has("<4>barrierd: resetting"));
	assert_true(log_has("changed after its daemon stopped"));
	assert_int_equal(barrierd_barrier(b, 5000000000LL), 0);
	munmap(m, sz);
	barrierd_close(b);
}

static void bad_input(void **state)
{
	char link[400], path[400];
	(void)state;

	{
		const char *a[] = {"--state", H.state, "-t", "nmi/nmi_handler", NULL};
		assert_int_not_equal(run_expect_exit(a), 0);
		assert_true(log_has("NMI"));
	}
	{
		const char *a[] = {"--bogus", NULL};
		assert_int_equal(run_expect_exit(a), 64);
		assert_true(log_has("unknown option"));
	}
	{
		const char *a[] = {H.state, "99999999", NULL};
		assert_int_not_equal(run_expect_exit(a), 0);
		assert_true(log_has("unknown tracepoint id 99999999"));
	}
	{
		const char *a[] = {"--state", "/proc/barrierd-test/state", NULL};
		assert_int_not_equal(run_expect_exit(a), 0);
		assert_true(log_has("/proc/barrierd-test"));
	}
	{
		snprintf(link, sizeof(link), "%s/link", H.dir);
		snprintf(path, sizeof(path), "%s/elsewhere", H.dir);
		assert_int_equal(symlink(path, link), 0);
		const char *a[] = {"--state", link, NULL};
		assert_int_not_equal(run_expect_exit(a), 0);
		assert_true(log_has("symlink"));
		assert_int_not_equal(access(path, F_OK), 0); /* nothing created through it */
	}
}

/*
 * Rule 6: programs detached behind the daemon's back (a bug, bpftool) would freeze the idle
 * words; the daemon must notice before crediting, set the stopped flag and exit non-zero.
 */
static void detached_programs_detected(void **state)
{
	const char *argv[] = {BARRIERD_TESTHOOKS_BIN, "--state", H.state, NULL};
	struct barrierd *b;
	size_t sz = 0;
	int st = -1;

	(void)state;
	/* The test-only daemon build: SIGUSR2 destroys its sched_switch link. */
	H.pid = fork();
	if (H.pid == 0) {
		int fd = open(H.log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		dup2(fd, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	assert_int_equal(h_wait_running(&H, H.pid), 0);
	assert_int_equal(test_open_file_only(&b, H.state, NULL), 0);
	assert_int_equal(barrierd_barrier(b, 5000000000LL), 0); /* credit passes work */
	kill(H.pid, SIGUSR2);
	for (int i = 0; i < 500; i++) { /* hang guard: 5 s */
		int status;

		barrierd_request(b); /* credit passes run the check */
		if (waitpid(H.pid, &status, WNOHANG) == H.pid) {
			st = status;
			H.pid = -1;
			break;
		}
		test_sleep_ms(10);
	}
	barrierd_close(b);
	assert_true(st != -1);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	assert_true(log_has("the programs were detached"));
	const struct barrierd_header *m = map_ro(H.state, &sz);
	assert_true(bd_load(&m->flags) & BARRIERD_FLAG_STOPPED);
	munmap((void *)m, sz);
}

/* Without privilege, one clear line: no BPF permission. */
static void no_bpf_permission(void **state)
{
	char dir[400];

	(void)state;
	snprintf(dir, sizeof(dir), "%s/nobody", H.dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(chown(dir, 65534, 65534), 0);
	assert_int_not_equal(test_system("setpriv --reuid=65534 --regid=65534 --clear-groups "
					 "--inh-caps=-all %s --state %s/state 2>%s",
					 BARRIERD_BIN, dir, H.log),
			     0);
	assert_true(log_has("cannot load the BPF programs"));
}

int main(void)
{
	test_require_root();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(foreign_boot_reset_even_if_load_fails, h_setup,
					    h_teardown),
	    cmocka_unit_test_setup_teardown(original_daemon_file_reset, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(restart_vtime, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(second_instance_fails, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(sigterm_leaves_valid_file, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(takeover_after_stop_not_trusted, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(bad_input, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(detached_programs_detected, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(no_bpf_permission, h_setup, h_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
