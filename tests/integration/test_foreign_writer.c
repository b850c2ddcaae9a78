// SPDX-License-Identifier: MIT
/*
 * A foreign writer's values never become evidence (DESIGN rule 10), against the real daemon:
 * values raised behind a running daemon's back, values this boot's clock has not reached,
 * vtimes that would wrap, and state paths that someone else can plant or redirect.
 *
 * Every test runs on a private state path in a temporary directory (never /run/barrierd).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "harness.h"

#include <linux/futex.h>

#define NOBODY 65534

/* A read-write shared mapping of the state file: the foreign (root) writer's view. */
static struct barrierd_header *map_rw(const char *path, size_t *size)
{
	struct barrierd_header *m = test_map_rw(path, size);

	assert_non_null(m);
	return m;
}

/* SIGSTOP the daemon and wait until it is stopped. */
static void freeze(pid_t pid)
{
	int status = 0;

	assert_int_equal(kill(pid, SIGSTOP), 0);
	assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
	assert_true(WIFSTOPPED(status));
}

/*
 * The daemon started, a handle opened on its file, then the daemon frozen once past its first
 * pass: it sleeps disarmed, and nobody rings.
 */
static struct barrierd *start_then_freeze(void)
{
	struct barrierd *b;

	assert_int_equal(h_start(&H, -1, NULL), 0);
	assert_int_equal(barrierd_open(&b, H.state), 0);
	test_sleep_ms(150);
	freeze(H.pid);
	return b;
}

/*
 * Wait (hang guard: seconds) for H.pid to exit, ringing the doorbell through b (if not NULL)
 * to hurry its next pass.  Returns the wait status, or -1 if it did not exit (teardown kills
 * it).
 */
static int wait_exit(struct barrierd *b, int seconds)
{
	for (int i = 0; i < seconds * 100; i++) {
		int status;

		if (b)
			barrierd_request(b);
		if (waitpid(H.pid, &status, WNOHANG) == H.pid) {
			H.pid = -1;
			return status;
		}
		test_sleep_ms(10);
	}
	return -1;
}

/*
 * A client of the original layout (original_client.c) waiting for stamp t for up to ms: it
 * reads the raw global word, sleeping on its low half.  Released once that word exceeds t.
 */
static int original_client_released(const struct barrierd_header *m, uint64_t t, int ms)
{
	return h_raw_wait(m, t, false, 10 * TEST_MS, (uint64_t)ms * TEST_MS) == 0;
}

/* What a daemon that detected a foreign writer leaves: every time zeroed, stopped, no snapshot. */
static void assert_reset(const struct barrierd_header *m, uint64_t ncpu)
{
	const struct barrierd_ext *x = test_ext_of(m, ncpu);
	uint64_t f = bd_load(&m->flags);

	assert_true(f & BARRIERD_FLAG_STOPPED);
	assert_false(f & BARRIERD_FLAG_RUNNING);
	assert_int_equal(bd_load(&m->last_interrupt_ns), 0);
	assert_int_equal(bd_load(&m->last_interrupt_vtime), 0);
	for (uint64_t c = 0; c < ncpu; c++) {
		assert_int_equal(bd_load(&m->per_cpu[c].last_interrupt_ns), 0);
		assert_int_equal(bd_load(&m->per_cpu[c].last_interrupt_vtime), 0);
	}
	assert_int_equal(bd_load(&x->stop_ns), 0);
	assert_int_equal(bd_load(&x->stop_vtime), 0);
}

/*
 * After a restart at `since` (a clock reading before the new daemon was spawned), with the new
 * daemon frozen: every time word is either zero or new evidence (at or after `since`), and none
 * holds the foreign writer's value.  raised_vt 0: no vtime word was raised.
 */
static void assert_no_raised_value(const struct barrierd_header *m, uint64_t ncpu,
				   uint64_t raised_ns, uint64_t raised_vt, uint64_t since)
{
	uint64_t g = bd_load(&m->last_interrupt_ns);

	for (uint64_t c = 0; c < ncpu; c++) {
		uint64_t ns = bd_load(&m->per_cpu[c].last_interrupt_ns);
		uint64_t vt = bd_load(&m->per_cpu[c].last_interrupt_vtime);

		if (ns == raised_ns || (ns != 0 && ns < since) || (raised_vt && vt == raised_vt))
			fail_msg("cpu %llu holds %llu / vtime %llu after the restart: the foreign "
				 "value %llu / %llu (restart at %llu) was kept",
				 (unsigned long long)c, (unsigned long long)ns,
				 (unsigned long long)vt, (unsigned long long)raised_ns,
				 (unsigned long long)raised_vt, (unsigned long long)since);
	}
	assert_true(g != raised_ns && (g == 0 || g >= since));
	if (raised_vt)
		assert_true(bd_load(&m->last_interrupt_vtime) != raised_vt);
}

/*
 * What does a daemon start keep of the file as it is now?  Start one on a copy of it that
 * fails right after the state file was judged (an unknown tracepoint is refused after the file
 * is opened and reset: docs/LIFECYCLE.md, start-up): nothing new is published, so the copy
 * shows exactly what the start adopted.  Returns how many per-CPU ns words of the copy still
 * hold `raised`.
 */
static int next_start_keeps(uint64_t ncpu, uint64_t raised)
{
	char probe[400];
	const char *args[] = {"--state", probe, "-t", "irq/no_such_tracepoint", NULL};
	const struct barrierd_header *m;
	size_t sz = 0;
	int st, n = 0;

	snprintf(probe, sizeof(probe), "%s/probe", H.dir);
	assert_int_equal(test_system("cp '%s' '%s'", H.state, probe), 0);
	st = test_reap(h_spawn(&H, -1, args), 20);
	assert_true(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) != 0);
	m = map_ro(probe, &sz);
	assert_non_null(m);
	for (uint64_t c = 0; c < ncpu; c++)
		n += bd_load(&m->per_cpu[c].last_interrupt_ns) == raised;
	munmap((void *)m, sz);
	return n;
}

/*
 * 1. A root process raises every time word behind a running daemon's back.  The daemon must
 * notice at its next pass (or heartbeat), stop, and leave the file reset: no client of ours and
 * no client of the original layout may be released by those values, and the next daemon does
 * not adopt them.
 */
static void foreign_write_not_evidence(void **state)
{
	uint64_t ncpu = test_possible_cpus(), t, v, since;
	struct barrierd_header *w;
	struct barrierd *b;
	size_t wsz;
	long mark;
	int st;

	(void)state;
	b = start_then_freeze();

	/* The foreign writer: every per-CPU word and both globals just past the stamps. */
	t = barrierd_stamp_ns(b);
	v = barrierd_stamp_vtime(b);
	w = map_rw(H.state, &wsz);
	assert_int_equal(bd_load(&w->ncpu), ncpu);
	for (uint64_t c = 0; c < ncpu; c++) {
		bd_store(&w->per_cpu[c].last_interrupt_ns, t + 1000);
		bd_store(&w->per_cpu[c].last_interrupt_vtime, v + 1000);
	}
	bd_store(&w->last_interrupt_ns, t + 1000);
	bd_store(&w->last_interrupt_vtime, v + 1000);

	mark = h_log_mark(&H);
	assert_int_equal(kill(H.pid, SIGCONT), 0);
	st = wait_exit(b, 10);
	assert_true(st != -1); /* detected (hang guard) */
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	assert_true(h_log_has_since(&H, mark, "did not write"));

	/* Right after the detection: nothing passes through the foreign values. */
	assert_false(barrierd_passed(b, t));
	assert_false(barrierd_passed_vtime(b, v));
	assert_true(bd_load(&w->last_interrupt_ns) <= t);
	assert_true(bd_load(&w->last_interrupt_vtime) <= v);
	assert_false(original_client_released(w, t, 200));
	assert_int_not_equal(barrierd_wait(b, t, 200 * TEST_MS), 0);
	assert_int_not_equal(barrierd_wait_vtime(b, v, 200 * TEST_MS), 0);
	assert_reset(w, ncpu);
	/* ... and later */
	test_sleep_ms(400);
	assert_false(barrierd_passed(b, t));
	assert_false(barrierd_passed_vtime(b, v));
	assert_false(original_client_released(w, t, 50));

	/* The next daemon resets the file before it publishes anything. */
	mark = h_log_mark(&H);
	since = bd_mono_ns();
	assert_int_equal(h_start(&H, -1, NULL), 0);
	freeze(H.pid); /* what it published so far, held still */
	assert_true(h_log_has_since(&H, mark, "resetting"));
	assert_no_raised_value(w, ncpu, t + 1000, v + 1000, since);
	/* the handle opened before the restart passes t, if at all, only through new evidence */
	if (barrierd_passed(b, t))
		assert_true(bd_load(&w->last_interrupt_ns) >= since);
	assert_int_equal(kill(H.pid, SIGCONT), 0);

	barrierd_close(b);
	munmap(w, wsz);
}

/*
 * 2. The foreign writer raises only per-CPU words, to values between the daemon's last
 * heartbeat and now, and leaves the globals alone: once the daemon has refreshed its heartbeat
 * they look like values it published.  The daemon detects them at its next heartbeat's
 * per-CPU check; the next start must not adopt them.
 */
static void foreign_percpu_only_not_adopted(void **state)
{
	uint64_t ncpu = test_possible_cpus(), t, lo, raised, since;
	struct barrierd_header *w;
	struct barrierd *b;
	size_t wsz;
	long mark;
	int st;

	(void)state;
	b = start_then_freeze();

	w = map_rw(H.state, &wsz);
	lo = bd_load(&w->heartbeat_ns);
	for (uint64_t c = 0; c < ncpu; c++) {
		uint64_t ns = bd_load(&w->per_cpu[c].last_interrupt_ns);

		lo = ns > lo ? ns : lo;
	}
	t = barrierd_stamp_ns(b);
	assert_true(t > lo + 2);
	raised = lo + (t - lo) / 2; /* above the heartbeat and every value published, below t */
	for (uint64_t c = 0; c < ncpu; c++)
		bd_store(&w->per_cpu[c].last_interrupt_ns, raised);

	mark = h_log_mark(&H);
	assert_int_equal(kill(H.pid, SIGCONT), 0);
	st = wait_exit(NULL, 10); /* no ring: the heartbeat's per-CPU check finds them */
	assert_true(st != -1);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	assert_true(h_log_has_since(&H, mark, "did not write"));

	/* What the next start would keep of the file as the daemon left it: none of them. */
	assert_int_equal(next_start_keeps(ncpu, raised), 0);
	/* The file itself holds none of them either. */
	for (uint64_t c = 0; c < ncpu; c++)
		assert_true(bd_load(&w->per_cpu[c].last_interrupt_ns) != raised);
	assert_true(bd_load(&w->flags) & BARRIERD_FLAG_STOPPED);

	/* The real restart resets the file before it publishes anything. */
	mark = h_log_mark(&H);
	since = bd_mono_ns();
	assert_int_equal(h_start(&H, -1, NULL), 0);
	freeze(H.pid);
	assert_true(h_log_has_since(&H, mark, "resetting"));
	assert_no_raised_value(w, ncpu, raised, 0, since);
	assert_int_equal(kill(H.pid, SIGCONT), 0);

	barrierd_close(b);
	munmap(w, wsz);
}

/* Run the daemon, let it publish, and stop it with SIGTERM: a valid stopped file of this boot. */
static void make_stopped_file(void)
{
	struct barrierd *b;
	int st;

	assert_int_equal(h_start(&H, -1, NULL), 0);
	assert_int_equal(barrierd_open(&b, H.state), 0);
	assert_int_equal(barrierd_barrier(b, 5000 * TEST_MS), 0);
	barrierd_close(b);
	st = h_stop(&H);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* Read the whole file into memory; write it back (the same inode, O_TRUNC). */
static uint8_t *slurp(size_t *size)
{
	struct stat st;
	uint8_t *buf;
	int fd = open(H.state, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = calloc(1, (size_t)st.st_size);
	assert_non_null(buf);
	assert_int_equal(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	*size = (size_t)st.st_size;
	return buf;
}

static void spit(const uint8_t *buf, size_t size)
{
	int fd = open(H.state, O_WRONLY | O_TRUNC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, size), (ssize_t)size);
	close(fd);
}

/*
 * 3. A stopped file of this boot whose times are an hour ahead of the clock, internally
 * consistent (per-CPU <= heartbeat, globals the minimum and equal to the stop snapshot): no
 * daemon of ours wrote it, and the next start must not publish those times.
 */
static void future_values_reset(void **state)
{
	uint64_t ncpu = test_possible_cpus(), fut, now, maxc = 0, g, hb;
	const struct barrierd_header *m;
	struct barrierd_header *h;
	struct barrierd_ext *x;
	struct barrierd *b;
	uint8_t *buf;
	size_t size, sz = 0;
	long mark;

	(void)state;
	make_stopped_file();
	buf = slurp(&size);
	h = (struct barrierd_header *)buf;
	x = test_ext_of(h, ncpu);
	assert_int_equal(h->magic, BARRIERD_MAGIC);
	assert_true(h->flags & BARRIERD_FLAG_STOPPED);
	assert_int_equal(h->last_interrupt_vtime, x->stop_vtime); /* as the stop left it */
	fut = bd_mono_ns() + 3600ULL * 1000000000ULL;
	h->heartbeat_ns = fut;
	for (uint64_t c = 0; c < ncpu; c++)
		h->per_cpu[c].last_interrupt_ns = fut - c;
	h->last_interrupt_ns = fut - (ncpu - 1);
	x->stop_ns = h->last_interrupt_ns;
	spit(buf, size);
	free(buf);

	mark = h_log_mark(&H);
	assert_int_equal(h_start(&H, -1, NULL), 0);
	m = map_ro(H.state, &sz);
	assert_non_null(m);
	for (uint64_t c = 0; c < ncpu; c++) {
		uint64_t ns = bd_load(&m->per_cpu[c].last_interrupt_ns);

		maxc = ns > maxc ? ns : maxc;
	}
	g = bd_load(&m->last_interrupt_ns);
	hb = bd_load(&m->heartbeat_ns);
	now = bd_mono_ns(); /* after the loads: nothing the daemon published can be later */
	if (maxc > now || g > now || hb > now)
		fail_msg("published times later than the clock (%llu): cpu max %llu, global %llu, "
			 "heartbeat %llu",
			 (unsigned long long)now, (unsigned long long)maxc, (unsigned long long)g,
			 (unsigned long long)hb);
	assert_true(h_log_has_since(&H, mark, "resetting"));
	assert_true(h_log_has_since(&H, mark, "later than"));
	/* and a client accepts the file again */
	assert_int_equal(barrierd_open(&b, H.state), 0);
	assert_int_equal(barrierd_barrier(b, 5000 * TEST_MS), 0);
	barrierd_close(b);
	munmap((void *)m, sz);
}

/*
 * 4. A stopped file of this boot with every vtime word at 2^64-1: adopting it would make the
 * daemon's vtime wrap to 0, below every word in the file, and every vtime stamp would pass at
 * once.  The next start must reset it.
 */
static void wrapped_vtime_reset(void **state)
{
	uint64_t ncpu = test_possible_cpus(), v;
	const struct barrierd_header *m;
	struct barrierd_header *h;
	struct barrierd *b;
	uint8_t *buf;
	size_t size, sz = 0;
	long mark;
	int st;

	(void)state;
	make_stopped_file();
	buf = slurp(&size);
	h = (struct barrierd_header *)buf;
	h->vtime = UINT64_MAX;
	h->last_interrupt_vtime = UINT64_MAX;
	for (uint64_t c = 0; c < ncpu; c++)
		h->per_cpu[c].last_interrupt_vtime = UINT64_MAX;
	test_ext_of(h, ncpu)->stop_vtime = UINT64_MAX;
	spit(buf, size);
	free(buf);

	mark = h_log_mark(&H);
	assert_int_equal(h_start(&H, -1, NULL), 0);
	assert_true(h_log_has_since(&H, mark, "resetting"));
	m = map_ro(H.state, &sz);
	assert_non_null(m);
	/* No per-CPU vtime above the published vtime (each read before the vtime, which grows). */
	for (uint64_t c = 0; c < ncpu; c++) {
		uint64_t pv = bd_load(&m->per_cpu[c].last_interrupt_vtime);

		assert_true(pv <= bd_load(&m->vtime));
	}
	assert_int_equal(barrierd_open(&b, H.state), 0);
	st = h_stop(&H);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);

	/* Stopped: a fresh vtime stamp must not pass. */
	v = barrierd_stamp_vtime(b);
	assert_false(barrierd_passed_vtime(b, v));
	assert_int_not_equal(barrierd_wait_vtime(b, v, 200 * TEST_MS), 0);
	barrierd_close(b);
	munmap((void *)m, sz);
}

/*
 * 5. A stopped file whose ext_offset is 0 or 8: the reset's first stores (the stop snapshot,
 * trust off) must not follow it into the header, where they would zero the flags and the
 * generation.  The generation never goes back: the start publishes the old one plus one.
 */
static void foreign_ext_offset_not_followed(void **state)
{
	static const uint64_t xos[] = {0, 8};
	const struct barrierd_header *m;
	uint64_t gen;
	uint8_t *buf;
	size_t size, sz = 0;
	int st;

	(void)state;
	make_stopped_file();
	for (size_t i = 0; i < sizeof(xos) / sizeof(xos[0]); i++) {
		buf = slurp(&size);
		((struct barrierd_header *)buf)->ext_offset = xos[i];
		gen = ((struct barrierd_header *)buf)->generation + 1000;
		((struct barrierd_header *)buf)->generation = gen;
		spit(buf, size);
		free(buf);
		assert_int_equal(h_start(&H, -1, NULL), 0);
		m = map_ro(H.state, &sz);
		assert_non_null(m);
		if (bd_load(&m->generation) != gen + 1)
			fail_msg("ext_offset %llu: generation %llu after the start, expected %llu",
				 (unsigned long long)xos[i],
				 (unsigned long long)bd_load(&m->generation),
				 (unsigned long long)gen + 1);
		munmap((void *)m, sz);
		st = h_stop(&H);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
}

struct file_snap {
	uint8_t data[8192];
	ssize_t len;
	mode_t mode;
	uid_t uid;
	nlink_t nlink;
};

static void snap(const char *path, struct file_snap *s)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_NOFOLLOW);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	s->len = read(fd, s->data, sizeof(s->data));
	close(fd);
	s->mode = st.st_mode;
	s->uid = st.st_uid;
	s->nlink = st.st_nlink;
}

static void assert_unchanged(const char *path, const struct file_snap *before)
{
	struct file_snap now;
	int same_data;

	snap(path, &now);
	same_data = now.len == before->len && memcmp(now.data, before->data, (size_t)now.len) == 0;
	if (now.mode != before->mode || now.uid != before->uid || now.nlink != before->nlink ||
	    !same_data)
		fail_msg(
		    "%s changed: mode %04o -> %04o, uid %u -> %u, links %lu -> %lu, %zd -> %zd "
		    "bytes%s",
		    path, (unsigned)(before->mode & 07777), (unsigned)(now.mode & 07777),
		    (unsigned)before->uid, (unsigned)now.uid, (unsigned long)before->nlink,
		    (unsigned long)now.nlink, before->len, now.len,
		    same_data ? "" : ", content differs");
}

static void create_file(const char *path, mode_t mode, uid_t uid, const char *fill)
{
	char buf[4096];
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);

	assert_true(fd >= 0);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = fill[i % strlen(fill)];
	assert_int_equal(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	assert_int_equal(fchown(fd, uid, uid), 0);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

/*
 * Start the daemon on path and wait (hang guard: 10 s) until it exits or serves the file; one
 * that serves is stopped with SIGTERM.  1: it served; 0: it exited (*status: its exit code).
 */
static int run_on(const char *path, int *status)
{
	const char *args[] = {"--state", path, NULL};
	pid_t pid = h_spawn(&H, -1, args);

	for (int i = 0; i < 1000; i++) {
		const struct barrierd_header *m;
		size_t sz;
		int ws, serving = 0;

		if (waitpid(pid, &ws, WNOHANG) == pid) {
			assert_true(WIFEXITED(ws));
			*status = WEXITSTATUS(ws);
			return 0;
		}
		m = map_ro(path, &sz);
		if (m) {
			serving = bd_load(&m->magic) == BARRIERD_MAGIC &&
				  (bd_load(&m->flags) & BARRIERD_FLAG_RUNNING) &&
				  bd_load(&m->daemon_pid) == (uint64_t)pid;
			munmap((void *)m, sz);
		}
		if (serving) {
			kill(pid, SIGTERM);
			ws = test_reap(pid, 10);
			*status = ws != -1 && WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
			return 1;
		}
		test_sleep_ms(10);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fail_msg("the daemon neither exited nor served %s within 10 s", path);
	return -1;
}

/* The daemon must refuse path: exit 1 without ever serving it. */
static int run_expect_refusal(const char *path)
{
	int status = -1;

	if (run_on(path, &status))
		fail_msg("the daemon adopted and served %s", path);
	return status;
}

/*
 * fs.protected_regular forbids even root an O_CREAT open of someone else's file in a sticky
 * world-writable directory: then the kernel refuses before the daemon can.
 */
static int protected_regular(void)
{
	FILE *f = fopen("/proc/sys/fs/protected_regular", "r");
	int v = 0;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

static void assert_refused(const char *path, long mark, const char *needle, int planted)
{
	assert_int_equal(run_expect_refusal(path), 1);
	if (planted && protected_regular() && h_log_has_since(&H, mark, "Permission denied"))
		return; /* the kernel refused the open (fs.protected_regular) */
	if (!h_log_has_since(&H, mark, needle))
		fail_msg("no \"%s\" in the daemon's log for %s", needle, path);
}

/* nobody planted `planted` (the state file at path, or its lock): refused, and left as it was. */
static void planted_refused(const char *path, const char *planted, mode_t mode, const char *fill)
{
	struct file_snap before;

	create_file(planted, mode, NOBODY, fill);
	snap(planted, &before);
	assert_refused(path, h_log_mark(&H), "refusing", 1);
	assert_unchanged(planted, &before);
}

/*
 * 5. The daemon's own paths: in a world-writable sticky directory, anyone can plant the state
 * file or its lock, or put a hard link to another root file there; a directory someone else
 * owns lets them swap anything below it.  The daemon must refuse (exit 1, "refusing") and leave
 * what it found untouched, instead of chmod'ing and zeroing it.
 */
static void state_file_ownership_refused(void **state)
{
	char pub[320], path[400], lock[420], target[400], nob[320];
	struct file_snap before;
	long mark;

	(void)state;
	snprintf(pub, sizeof(pub), "%s/pub", H.dir);
	assert_int_equal(mkdir(pub, 0755), 0);
	assert_int_equal(chmod(pub, 01777), 0);

	/* The control: a fresh path in that directory is served (root's and sticky is fine). */
	{
		int status = -1;

		snprintf(path, sizeof(path), "%s/ok", pub);
		assert_int_equal(run_on(path, &status), 1);
		assert_int_equal(status, 0);
	}

	/* (a) the state file, planted by nobody */
	snprintf(path, sizeof(path), "%s/a", pub);
	planted_refused(path, path, 0666, "nobody's file ");

	/* (b) a hard link to another root file */
	snprintf(target, sizeof(target), "%s/target", H.dir);
	create_file(target, 0600, 0, "root's other file ");
	snprintf(path, sizeof(path), "%s/b", pub);
	assert_int_equal(link(target, path), 0);
	snap(target, &before);
	mark = h_log_mark(&H);
	assert_refused(path, mark, "hard link", 0);
	assert_true(h_log_has_since(&H, mark, "refusing"));
	assert_unchanged(target, &before);

	/* (c) the lock file, planted by nobody */
	snprintf(path, sizeof(path), "%s/c", pub);
	snprintf(lock, sizeof(lock), "%s.lock", path);
	planted_refused(path, lock, 0644, "nobody's lock ");

	/* (d) a state directory owned by nobody */
	snprintf(nob, sizeof(nob), "%s/nob", H.dir);
	assert_int_equal(mkdir(nob, 0755), 0);
	assert_int_equal(chown(nob, NOBODY, NOBODY), 0);
	snprintf(path, sizeof(path), "%s/state", nob);
	mark = h_log_mark(&H);
	assert_refused(path, mark, "refusing", 0);
}

/* Teardown: a daemon left frozen by a failed assertion must be able to hear SIGTERM. */
/*
 * The words only the daemon writes besides the values (DESIGN rule 10): a longer heartbeat
 * period, a raised stop snapshot, a smaller ncpu or another generation would let a later
 * writer's values count for longer or cover fewer CPUs.  Each is a foreign write: the daemon
 * notices at its next pass or heartbeat, resets the file and exits.
 */
static void foreign_write_to_owned_words(void **state)
{
	uint64_t ncpu = test_possible_cpus();
	const char *what[] = {"heartbeat_period_ns", "stop_ns",	  "ncpu",    "generation",
			      "vtime, then a ring",  "served_ns", "doorbell"};

	(void)state;
	for (size_t i = 0; i < sizeof(what) / sizeof(what[0]); i++) {
		struct barrierd_header *w;
		struct barrierd *b;
		size_t wsz;
		long mark;
		int st;

		b = start_then_freeze();
		w = map_rw(H.state, &wsz);
		if (i == 0)
			bd_store(&w->heartbeat_period_ns, 60 * TEST_SEC);
		else if (i == 1)
			bd_store(&test_ext_of(w, ncpu)->stop_ns, 1ULL << 62);
		else if (i == 2)
			bd_store(&w->ncpu, ncpu - 1);
		else if (i == 3)
			bd_store(&w->generation, bd_load(&w->generation) + 1);
		else if (i == 5)
			bd_store(&test_ext_of(w, ncpu)->served_ns, 1ULL << 62);
		else if (i == 6)
			bd_store(&w->doorbell,
				 1); /* its FUTEX_WAIT would return at once, forever */
		else {
			/*
			 * A ring raises the horizon outside a pass, storing vtime: it must check
			 * the file first, or it overwrites the foreign vtime and nothing is left
			 * for the next check to find.
			 */
			bd_store(&w->vtime, bd_load(&w->vtime) - 1);
			syscall(SYS_futex, &w->doorbell, FUTEX_WAKE, 1, NULL, NULL, 0);
		}
		mark = h_log_mark(&H);
		assert_int_equal(kill(H.pid, SIGCONT), 0);
		st = wait_exit(b, 10);
		if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) == 0)
			fail_msg("a write to %s went unnoticed", what[i]);
		assert_true(h_log_has_since(&H, mark, "did not write"));
		assert_true(bd_load(&w->flags) & BARRIERD_FLAG_STOPPED);
		assert_int_equal(bd_load(&test_ext_of(w, ncpu)->stop_ns), 0);
		barrierd_close(b);
		munmap(w, wsz);
	}
}

static int teardown(void **state)
{
	if (H.pid > 0)
		kill(H.pid, SIGCONT);
	return h_teardown(state);
}

int main(void)
{
	test_require_root();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(foreign_write_not_evidence, h_setup, teardown),
	    cmocka_unit_test_setup_teardown(foreign_percpu_only_not_adopted, h_setup, teardown),
	    cmocka_unit_test_setup_teardown(future_values_reset, h_setup, teardown),
	    cmocka_unit_test_setup_teardown(wrapped_vtime_reset, h_setup, teardown),
	    cmocka_unit_test_setup_teardown(foreign_ext_offset_not_followed, h_setup, teardown),
	    cmocka_unit_test_setup_teardown(state_file_ownership_refused, h_setup, teardown),
	    cmocka_unit_test_setup_teardown(foreign_write_to_owned_words, h_setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
