/* SPDX-License-Identifier: MIT */
/*
 * test_util.h - what every kind of test needs around a state file: sleeps, temporary
 * directories, files and mappings, futex wakes, and child processes.  Part of the tests'
 * common library (barrierd_testcommon); shared words are read and written with bd_sync.h's
 * bd_load() and bd_store(), the daemon's and the library's own primitives.
 */
#ifndef BARRIERD_TEST_UTIL_H
#define BARRIERD_TEST_UTIL_H

#include <barrierd.h>

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "bd_sync.h"

#define TEST_US 1000ULL
#define TEST_MS 1000000ULL
#define TEST_SEC 1000000000ULL
/* Hang guard for waits that must end: generous, never a timing assertion. */
#define TEST_HANG_GUARD_NS (10 * TEST_SEC)

void test_sleep_ns(uint64_t ns);
void test_sleep_ms(long ms);

/*
 * A fresh directory parent/barrierd-test.XXXXXX, chmod 0755: mkdtemp makes it 0700, which a
 * client running as another user (or a daemon that dropped its capabilities) could not even
 * traverse.  0 or -errno.
 */
int test_mkdtemp(char *out, size_t len, const char *parent);
/* Remove dir and everything below it (not following links); nothing for NULL or "". */
void test_rmtree(const char *dir);
/* Write exactly these bytes as a fresh file with this mode (not subject to the umask). */
int test_write_file(const char *path, const void *buf, size_t len, mode_t mode);

/*
 * A read-write shared mapping of a whole state file: the view of a writer (the fake daemon, a
 * foreign writer).  NULL on failure.  Read-only mappings: map_ro() of common/.
 */
struct barrierd_header *test_map_rw(const char *path, size_t *size);
/* The extension of a file of ncpu CPUs, where the layout puts it (whatever ext_offset says). */
struct barrierd_ext *test_ext_of(const void *file, uint64_t ncpu);
/* The 16 raw bytes of this boot's id, as the daemon records them (zeros when unreadable). */
void test_boot_id(uint8_t id[16]);
/* Possible CPUs: the highest id in /sys/devices/system/cpu/possible, plus one. */
uint64_t test_possible_cpus(void);

/* FUTEX_WAKE (shared, not private: waiters live in other processes) on a word's low half. */
long test_futex_wake(const uint64_t *word);
/*
 * Wait until some thread sleeps in a futex on this word: FUTEX_WAKE it (a spurious wake a
 * reader must tolerate anyway) until the kernel reports that it woke someone.  This proves
 * the waiter sleeps on the right word as a shared futex, without any timing assumption.
 * 1 when a sleeper was found, 0 at the timeout.
 */
int test_await_sleeper(const uint64_t *word, uint64_t timeout_ns);

/* Pin the calling thread to one CPU; test_unpin: back to every CPU. */
void test_pin(int cpu);
void test_unpin(void);
/* Wait for a child with a hang guard (SIGKILL after it); its wait status, or -1. */
int test_reap(pid_t pid, int seconds);
/* Run a shell command (printf format); its exit status, or -1. */
int test_system(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* nice-19 spinners pinned to each CPU, for "loaded" runs; how many were started. */
int test_spinners(pid_t *pids, int max);
/* One spinner pinned to cpu at that nice level (it dies with us); its pid, or -1. */
pid_t test_spin_on(int cpu, int niceness);
/* A nice-0 spinner pinned to cpu, returned once it runs there (it dies with us); or -1. */
pid_t test_spin_running(int cpu);
/* Kill and reap each pid above 0, and set it to -1. */
void test_kill_all(pid_t *pids, int n);

/*
 * What the library does with the slot socket at sock (DESIGN rule 11): connect, receive one
 * record into m and its descriptors into fds (at most max; MSG_CMSG_CLOEXEC).  How many
 * descriptors, or -errno (-EPROTO: the record was not whole).
 */
int test_slots_fetch(const char *sock, struct barrierd_slots_msg *m, int *fds, int max);

/*
 * The slots of the daemon whose state file is DIR/state, mapped read-only as a client gets them,
 * with every received descriptor closed (no link kept: this view holds no program attached).
 * The mapping (*len bytes, *ncpu slots), or NULL.
 */
struct barrierd_slot;
const struct barrierd_slot *test_map_slots(const char *dir, size_t *len, uint64_t *ncpu);

/* The unprivileged user the security tests act as. */
#define TEST_NOBODY 65534

/* Become nobody, with no supplementary groups and no capabilities: 0, or -errno. */
int test_drop_to_nobody(void);

/*
 * Run fn(arg) as nobody in a child; its exit code (0: every check held; else the number of the
 * check that failed), 100 if it could not become nobody, or -1 if it died or hung (hang guard:
 * seconds).
 */
int test_as_nobody(int (*fn)(void *), void *arg, int seconds);

/*
 * barrierd_open_opts() with BARRIERD_OPEN_NO_DIRECT added to opts (NULL: defaults): for tests
 * of what the daemon publishes, which a handle crediting from the slots itself would bypass
 * (DESIGN rule 11), and of the file's liveness rules, which the slots do not follow.
 */
static inline int test_open_file_only(struct barrierd **b, const char *path,
				      const struct barrierd_open_opts *opts)
{
	struct barrierd_open_opts o = {.sz = sizeof(o)};

	if (opts)
		o = *opts;
	o.sz = sizeof(o);
	o.flags |= BARRIERD_OPEN_NO_DIRECT;
	return barrierd_open_opts(b, path, &o);
}

#endif
