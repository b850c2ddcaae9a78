/* SPDX-License-Identifier: MIT */
/*
 * The state-file writer: create, lock, check what an existing file holds, reset a foreign one,
 * map it, and mark it stopped.  Every word of the file is published with one aligned store
 * (bd_store, common/bd_sync.h).
 */
#ifndef BARRIERD_STATE_FILE_H
#define BARRIERD_STATE_FILE_H

#include <barrierd.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

struct state_file {
	int fd;
	int lock_fd;
	/* The lock keyed on the state file's (st_dev, st_ino): see state_file.c. */
	int inode_lock_fd;
	/* The state file's directory (O_PATH), checked once: a failed start unlinks through it. */
	int dfd;
	/* The per-inode lock's directory (O_PATH), and the lock file's name in it. */
	int lock_dfd;
	char inode_lock_name[NAME_MAX + 1];
	char base[NAME_MAX + 1]; /* the state file's name in dfd */
	char path[PATH_MAX];
	char lock_path[PATH_MAX + 8];
	/* What this run created (and a failed start removes): nothing else is ever unlinked. */
	bool created, lock_created, inode_lock_created;
	bool inode_locked;	     /* we hold the per-inode lock */
	unsigned long long dev, ino; /* the inode we map (fstat at the start) */
	/* STATE_FILE_TRUNCATED or STATE_FILE_GONE once state_file_check() found it, else 0. */
	int fault;
	struct barrierd_header *hdr;
	struct barrierd_ext *ext;
	size_t size;
	uint64_t ncpu;
	uint8_t boot_id[16];
};

/*
 * No vtime of ours comes near this: one pass per microsecond for 100 000 years is below 2^62.
 * A larger value in a file was written by someone else, and adopting it would let vtime wrap.
 */
#define BARRIERD_VTIME_LIMIT (1ULL << 62)

/*
 * Change header.flags with one atomic read-modify-write (a CAS loop), so that no writer (the
 * main thread arming, the stop path, the SIGSYS handler on any thread) can overwrite another's
 * bit; then wake the flags word's waiters (clients sleep on it to hear a disarm or a stop).
 * Async-signal-safe.
 */
void state_flags_update(uint64_t *flags, uint64_t clear, uint64_t set);

/* The machine's boot id as 16 raw bytes.  0 or -errno. */
int read_boot_id(uint8_t out[16]);

/*
 * Open (creating the file and its directory if missing), lock, and reset a foreign file:
 * one from another boot, without our magic (the original barrierd's), or of another layout.
 * Resetting zeroes every time field and sets the stopped flag, so even a daemon that fails
 * later leaves a safe file.  Never follows a symlink.  0, or -errno with a reason in err.
 */
int state_file_open(struct state_file *sf, const char *path, uint64_t ncpu, char *err,
		    size_t errlen);

/*
 * Mark the file stopped (no daemon publishes) and wake every waiter so it notices.  The stop
 * snapshot is g_ns, g_vt: the global values this daemon last published (0 if it published
 * nothing since the start's reset), never what the file holds.
 */
void state_file_set_stopped(struct state_file *sf, uint64_t g_ns, uint64_t g_vt);

/*
 * Another writer changed the file under us: reset it as a foreign file (every time zeroed,
 * vtime raised, stopped flag set, zero snapshot), so that neither our clients, nor clients of
 * the original layout, nor the next daemon take its values as evidence; wake every waiter.
 */
void state_file_reset_foreign(struct state_file *sf);

void state_file_close(struct state_file *sf);

enum { STATE_FILE_TRUNCATED = 1, STATE_FILE_GONE = 2 };

/*
 * Is the file at the path still the inode we map, at its full size?  fstat of our descriptor
 * against a fresh lstat of the path: two system calls, cheap enough for every heartbeat.  On a
 * truncation (the mapping may fault: stop without touching it), a replacement or a removal it
 * logs what happened, sets sf->fault and returns -EIO (truncated) or -ESTALE (replaced,
 * removed); 0 if all is well or the path cannot be checked right now.
 */
int state_file_check(struct state_file *sf);

/*
 * The stop of a truncated file: no stop snapshot, no heartbeat (nothing that vouches for
 * values), only the stopped flag, and only if the flags word is still inside the file.
 */
void state_file_stop_truncated(struct state_file *sf);

/*
 * A failed start: unlink what this run created (the state file, PATH.lock, the per-inode lock
 * file), each only if its name still names the inode we hold.  Call before state_file_close,
 * while the locks are held, and never under the sandbox (it forbids unlinkat).
 */
void state_file_discard(struct state_file *sf);

/*
 * The exit status of a daemon whose state file was truncated under a pass (SIGBUS on the
 * mapping): EX_IOERR.
 */
#define STATE_FILE_SIGBUS_EXIT 74

/*
 * The exit status of a daemon that got a SIGBUS not on the state file's mapping (a fault
 * elsewhere, or one sent with kill): EX_SOFTWARE, as for a trapped system call.
 */
#define STATE_FILE_SIGBUS_OTHER_EXIT 70

/*
 * Where root's daemons keep their per-inode locks (one empty 0600 file per state file inode,
 * named after its device and inode): a directory only root can write.
 */
#define BARRIERD_LOCK_DIR "/run/barrierd-locks"

/* The name of the per-inode lock of a state file (dev, ino) in its lock directory. */
void state_file_inode_lock_name(char *out, size_t len, unsigned long long dev,
				unsigned long long ino);

/* FUTEX_WAKE (shared: clients map the file from other processes) on a word's low half. */
int futex_wake_word(uint64_t *word);

/*
 * How many wait on a 32-bit word of the file (shared), counted by requeueing them all onto the
 * same word, waking none.  val: what the word holds; if it holds something else, the count
 * fails and 1 is returned (someone may wait there).  Any user can add to the count (by waiting
 * there) or lower it (by requeueing the waiters elsewhere first).
 */
long futex_count_u32(const uint32_t *word, uint32_t val);

#endif
