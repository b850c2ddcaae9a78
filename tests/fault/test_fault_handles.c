// SPDX-License-Identifier: MIT
/*
 * Handles that outlive daemons: one handle open across many daemon restarts (SIGTERM and
 * SIGKILL alternating) keeps crediting from the slots of each new daemon, and lets go of the
 * old ones: once it has been called after a restart it holds the new daemon's sched_switch
 * link alone, and the links of every earlier daemon are gone from the kernel (no old program
 * left attached).  Links are told apart by id, so the daemons other tests on the machine run
 * do not enter the counts.  A handle closed with every descriptor number in use still closes
 * its map and link.  Times are hang guards only.
 *
 * Usage: test_fault_handles [--restarts N] (default 6; the fault-long label runs 20).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "fault_util.h"
#include "looper.h"

#include <dirent.h>
#include <sys/resource.h>
#include <linux/bpf.h>

#define MAX_LINKS 256
#define GUARD_S 10

static int g_restarts = 6;

/* The sched_switch links a process holds (0: this one), from its fdinfo; their ids in ids[]. */
static int held_links(pid_t pid, uint64_t *ids, int max)
{
	char dir[64], path[600], text[1024];
	struct dirent *e;
	int n = 0;
	DIR *d;

	if (pid)
		snprintf(dir, sizeof(dir), "/proc/%d/fdinfo", (int)pid);
	else
		snprintf(dir, sizeof(dir), "/proc/self/fdinfo");
	d = opendir(dir);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		ssize_t len;
		const char *id;
		int f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		f = open(path, O_RDONLY | O_CLOEXEC);
		if (f < 0)
			continue;
		len = read(f, text, sizeof(text) - 1);
		close(f);
		if (len <= 0)
			continue;
		text[len] = 0;
		if (!strstr(text, "link_type:\traw_tracepoint\n") ||
		    !strstr(text, "tp_name:\tsched_switch\n") || !(id = strstr(text, "link_id:\t")))
			continue;
		if (ids && n < max)
			ids[n] = strtoull(id + strlen("link_id:\t"), NULL, 10);
		n++;
	}
	closedir(d);
	return n;
}

/* Does the kernel still have link id (root: BPF_LINK_GET_FD_BY_ID)? */
static bool link_alive(uint64_t id)
{
	union bpf_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.link_id = (uint32_t)id;
	fd = (int)syscall(__NR_bpf, BPF_LINK_GET_FD_BY_ID, &a, sizeof(a));
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* Every raw tracepoint link on sched_switch in the machine (informational: others' too). */
static int machine_links(void)
{
	union bpf_attr a;
	uint32_t id = 0;
	int n = 0;

	for (;;) {
		struct bpf_link_info info;
		char name[64] = "";
		int fd;

		memset(&a, 0, sizeof(a));
		a.start_id = id;
		if (syscall(__NR_bpf, BPF_LINK_GET_NEXT_ID, &a, sizeof(a)))
			return n;
		id = a.next_id;
		memset(&a, 0, sizeof(a));
		a.link_id = id;
		fd = (int)syscall(__NR_bpf, BPF_LINK_GET_FD_BY_ID, &a, sizeof(a));
		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		info.raw_tracepoint.tp_name = (uint64_t)(uintptr_t)name;
		info.raw_tracepoint.tp_name_len = sizeof(name);
		memset(&a, 0, sizeof(a));
		a.info.bpf_fd = (uint32_t)fd;
		a.info.info_len = sizeof(info);
		a.info.info = (uint64_t)(uintptr_t)&info;
		if (!syscall(__NR_bpf, BPF_OBJ_GET_INFO_BY_FD, &a, sizeof(a)) &&
		    info.type == BPF_LINK_TYPE_RAW_TRACEPOINT && !strcmp(name, "sched_switch"))
			n++;
		close(fd);
	}
}

/* Every link id any of our daemons held, and how many of those the kernel still has. */
static uint64_t all_ids[MAX_LINKS];
static int nall;

static int record_daemon_links(pid_t pid)
{
	uint64_t ids[16];
	int n = held_links(pid, ids, 16);

	for (int i = 0; i < n && i < 16 && nall < MAX_LINKS; i++)
		all_ids[nall++] = ids[i];
	return n;
}

static int alive_of_ours(void)
{
	int n = 0;

	for (int i = 0; i < nall; i++)
		n += link_alive(all_ids[i]);
	return n;
}

struct credits {
	atomic_int on;
	atomic_uint n; /* direct credits while on */
};

static void count_credit(void *arg, uint64_t T, unsigned cpu, int kind, uint64_t value)
{
	struct credits *c = arg;

	(void)T, (void)cpu, (void)kind, (void)value;
	if (atomic_load(&c->on))
		atomic_fetch_add(&c->n, 1);
}

/* Open a handle and wait (hang guard) until it credits from the daemon's slots. */
static struct barrierd *open_direct(void)
{
	struct barrierd *b;

	assert_int_equal(barrierd_open(&b, H.state), 0);
	for (int i = 0; i < 100 && !barrierd_direct(b); i++) {
		assert_int_equal(barrierd_barrier(b, 5 * (int64_t)TEST_SEC), 0);
		test_sleep_ms(20);
	}
	if (!barrierd_direct(b))
		fail_msg("the handle does not credit from the daemon's slots");
	return b;
}

/* SIGTERM (even i) or SIGKILL (odd i) the daemon, reap it, start a new one. */
static void restart(int i)
{
	int st;

	if (i % 2 == 0) {
		st = h_stop(&H);
		assert_true(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	} else {
		assert_int_equal(kill(H.pid, SIGKILL), 0);
		st = test_reap(H.pid, 10);
		H.pid = -1;
		assert_true(st != -1 && WIFSIGNALED(st));
	}
	assert_int_equal(h_start(&H, -1, NULL), 0);
}

/*
 * Calls alone (the library has no thread) bring the handle back to the direct path and drop
 * the old daemon's set: hang guard only.  0, or -1; *held: the sched_switch links the handle
 * holds at the end.
 */
static int back_on_direct(struct barrierd *b, int *held)
{
	for (int i = 0; i < GUARD_S * 50; i++) {
		int ret = barrierd_barrier(b, (int64_t)TEST_SEC);

		assert_true(ret == 0 || ret == -ESTALE || ret == -ETIMEDOUT);
		*held = held_links(0, NULL, 0);
		if (barrierd_direct(b) && *held == 1)
			return 0;
		test_sleep_ms(20);
	}
	return -1;
}

/*
 * g_restarts restarts, SIGTERM and SIGKILL alternating, under one handle that 4 threads keep
 * calling barrierd_barrier() on (so that sets are retired while other threads read them).
 * After each restart the handle credits from the new daemon's slots and holds its link alone;
 * at the end the main thread's barriers are credited from the slots (the observer), and of
 * every sched_switch link our daemons ever had, only the live daemon's are left.
 */
static void restarts_under_handle(void **state)
{
	struct credits cr = {0};
	struct lthread sum;
	struct looper l;
	struct barrierd *b;
	int per_daemon, alive = -1, late = 0;

	(void)state;
	per_daemon = record_daemon_links(H.pid);
	assert_true(per_daemon >= 1);
	b = open_direct();
	assert_int_equal(barrierd_set_credit_observer(b, count_credit, &cr), 0);
	assert_int_equal(looper_start(&l, b, 4, (int64_t)TEST_SEC), 0);
	for (int i = 0; i < g_restarts; i++) {
		int held;

		restart(i);
		assert_int_equal(record_daemon_links(H.pid), per_daemon);
		if (back_on_direct(b, &held)) {
			fprintf(stderr,
				"restart %d (%s): direct %d, sched_switch links held by the handle "
				"%d\n",
				i + 1, i % 2 ? "SIGKILL" : "SIGTERM", barrierd_direct(b), held);
			late++;
		}
	}
	assert_int_equal(looper_stop(&l, GUARD_S), 0);
	looper_totals(&l, &sum, "restarts");
	assert_int_equal(sum.other, 0);
	assert_false(sum.oom);
	looper_free(&l);

	/* The idle fast path, after the last restart: barriers credited from the slots. */
	atomic_store(&cr.on, 1);
	for (int i = 0; i < 20; i++)
		assert_int_equal(barrierd_barrier(b, 5 * (int64_t)TEST_SEC), 0);
	atomic_store(&cr.on, 0);

	/* Old daemons' programs: detached once their last link is closed (hang guard). */
	for (int i = 0; i < GUARD_S * 100 && (alive = alive_of_ours()) != per_daemon; i++)
		test_sleep_ms(10);
	printf("%d restarts: %u direct credits in 20 barriers; sched_switch links of our %d "
	       "daemons still in the kernel %d (the live one has %d), held by the handle %d; "
	       "in the whole machine %d\n",
	       g_restarts, atomic_load(&cr.n), g_restarts + 1, alive, per_daemon,
	       held_links(0, NULL, 0), machine_links());
	if (!barrierd_direct(b) || atomic_load(&cr.n) == 0)
		fail_msg("no CPU was credited from the slots after %d restarts", g_restarts);
	if (alive != per_daemon || held_links(0, NULL, 0) != 1)
		fail_msg("%d sched_switch links of our daemons are left (the handle holds %d), the "
			 "live daemon has %d",
			 alive, held_links(0, NULL, 0), per_daemon);
	/* Each restart: the new daemon's slots in use and the old link dropped, by calls. */
	if (late)
		fail_msg("after %d of %d restarts the handle did not come back to the direct path "
			 "holding the new daemon's link alone",
			 late, g_restarts);
	barrierd_close(b);
	assert_int_equal(held_links(0, NULL, 0), 0);
}

/*
 * A handle nobody calls holds its one daemon's set through any number of restarts (it cannot
 * act), and drops it at its first call after a new daemon started: here barrierd_passed(),
 * which fetches nothing, so the handle then holds no link; the next barrier fetches the live
 * daemon's set.
 */
static void idle_handle_drops_at_first_call(void **state)
{
	uint64_t first[16], stamp;
	struct barrierd *b;
	int n;

	(void)state;
	b = open_direct();
	n = held_links(0, first, 16);
	assert_int_equal(n, 1);
	stamp = barrierd_stamp_ns(b);
	restart(0);
	restart(1);
	/* Not called: it still holds the first daemon's link, and only that. */
	assert_int_equal(held_links(0, NULL, 0), 1);
	assert_true(link_alive(first[0]));
	(void)barrierd_passed(b, stamp);
	assert_false(barrierd_direct(b));
	assert_int_equal(held_links(0, NULL, 0), 0);
	for (int i = 0; i < GUARD_S * 100 && link_alive(first[0]); i++)
		test_sleep_ms(10);
	assert_false(link_alive(first[0]));
	assert_int_equal(back_on_direct(b, &n), 0);
	barrierd_close(b);
}

/* ---- close_at_fd_limit ------------------------------------------------------------------ */

/*
 * barrierd_close() at RLIMIT_NOFILE (every descriptor number in use): the handle still closes
 * its slots map and link, which it tells from numbers reused by others without opening a
 * descriptor.
 */
static void close_at_fd_limit(void **state)
{
	struct rlimit old, low;
	struct barrierd *b;
	int fill[256], n = 0;

	(void)state;
	b = open_direct();
	assert_int_equal(held_links(0, NULL, 0), 1);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 256;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	for (int fd; n < 256 && (fd = dup(0)) >= 0;)
		fill[n++] = fd;
	assert_int_equal(errno, EMFILE);
	barrierd_close(b);
	for (int i = 0; i < n; i++)
		close(fill[i]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(held_links(0, NULL, 0), 0);
}

/* ---- fork_with_section_open ------------------------------------------------------------ */

static atomic_int g_block;    /* 1: the observer holds its caller inside the read section */
static atomic_int g_in_block; /* the observer is holding it */

static void block_in_section(void *arg, uint64_t T, unsigned cpu, int kind, uint64_t value)
{
	(void)arg, (void)T, (void)cpu, (void)kind, (void)value;
	if (!atomic_load(&g_block))
		return;
	atomic_store(&g_in_block, 1);
	while (atomic_load(&g_block))
		test_sleep_ms(1);
}

static void *barrier_thread(void *arg)
{
	(void)barrierd_barrier(arg, 5 * (int64_t)TEST_SEC);
	return NULL;
}

/*
 * A child forked while a thread of the parent reads the handle's set (held in the credit
 * observer): that section never ends in the child, yet the child lets the parent's set go
 * (it never uses it) and holds its own alone once called.  Exit codes: the check that failed.
 */
static int child_checks(struct barrierd *b)
{
	atomic_store(&g_block, 0);
	for (int i = 0; i < GUARD_S * 50; i++) {
		int ret = barrierd_barrier(b, (int64_t)TEST_SEC);

		if (ret != 0 && ret != -ETIMEDOUT)
			return 2;
		if (barrierd_direct(b) && held_links(0, NULL, 0) == 1)
			return 0;
		test_sleep_ms(20);
	}
	fprintf(stderr, "child: direct %d, sched_switch links held %d\n", barrierd_direct(b),
		held_links(0, NULL, 0));
	return 3;
}

static void fork_with_section_open(void **state)
{
	struct barrierd *b;
	pthread_t t;
	pid_t pid;
	int st;

	(void)state;
	b = open_direct();
	assert_int_equal(barrierd_set_credit_observer(b, block_in_section, NULL), 0);
	atomic_store(&g_in_block, 0);
	atomic_store(&g_block, 1);
	assert_int_equal(pthread_create(&t, NULL, barrier_thread, b), 0);
	for (int i = 0; i < GUARD_S * 100 && !atomic_load(&g_in_block); i++)
		test_sleep_ms(10);
	if (!atomic_load(&g_in_block)) {
		atomic_store(&g_block, 0);
		pthread_join(t, NULL);
		fail_msg("no barrier was credited from the slots");
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child_checks(b));
	st = test_reap(pid, GUARD_S * 2);
	atomic_store(&g_block, 0);
	pthread_join(t, NULL);
	assert_true(st != -1 && WIFEXITED(st));
	if (WEXITSTATUS(st))
		fail_msg("the child failed check %d", WEXITSTATUS(st));
	/* The parent's own set is untouched: still in use, one link. */
	assert_true(barrierd_direct(b));
	assert_int_equal(held_links(0, NULL, 0), 1);
	barrierd_close(b);
}

static int setup(void **state)
{
	(void)state;
	nall = 0;
	h_mkdir(&H);
	return h_start(&H, -1, NULL);
}

int main(int argc, char **argv)
{
	test_require_root();
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "--restarts"))
			g_restarts = atoi(argv[i + 1]);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(idle_handle_drops_at_first_call, setup, f_teardown),
	    cmocka_unit_test_setup_teardown(restarts_under_handle, setup, f_teardown),
	    cmocka_unit_test_setup_teardown(fork_with_section_open, setup, f_teardown),
	    cmocka_unit_test_setup_teardown(close_at_fd_limit, setup, f_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
