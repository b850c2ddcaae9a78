// SPDX-License-Identifier: MIT
/*
 * DESIGN rule 6 against a detach from outside the main thread: the sched_switch program's link
 * destroyed by another thread while the daemon's main thread sleeps, as bpftool or a bug elsewhere
 * could.  The slot of an idle CPU then stays IDLE forever, even once that CPU runs user code.  The
 * main thread's next wake-up (a ring) is a switch *in*, which no switch count sees, so a check of
 * the counts before the credit cannot tell; the daemon must still give no idle credit to a CPU that
 * runs a user task after the detach, and must exit.
 *
 * Runs the test-only daemon build (barrierd-testhooks): on SIGUSR1 a thread of its own waits
 * 100 ms and destroys the sched_switch link.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <bpf/bpf.h>
#include <dirent.h>

#include "harness.h"
#include <barrierd_slot.h>

#define HOOK_LINE "test hook: sched_switch program detached by another thread"
#define TRIES 10
/*
 * Between the detach and the first ring, nothing may wake the daemon's main thread: after any
 * wake-up it sleeps again, a switch out that the kernel counts and the detached program does
 * not, and even the old check (counts compared before the credit) would then notice.  A one
 * second heartbeat leaves ample room for that stretch (about 150 ms) between two ticks.
 */
#define HEARTBEAT_MS "1000"

/* The test-only daemon, or $BARRIERD_TEST_TESTHOOKS (another build's, to see the test fail). */
static const char *hooks_bin(void)
{
	const char *env = getenv("BARRIERD_TEST_TESTHOOKS");

	return env && *env ? env : BARRIERD_TESTHOOKS_BIN;
}

/*
 * The daemon's slot array: the map named "slots" among those its descriptors refer to
 * (/proc/PID/fdinfo), so that another daemon on the machine is never looked at.  The slots are
 * read through the bpf() syscall, not through the daemon, whose main thread must not wake.
 */
static int slots_map(pid_t pid)
{
	char path[64], line[256];
	struct dirent *d;
	DIR *dir;
	int found = -1;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -1;
	while (found < 0 && (d = readdir(dir))) {
		char file[320];
		unsigned id = 0;
		FILE *f;

		snprintf(file, sizeof(file), "%s/%s", path, d->d_name);
		f = fopen(file, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "map_id: %u", &id) == 1)
				break;
		fclose(f);
		if (id) {
			struct bpf_map_info info;
			__u32 len = sizeof(info);
			int fd = bpf_map_get_fd_by_id(id);

			memset(&info, 0, sizeof(info));
			if (fd < 0)
				continue;
			if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 &&
			    strcmp(info.name, "slots") == 0 &&
			    info.value_size == sizeof(struct barrierd_slot))
				found = fd;
			else
				close(fd);
		}
	}
	closedir(dir);
	return found;
}

static void read_slot(int fd, uint32_t cpu, struct barrierd_slot *s)
{
	assert_int_equal(bpf_map_lookup_elem(fd, &cpu, s), 0);
}

/* The spinner, killed by the teardown if an assertion leaves it running. */
static pid_t spinner = -1;

static void stop_spinner(void)
{
	test_kill_all(&spinner, 1);
}

/* The CPU a task last ran on and its state, from /proc/PID/stat (fields 39 and 3). */
static int task_cpu(pid_t pid, char *state)
{
	char path[64], buf[1024], *s;
	int cpu = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	s = strrchr(buf, ')');
	if (!s)
		return -1;
	*state = s[2];
	s += 2;
	for (int field = 3; field < 39 && s; field++) {
		s = strchr(s, ' ');
		if (s)
			s++;
	}
	if (s)
		cpu = atoi(s);
	return cpu;
}

/* A line of the daemon's log, from byte `from` on, with needle and without `but_not`. */
static int log_line_since(long from, const char *needle, const char *but_not)
{
	char line[1024];
	FILE *f = fopen(H.log, "r");
	int found = 0;

	if (!f)
		return 0;
	if (fseek(f, from, SEEK_SET) == 0)
		while (!found && fgets(line, sizeof(line), f))
			found = strstr(line, needle) && !strstr(line, but_not);
	fclose(f);
	return found;
}

/* Poll (hang guard: ms) until the header word at p differs from / equals v. */
static int wait_word(const uint64_t *p, uint64_t mask, uint64_t v, int equal, int ms)
{
	for (int i = 0; i < ms / 2; i++) {
		if (((bd_load(p) & mask) == v) == equal)
			return 0;
		test_sleep_ms(2);
	}
	return -1;
}

/*
 * One run of the scenario: 1 when it ran, 0 when it could not mean much (CPU 1 was not idle at
 * the detach, or the daemon woke before the ring): try again with a new daemon.
 */
static int attempt(int n)
{
	const char *args[] = {"--state", H.state, "--heartbeat-period", HEARTBEAT_MS, NULL};
	const struct barrierd_header *m;
	const struct barrierd_ext *x;
	struct barrierd_slot s0, s1;
	struct barrierd *b;
	uint64_t credit0, credit1, hb, passes;
	size_t sz = 0;
	long mark = h_log_mark(&H);
	int fd, st = -1, status;
	char tstate = '?';

	H.pid = h_spawn_bin(&H, hooks_bin(), 0, args); /* on CPU 0, with us */
	assert_int_equal(h_wait_running(&H, H.pid), 0);
	assert_int_equal(test_open_file_only(&b, H.state, NULL), 0);
	assert_int_equal(barrierd_barrier(b, 5 * TEST_SEC), 0); /* every CPU's state is known */
	m = map_ro(H.state, &sz);
	assert_non_null(m);
	x = (const struct barrierd_ext *)((const char *)m + bd_load(&m->ext_offset));
	fd = slots_map(H.pid);
	assert_true(fd >= 0);

	/*
	 * Not following, no credit pass runs until someone rings (following, the slow idle credit
	 * would run them every few ms).  Our opens of the file opened the daemon's peek window
	 * (docs/DEMAND.md): its peeks wake the main thread every few ms, and a wake-up between the
	 * detach and the ring is what the check before the loads sees.  So let the window close
	 * first, with no open of the file from here on: opens made while it was open reopen it
	 * once when it closes, so two windows of 2 s, and a margin.  Then right after a heartbeat
	 * tick: the next is a second away.
	 */
	assert_int_equal(wait_word(&m->flags, BARRIERD_FLAG_ARMED, 0, 1, 5000), 0);
	test_sleep_ms(4500);
	assert_int_equal(wait_word(&m->heartbeat_ns, ~0ULL, bd_load(&m->heartbeat_ns), 0, 3000), 0);
	test_sleep_ms(5); /* let that tick's fold finish */
	hb = bd_load(&m->heartbeat_ns);
	passes = bd_load(&x->passes);
	assert_int_equal(kill(H.pid, SIGUSR1), 0);
	for (int i = 0; i < 2500 && !h_log_has_since(&H, mark, HOOK_LINE); i++) {
		if (waitpid(H.pid, &status, WNOHANG) == H.pid) {
			H.pid = -1;
			fail_msg("the daemon exited (wait status %#x) before its hook detached the "
				 "program: is SIGUSR1 hooked in %s?",
				 status, hooks_bin());
		}
		test_sleep_ms(2);
	}
	if (!h_log_has_since(&H, mark, HOOK_LINE))
		fail_msg("no \"%s\" within 5 s", HOOK_LINE);

	/*
	 * The slot is frozen as it was at the detach, and read here through bpf(), not through a
	 * fold (which would wake the main thread): it must say IDLE for the test to mean much.
	 */
	read_slot(fd, 1, &s0);
	if (s0.idle != BARRIERD_SLOT_IDLE) {
		print_message("attempt %d: CPU 1 was not idle at the detach; again\n", n);
		goto again;
	}
	credit0 = bd_load(&x->cpu[1].credit_idle);

	/* A user task on CPU 1, which the detached program never sees switching in. */
	spinner = test_spin_running(1);
	assert_true(spinner > 0);
	test_sleep_ms(50);
	read_slot(fd, 1, &s1);
	assert_int_equal(s1.idle, BARRIERD_SLOT_IDLE);
	assert_int_equal(s1.switches, s0.switches); /* detached: the spinner's switch unseen */
	assert_int_equal(task_cpu(spinner, &tstate), 1);
	assert_int_equal(tstate, 'R');
	/* Nothing has judged the detach yet. */
	assert_int_equal(waitpid(H.pid, &status, WNOHANG), 0);
	assert_int_equal(bd_load(&x->cpu[1].credit_idle), credit0);
	/*
	 * And the main thread has not run a pass since the detach (a heartbeat on a loaded
	 * machine): its next wake-up is our ring, the case the old check cannot see.
	 */
	if (bd_load(&m->heartbeat_ns) != hb || bd_load(&x->passes) != passes) {
		print_message("attempt %d: the daemon ran a pass before the ring; again\n", n);
		goto again;
	}

	/* Ring: each ring asks for a credit pass. */
	for (int i = 0; i < 100; i++) { /* hang guard: 2 s */
		barrierd_request(b);
		if (waitpid(H.pid, &status, WNOHANG) == H.pid) {
			st = status;
			H.pid = -1;
			break;
		}
		test_sleep_ms(20);
	}
	credit1 = bd_load(&x->cpu[1].credit_idle);
	assert_int_equal(task_cpu(spinner, &tstate), 1); /* it ran there throughout */
	stop_spinner();
	close(fd);
	barrierd_close(b);
	munmap((void *)m, sz);

	if (credit1 != credit0)
		fail_msg("CPU 1 got idle credit (%llu -> %llu) while a user task ran on it after "
			 "the sched_switch program was detached",
			 (unsigned long long)credit0, (unsigned long long)credit1);
	if (st == -1)
		fail_msg("the daemon did not exit within 2 s of ringing after the detach");
	assert_true(WIFEXITED(st));
	assert_int_not_equal(WEXITSTATUS(st), 0);
	if (!log_line_since(mark, "detached", "test hook:"))
		fail_msg("no log line saying the programs were detached");
	return 1;

again:
	stop_spinner();
	close(fd);
	barrierd_close(b);
	munmap((void *)m, sz);
	h_stop(&H);
	return 0;
}

static void detach_outside_no_idle_credit(void **state)
{
	int done = 0;

	(void)state;
	test_pin(0); /* CPU 1 stays idle but for what the kernel runs there */
	for (int i = 1; i <= TRIES && !done; i++)
		done = attempt(i);
	if (!done)
		fail_msg("the scenario did not come together in %d tries", TRIES);
}

static int teardown(void **state)
{
	stop_spinner();
	return h_teardown(state);
}

int main(void)
{
	cpu_set_t s;

	test_require_root();
	if (sched_getaffinity(0, sizeof(s), &s) || !CPU_ISSET(0, &s) || !CPU_ISSET(1, &s) ||
	    sysconf(_SC_NPROCESSORS_ONLN) < 2)
		test_skip_or_fail("needs CPUs 0 and 1 online and usable");
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(detach_outside_no_idle_credit, h_setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
