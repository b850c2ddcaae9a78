// SPDX-License-Identifier: MIT
#include "state_file.h"
#include "bd_sync.h"
#include "kernel_files.h"
#include "log.h"
#include "path_trust.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

int futex_wake_word(uint64_t *word)
{
	/* Low 32 bits of a little-endian 64-bit word are its first four bytes. */
	return (int)syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

long futex_count_u32(const uint32_t *word, uint32_t val)
{
	long n = syscall(SYS_futex, word, FUTEX_CMP_REQUEUE, 0, (void *)(long)INT32_MAX, word, val);

	return n < 0 ? (errno == EAGAIN ? 1 : 0) : n;
}

void state_flags_update(uint64_t *flags, uint64_t clear, uint64_t set)
{
	uint64_t f = bd_load(flags);

	/*
	 * Release on success: every store before the change (a stop snapshot, a watermark) is
	 * visible to a reader that sees the new flags (on x86 the locked CMPXCHG drains anyway).
	 */
	while (!bd_cas(flags, &f, (f & ~clear) | set))
		;
	futex_wake_word(flags);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int read_boot_id(uint8_t out[16])
{
	char buf[64];
	ssize_t n = read_text_file("/proc/sys/kernel/random/boot_id", buf, sizeof(buf));
	int k = 0;

	if (n < 0)
		return (int)n;
	if (n < 32)
		return -EIO;
	for (char *p = buf; *p && k < 32; p++) {
		int h = hexval(*p);

		if (*p == '-' || *p == '\n')
			continue;
		if (h < 0)
			return -EIO;
		if (k % 2 == 0)
			out[k / 2] = (uint8_t)(h << 4);
		else
			out[k / 2] |= (uint8_t)h;
		k++;
	}
	return k == 32 ? 0 : -EIO;
}

/* Create the state file's directory if it is missing (one level, 0755, root's). */
static int ensure_dir(const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	char *slash;
	struct stat st;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = 0;
	if (lstat(dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode)) {
			snprintf(err, errlen, "%s is not a directory", dir);
			return -ENOTDIR;
		}
		return 0;
	}
	if (errno != ENOENT || mkdir(dir, 0755) != 0) {
		int e = errno;

		snprintf(err, errlen, "cannot create directory %s: %s", dir, strerror(e));
		return -e;
	}
	return 0;
}

/*
 * Why the file is not one an earlier daemon of ours left this boot, or NULL.  Every start
 * resets the times anyway (DESIGN rule 9): this only says, in the log, whose file it was, and
 * decides nothing (tests/audit/mutants/adopt_values.patch makes it decide).  now: our clock,
 * read after the loads.  *interrupted: the reason is also what a daemon of ours leaves when it
 * dies while it writes the file (a SIGKILL in a pass), so it blames nobody.
 */
static const char *foreign_reason(const struct state_file *sf, const uint8_t *map, size_t size,
				  uint64_t now, bool *interrupted)
{
	const struct barrierd_header *h = (const void *)map;
	const struct barrierd_ext *x;

	if (size < sizeof(*h))
		return size ? "too short for a barrierd header" : NULL;
	if (h->magic != BARRIERD_MAGIC)
		return "no barrierd magic (written by the original barrierd, or not ours)";
	if (memcmp(h->boot_id, sf->boot_id, 16) != 0)
		return "written during another boot";
	if (h->abi_major != BARRIERD_ABI_MAJOR || h->header_size != sizeof(*h) ||
	    h->cpu_stride != sizeof(struct barrierd_cpu) || h->ncpu != sf->ncpu ||
	    h->ext_offset != barrierd_ext_offset(sf->ncpu) || size < barrierd_file_size(sf->ncpu))
		return "another layout or CPU count";
	x = (const void *)(map + barrierd_ext_offset(sf->ncpu));
	/*
	 * Every time we publish is a reading of this boot's clock taken before it was stored: a
	 * later one was written by someone else (a container with a fixed boot id, a writer
	 * that got the clock wrong).  Every vtime of ours is far below the limit: a larger one
	 * would make our vtime wrap.
	 */
	if (h->heartbeat_ns > now || h->last_interrupt_ns > now || x->last_advance_ns > now ||
	    x->stop_ns > now)
		return "holds times later than this daemon's clock";
	for (uint64_t c = 0; c < sf->ncpu; c++)
		if (h->per_cpu[c].last_interrupt_ns > now)
			return "holds times later than this daemon's clock";
	if (h->vtime >= BARRIERD_VTIME_LIMIT || h->last_interrupt_vtime >= BARRIERD_VTIME_LIMIT ||
	    x->stop_vtime >= BARRIERD_VTIME_LIMIT)
		return "holds a vtime no daemon of ours reaches";
	for (uint64_t c = 0; c < sf->ncpu; c++)
		if (h->per_cpu[c].last_interrupt_vtime >= BARRIERD_VTIME_LIMIT)
			return "holds a vtime no daemon of ours reaches";
	/*
	 * Ours, this boot.  Every per-CPU vtime is at most the file's vtime (a pass advances that
	 * first; a reset raises it before anything else), and each global is at most every
	 * per-CPU value (their minimum, published after them, and every per-CPU value only
	 * grows): at every instant, so a daemon of ours killed at any point leaves them so too.
	 */
	for (uint64_t c = 0; c < sf->ncpu; c++)
		if (h->per_cpu[c].last_interrupt_vtime > h->vtime ||
		    h->last_interrupt_ns > h->per_cpu[c].last_interrupt_ns ||
		    h->last_interrupt_vtime > h->per_cpu[c].last_interrupt_vtime)
			return "holds values no daemon of ours publishes";
	if ((h->flags & BARRIERD_FLAG_STOPPED) &&
	    (h->last_interrupt_ns != x->stop_ns || h->last_interrupt_vtime != x->stop_vtime))
		return "changed after its daemon stopped";
	/*
	 * Every per-CPU time we publish precedes the heartbeat stored after it, once the pass (or
	 * the reset, which zeroes the heartbeat before the per-CPU words) is complete: a daemon of
	 * ours killed in between leaves a later one, as another writer could.  Nothing in the
	 * file tells them apart (the reset follows either way).
	 */
	for (uint64_t c = 0; c < sf->ncpu; c++)
		if (h->per_cpu[c].last_interrupt_ns > h->heartbeat_ns) {
			*interrupted = true;
			return "per-CPU times newer than its last heartbeat, as a daemon of ours "
			       "leaves it when it is killed or dies while it writes the file (or "
			       "another process wrote them)";
		}
	return NULL;
}

/* Zero the stop snapshot of an extension at byte xo, if one fits there. */
static void zero_stop_at(uint8_t *map, size_t size, uint64_t xo)
{
	struct barrierd_ext *x;

	if (xo % 8 || xo > size || size - xo < sizeof(*x))
		return;
	x = (void *)(map + xo);
	bd_store(&x->stop_ns, 0);
	bd_store(&x->stop_vtime, 0);
}

/*
 * Zero every time in the file in place, with single aligned stores in an order that is safe at
 * every step for a reader that still maps it (DESIGN rules 9 and 10):
 *  1. trust off first: a zero stop snapshot, then STOPPED by one RMW (a reader that sees the
 *     flag sees the zero snapshot), so that no reader of ours trusts any word while the rest
 *     changes, even if we are killed half-way;
 *  2. vtime raised above every vtime word of the header and the per-CPU entries, so a vtime
 *     stamp taken from now on is above every value still in the file (zeroing it first would
 *     let an old value pass a 0 stamp);
 *  3. the global words, then everything else but ncpu, the flags and the generation (a reader
 *     of the original layout walks per_cpu[0..ncpu): a zero ncpu would make its walk pass
 *     vacuously);
 *  4. STOPPED again, with a wake of the flags.  The generation is kept, never zeroed: the next
 *     start raises it, and a reader's seqlock (lib/trusted.c) must never see a generation
 *     repeat across a reset and a start.
 * A vtime at or past the limit cannot be raised without wrapping: then the other words are
 * zeroed first and vtime is set to 1 last.  A stamp of the old value is passed by nothing
 * (a delay), and one taken after is above every word left.  Zero times only ever delay.
 */
static void reset_words(uint8_t *map, size_t size, uint64_t ncpu)
{
	struct barrierd_header *h = (void *)map;
	uint64_t maxv = 0, n = 0, xo;

	if (size < 32)
		goto rest;
	if (size >= sizeof(*h)) {
		/* The vtime words: the header's two and the second of each per-CPU entry. */
		n = bd_load(&h->ncpu);
		if (n > (size - sizeof(*h)) / sizeof(struct barrierd_cpu))
			n = (size - sizeof(*h)) / sizeof(struct barrierd_cpu);
		/*
		 * The snapshot where our layout puts it, and where the file's ext_offset says
		 * only if that lies past the header and the per-CPU array: a foreign ext_offset
		 * of 0 or 8 would aim these stores at the flags and the generation (the
		 * generation must never go back, lib/trusted.c's seqlock).
		 */
		zero_stop_at(map, size, barrierd_ext_offset(ncpu));
		xo = bd_load(&h->ext_offset);
		if (xo >= sizeof(*h) + n * sizeof(struct barrierd_cpu))
			zero_stop_at(map, size, xo);
		state_flags_update(&h->flags, BARRIERD_FLAGS_STATE_MASK, BARRIERD_FLAG_STOPPED);
	}
	maxv = bd_load(&h->vtime);
	if (bd_load(&h->last_interrupt_vtime) > maxv)
		maxv = bd_load(&h->last_interrupt_vtime);
	for (uint64_t c = 0; c < n; c++) {
		uint64_t v = bd_load(&h->per_cpu[c].last_interrupt_vtime);

		maxv = v > maxv ? v : maxv;
	}
	if (maxv < BARRIERD_VTIME_LIMIT)
		bd_store(&h->vtime, maxv + 1);
	bd_store(&h->last_interrupt_ns, 0);
	bd_store(&h->last_interrupt_vtime, 0);
rest:
	for (size_t off = 16; off + 8 <= size; off += 8)
		if (size < sizeof(*h) || (off != offsetof(struct barrierd_header, flags) &&
					  off != offsetof(struct barrierd_header, generation)))
			bd_store((uint64_t *)(map + off), 0);
	if (size >= 32 && maxv >= BARRIERD_VTIME_LIMIT)
		bd_store(&h->vtime, 1);
	if (size >= sizeof(*h))
		state_flags_update(&h->flags, ~0ULL, BARRIERD_FLAG_STOPPED);
}

static void write_layout(struct state_file *sf)
{
	struct barrierd_header *h = sf->hdr;
	uint64_t boot[2];

	memcpy(boot, sf->boot_id, 16);
	bd_store(&h->ncpu, sf->ncpu);
	/* Sizes and version before the magic: a reader that sees the magic sees a whole layout. */
	h->abi_major = BARRIERD_ABI_MAJOR;
	h->abi_minor = BARRIERD_ABI_MINOR;
	h->header_size = sizeof(*h);
	h->cpu_stride = sizeof(struct barrierd_cpu);
	bd_store((uint64_t *)h->boot_id, boot[0]);
	bd_store((uint64_t *)(h->boot_id + 8), boot[1]);
	bd_store(&h->ext_offset, barrierd_ext_offset(sf->ncpu));
	bd_store(&sf->ext->ext_size, sf->size - barrierd_ext_offset(sf->ncpu)); /* what we map */
	sf->ext->ext_header_size = sizeof(struct barrierd_ext);
	sf->ext->ext_cpu_stride = sizeof(struct barrierd_ext_cpu);
	bd_store(&h->magic, BARRIERD_MAGIC);
}

/*
 * The SIGBUS guard.  Root (a log rotation, an admin) can truncate the state file while it is
 * mapped; the next access past the new end raises SIGBUS, in a pass or a heartbeat, before the
 * heartbeat's size check (state_file_check) can see it.  Set before a mapping is touched and
 * cleared before it is unmapped, on the main thread, the only one that accesses the mapping
 * (the doorbell thread only passes the address to futex(), which returns EFAULT instead).
 */
static struct {
	uintptr_t base;
	size_t len;
	int fd;
	const char *path;
} bus_guard;
static volatile sig_atomic_t bus_busy;

static void bus_guard_set(void *base, size_t len, int fd, const char *path)
{
	bus_guard.fd = fd;
	bus_guard.path = path;
	bus_guard.len = len;
	bus_guard.base = (uintptr_t)base;
}

/* Async-signal-safe appenders for the handler's one line (no stdio in a signal handler). */
static size_t put_str(char *buf, size_t n, size_t len, const char *s)
{
	while (*s && n + 1 < len)
		buf[n++] = *s++;
	return n;
}

static size_t put_num(char *buf, size_t n, size_t len, unsigned long long v)
{
	char t[24];
	int k = 0;

	do {
		t[k++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (k && n + 1 < len)
		buf[n++] = t[--k];
	return n;
}

static size_t put_hex(char *buf, size_t n, size_t len, unsigned long long v)
{
	char t[24];
	int k = 0;

	do {
		t[k++] = "0123456789abcdef"[v % 16];
		v /= 16;
	} while (v);
	n = put_str(buf, n, len, "0x");
	while (k && n + 1 < len)
		buf[n++] = t[--k];
	return n;
}

/* Mark the mapped file stopped if it still holds the flags word (one CAS and a wake). */
static bool bus_mark_stopped(long long size)
{
	if (!bus_guard.base || size < (long long)(offsetof(struct barrierd_header, flags) + 8))
		return false;
	state_flags_update(&((struct barrierd_header *)bus_guard.base)->flags,
			   BARRIERD_FLAGS_STATE_MASK, BARRIERD_FLAG_STOPPED);
	return true;
}

/*
 * A SIGBUS that is not a fault on the state file's mapping: a fault elsewhere, or one sent
 * with kill.  The default action is out of reach (under the sandbox sigaction(2) is a
 * forbidden call, which used to end the daemon as "seccomp: forbidden system call 13"), and a
 * fault would only repeat: say what it was, mark the file stopped (nothing cut it, so its
 * page 0 is whole), and exit with STATE_FILE_SIGBUS_OTHER_EXIT.
 */
static void bus_not_ours(const siginfo_t *si, long long size)
{
	char msg[256];
	size_t n = 0;
	bool stopped;

	n = put_str(msg, n, sizeof(msg), "<2>barrierd: SIGBUS not on the state file (");
	if (si->si_code <= 0) {
		/* SI_USER, SI_TKILL, SI_QUEUE: sent, and si_pid says by whom. */
		n = put_str(msg, n, sizeof(msg), "sent by pid ");
		n = put_num(msg, n, sizeof(msg), (unsigned long long)si->si_pid);
	} else {
		n = put_str(msg, n, sizeof(msg), "code ");
		n = put_num(msg, n, sizeof(msg), (unsigned long long)si->si_code);
		n = put_str(msg, n, sizeof(msg), " at address ");
		n = put_hex(msg, n, sizeof(msg), (unsigned long long)(uintptr_t)si->si_addr);
	}
	stopped = bus_mark_stopped(size);
	n = put_str(msg, n, sizeof(msg),
		    stopped ? "); state marked stopped, exiting\n" : "); exiting\n");
	if (write(2, msg, n) < 0) {
	}
	_exit(STATE_FILE_SIGBUS_OTHER_EXIT);
}

/*
 * Async-signal-safe: fstat(2), one CAS and FUTEX_WAKE on the flags word, write(2), _exit(2),
 * all allowed by the sandbox.  No siglongjmp back into a pass: the pass was half done, and
 * nothing it stored can be vouched for in a file someone else cut.  The stopped flag is the
 * only word written, and only if the file still holds it (page 0 then stays mapped).
 * SA_NODEFER: a fault inside the handler (the file shrank again) re-enters it, which exits at
 * once instead of being killed.  Every path ends in _exit: the daemon never dies of SIGBUS.
 */
static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	static const char again[] = "<3>barrierd: the state file faulted again while stopping\n";
	uintptr_t a = (uintptr_t)si->si_addr, base = bus_guard.base;
	struct stat st;
	char msg[PATH_MAX + 256];
	long long size = -1;
	size_t n = 0;

	(void)sig;
	(void)uc;
	if (bus_busy) {
		if (write(2, again, sizeof(again) - 1) < 0) {
		}
		_exit(STATE_FILE_SIGBUS_EXIT);
	}
	bus_busy = 1;
	if (base && fstat(bus_guard.fd, &st) == 0)
		size = (long long)st.st_size;
	if (si->si_code != BUS_ADRERR || !base || a < base || a - base >= bus_guard.len)
		bus_not_ours(si, size);
	n = put_str(msg, n, sizeof(msg), "<3>barrierd: state file ");
	n = put_str(msg, n, sizeof(msg), bus_guard.path);
	if (size >= 0 && (size_t)size < bus_guard.len) {
		n = put_str(msg, n, sizeof(msg), " was truncated to ");
		n = put_num(msg, n, sizeof(msg), (unsigned long long)size);
		n = put_str(msg, n, sizeof(msg), " bytes");
	} else {
		n = put_str(msg, n, sizeof(msg), " was truncated");
	}
	n = put_str(msg, n, sizeof(msg), " under the daemon (its mapping faulted at offset ");
	n = put_num(msg, n, sizeof(msg), (unsigned long long)(a - base));
	if (bus_mark_stopped(size)) {
		n = put_str(msg, n, sizeof(msg), "); marked stopped, exiting\n");
	} else {
		n = put_str(msg, n, sizeof(msg), "); nothing written, exiting\n");
	}
	if (write(2, msg, n) < 0) {
	}
	_exit(STATE_FILE_SIGBUS_EXIT);
}

static void install_sigbus(void)
{
	static bool done;
	struct sigaction sa;

	if (done)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL) == 0)
		done = true;
}

/*
 * Does name in dfd still name the file open as fd?  Checked after taking a lock on a file that
 * may have been unlinked meanwhile (a failed start and the clean-up of stale locks unlink a
 * lock file only while holding its lock): a lock on a nameless file guards nothing.
 */
static bool names_fd(int dfd, const char *name, int fd)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static const char *file_kind(mode_t m)
{
	if (S_ISLNK(m))
		return "a symlink";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISDIR(m))
		return "a directory";
	return "not a file";
}

/*
 * Refuse anything but a regular file at name before opening it.  Opening a device runs its
 * driver, a FIFO or a socket fails or succeeds with an error that names something else.  The
 * directory is trusted (path_trust_dir_chain): nobody but root swaps the entry afterwards, and
 * path_trust_file checks the opened file again.  Missing is fine (it is created).
 */
static int refuse_special(int dfd, const char *name, const char *what, const char *path, char *err,
			  size_t errlen)
{
	struct stat st;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) || S_ISREG(st.st_mode))
		return 0;
	snprintf(err, errlen, "refusing %s %s: not a regular file (%s)", what, path,
		 file_kind(st.st_mode));
	return -EPERM;
}

/*
 * Open name in dfd read-write, creating it (mode) if missing; *created says whether this call
 * created it (only that is ever unlinked again).  -errno on failure.
 */
static int open_or_create(int dfd, const char *name, mode_t mode, bool *created)
{
	int fd = -1;

	*created = false;
	for (int tries = 0; fd < 0 && tries < 3; tries++) {
		fd = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd >= 0 || errno != ENOENT)
			break;
		fd = openat(dfd, name,
			    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
				O_CLOEXEC,
			    mode);
		*created = fd >= 0;
		if (fd < 0 && errno != EEXIST)
			break;
	}
	return fd < 0 ? -errno : fd;
}

void state_file_inode_lock_name(char *out, size_t len, unsigned long long dev,
				unsigned long long ino)
{
	snprintf(out, len, "dev-%u:%u-ino-%llu.lock", major((dev_t)dev), minor((dev_t)dev), ino);
}

/*
 * Who holds a lock we could not take: "another barrierd (pid N)" when the pid stored in the
 * lock file (or reported by F_OFD_GETLK) runs a barrierd, else "pid N (COMM), not a barrierd",
 * else "an unknown holder".
 */
static void lock_holder(int fd, char *out, size_t len)
{
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	char buf[32] = "", comm[64] = "", proc[64];
	long pid = -1;
	ssize_t n;

	if (fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK && fl.l_pid > 0)
		pid = fl.l_pid; /* a classic POSIX lock; an OFD lock reports -1 */
	if (pid <= 0) {
		n = pread(fd, buf, sizeof(buf) - 1, 0);
		if (n > 0) {
			buf[n] = 0;
			pid = strtol(buf, NULL, 10);
		}
	}
	if (pid <= 0) {
		snprintf(out, len, "an unknown holder");
		return;
	}
	snprintf(proc, sizeof(proc), "/proc/%ld/comm", pid);
	n = read_text_file(proc, comm, sizeof(comm));
	if (n > 0 && comm[n - 1] == '\n')
		comm[n - 1] = 0;
	if (n > 0 && strncmp(comm, "barrierd", 8) == 0)
		snprintf(out, len, "another barrierd (pid %ld)", pid);
	else if (n > 0)
		snprintf(out, len, "pid %ld (%s), not a barrierd", pid, comm);
	else
		snprintf(out, len, "pid %ld (no longer running?)", pid);
}

/*
 * The directory of the per-inode locks, opened O_PATH.  Root's daemon: BARRIERD_LOCK_DIR,
 * created 0700, always the same one (a state file bind-mounted onto another path, in another
 * directory, still reaches the same lock).  A daemon of another uid cannot create it: it uses
 * the state file's directory, which must then be its own or root's and writable by no one else.
 */
static int open_lock_dir(int state_dfd, char *dir_name, size_t dlen, char *err, size_t errlen)
{
	struct stat st;
	int fd, ret;

	if (geteuid() != 0) {
		if (fstat(state_dfd, &st)) {
			ret = -errno;
			snprintf(err, errlen, "cannot stat the state file's directory: %s",
				 strerror(-ret));
			return ret;
		}
		if ((st.st_uid != 0 && st.st_uid != geteuid()) ||
		    (st.st_mode & (S_IWGRP | S_IWOTH))) {
			snprintf(
			    err, errlen,
			    "the state file's directory (uid %u, mode %04o) must be writable by "
			    "its owner only to hold the daemon's lock (not running as root)",
			    (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
			return -EPERM;
		}
		snprintf(dir_name, dlen, "the state file's directory");
		fd = dup(state_dfd);
		return fd < 0 ? -errno : fd;
	}
	snprintf(dir_name, dlen, "%s", BARRIERD_LOCK_DIR);
	if (mkdir(BARRIERD_LOCK_DIR, 0700) && errno != EEXIST) {
		ret = -errno;
		snprintf(err, errlen, "cannot create %s: %s", BARRIERD_LOCK_DIR, strerror(-ret));
		return ret;
	}
	fd = open(BARRIERD_LOCK_DIR, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open %s: %s%s", BARRIERD_LOCK_DIR, strerror(-ret),
			 ret == -ENOTDIR || ret == -ELOOP ? " (not a directory: refused)" : "");
		return ret;
	}
	ret = path_trust_dir_chain(fd, BARRIERD_LOCK_DIR, err, errlen);
	if (!ret && fstat(fd, &st))
		ret = -errno;
	/* Not even root's sticky: whoever could create a name there could squat a lock. */
	if (!ret && (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))) {
		snprintf(err, errlen,
			 "refusing %s: owned by uid %u with mode %04o; it must be root's and "
			 "writable by root only",
			 BARRIERD_LOCK_DIR, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		ret = -EPERM;
	}
	/*
	 * Trusted, now make it 0700: we created it so, but an existing one may be looser (the
	 * systemd unit's RuntimeDirectoryMode=0755 applies to it too, at every service start),
	 * and which inodes are served, by whom, is nobody else's business.  fchmod needs a
	 * real descriptor, not O_PATH; the directory is the one just checked.
	 */
	if (!ret && (st.st_mode & 07777) != 0700) {
		int rfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (rfd < 0 || fchmod(rfd, 0700)) {
			ret = -errno;
			snprintf(err, errlen, "cannot make %s 0700 (it is %04o): %s",
				 BARRIERD_LOCK_DIR, (unsigned)(st.st_mode & 07777), strerror(-ret));
		}
		if (rfd >= 0)
			close(rfd);
	}
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

/*
 * Remove the lock files of inodes nobody serves.  The clean stop cannot remove its own (the
 * sandbox forbids unlinking), and a state file that is removed or replaced leaves the lock of
 * its dead inode behind: without this, one file per state-file inode ever served accumulates.
 * A file is removed only while we hold its lock, and every locker checks after locking that
 * the name still names its file (names_fd), retrying otherwise; a locker that meets our lock
 * in the microseconds we hold it retries too (lock_inode).  Only names of our pattern, only
 * regular files with one link.
 */
static void collect_stale_locks(int lock_dfd, const char *keep)
{
	int dfd = openat(lock_dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *e;
	DIR *dir;

	if (dfd < 0)
		return;
	dir = fdopendir(dfd);
	if (!dir) {
		close(dfd);
		return;
	}
	while ((e = readdir(dir))) {
		struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
		unsigned int maj, min;
		unsigned long long ino;
		struct stat st;
		int n = 0, fd;

		if (sscanf(e->d_name, "dev-%u:%u-ino-%llu.lock%n", &maj, &min, &ino, &n) != 3 ||
		    n == 0 || e->d_name[n] || strcmp(e->d_name, keep) == 0)
			continue;
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		fd =
		    openat(dfd, e->d_name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
		    fcntl(fd, F_OFD_SETLK, &fl) == 0 && names_fd(dfd, e->d_name, fd))
			unlinkat(dfd, e->d_name, 0);
		close(fd); /* releases the lock, if taken */
	}
	closedir(dir);
}

/*
 * How long a start keeps trying a per-inode lock that is held: far longer than a stale-lock
 * collection holds one (microseconds, unless its start is preempted), far shorter than
 * anything a refused second daemon would notice.
 */
#define LOCK_RETRY_NS (200 * 1000000ULL)

/*
 * Single instance, per inode: an OFD write lock on a 0600 file named after the state file's
 * (st_dev, st_ino), in a directory only root (or we) can write.  No user can open that file,
 * so no user can hold its lock; a second daemon reaching the same inode under another name (a
 * bind mount) finds it held.  Nothing locks the state file itself: it is world-readable, and a
 * lock any reader can take is a lock any reader can squat.  Our pid goes into the file, so that
 * a refused start can say who holds it.
 */
static int lock_inode(struct state_file *sf, int state_dfd, const struct stat *st, char *err,
		      size_t errlen)
{
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	char dir_name[PATH_MAX], lock_path[PATH_MAX + NAME_MAX + 2], who[128];
	const char *name = sf->inode_lock_name;
	char pid[32];
	uint64_t deadline;
	int ret = 0, n;

	sf->lock_dfd = open_lock_dir(state_dfd, dir_name, sizeof(dir_name), err, errlen);
	if (sf->lock_dfd < 0) {
		ret = sf->lock_dfd;
		sf->lock_dfd = -1;
		return ret;
	}
	state_file_inode_lock_name(sf->inode_lock_name, sizeof(sf->inode_lock_name),
				   (unsigned long long)st->st_dev, (unsigned long long)st->st_ino);
	snprintf(lock_path, sizeof(lock_path), "%s/%s", dir_name, name);
	collect_stale_locks(sf->lock_dfd, name);
	/*
	 * Retried when the name stopped naming the file we locked (another start unlinked it
	 * while holding its lock), and for up to LOCK_RETRY_NS when the lock is held:
	 * collect_stale_locks of another start holds an unused one for microseconds, but that
	 * start can be preempted while it holds it.  Every lock call stays non-blocking (a
	 * blocking one would wait for a live daemon forever).
	 */
	deadline = bd_mono_ns() + LOCK_RETRY_NS;
	for (int tries = 0; tries < 1000; tries++) {
		if (sf->inode_lock_fd >= 0)
			close(sf->inode_lock_fd);
		sf->inode_lock_fd = -1;
		ret = refuse_special(sf->lock_dfd, name, "lock file", lock_path, err, errlen);
		if (ret)
			return ret;
		sf->inode_lock_fd =
		    open_or_create(sf->lock_dfd, name, 0600, &sf->inode_lock_created);
		if (sf->inode_lock_fd < 0) {
			ret = sf->inode_lock_fd;
			sf->inode_lock_fd = -1;
			snprintf(err, errlen, "cannot open lock file %s: %s%s", lock_path,
				 strerror(-ret), ret == -ELOOP ? " (a symlink: refused)" : "");
			return ret;
		}
		ret = path_trust_file(sf->inode_lock_fd, "lock file", lock_path, err, errlen);
		if (ret)
			return ret;
		if (fcntl(sf->inode_lock_fd, F_OFD_SETLK, &fl) == 0) {
			if (names_fd(sf->lock_dfd, name, sf->inode_lock_fd)) {
				sf->inode_locked = true;
				break;
			}
			ret = -EAGAIN;
			continue;
		}
		ret = -errno;
		if (ret != -EAGAIN && ret != -EACCES) {
			snprintf(err, errlen, "cannot lock %s: %s", lock_path, strerror(-ret));
			return ret;
		}
		if (bd_mono_ns() >= deadline) {
			lock_holder(sf->inode_lock_fd, who, sizeof(who));
			snprintf(err, errlen,
				 "%s %s %s (under another name?): it holds the lock %s", who,
				 strncmp(who, "another barrierd", 16) == 0 ? "already serves"
									   : "blocks",
				 sf->path, lock_path);
			return ret;
		}
		usleep(2000);
	}
	if (ret) {
		snprintf(err, errlen, "cannot lock %s: it was removed again and again", lock_path);
		return ret;
	}
	fchmod(sf->inode_lock_fd, 0600);
	n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	/* Only a hint for the message above. */
	if (ftruncate(sf->inode_lock_fd, 0) || pwrite(sf->inode_lock_fd, pid, (size_t)n, 0) != n)
		log_warn("cannot write our pid into %s", lock_path);
	return 0;
}

/* The liveness bound of a file's heartbeat, its period sanitised as the library does. */
static uint64_t liveness_ns(uint64_t period)
{
	if (period == 0 || period > BARRIERD_MAX_HEARTBEAT_PERIOD_NS)
		period = BARRIERD_DEFAULT_HEARTBEAT_PERIOD_NS;
	return BARRIERD_LIVENESS_PERIODS * period;
}

/*
 * Is another daemon publishing into this inode right now?  Our locks keep out every daemon
 * that uses the same lock directory, but one that does not (in another mount namespace with
 * its own /run, a daemon of another uid locking in the state file's directory, a pre-release
 * binary that locked the state file itself) takes neither, and resetting its live file would
 * hand its clients our zeros and then our values as its.  The file says whether someone
 * publishes: RUNNING, not STOPPED, and a heartbeat within the liveness bound
 * (include/barrierd.h; the library's own rule).  Then watch it for up to that bound: a
 * heartbeat that moves is a live daemon's (refused, -EBUSY); one that ages past the bound,
 * or a stop, is a dead or stopping daemon's, and the start goes on.  A heartbeat already
 * stale (a SIGKILLed daemon) or later than our clock (not of this boot: never a daemon we
 * share the clock with) delays nothing.  Read-only, and before any byte is written.  No
 * bus guard: the mapping is read-only and is nothing the SIGBUS handler may mark.
 */
static int refuse_live_file(const struct state_file *sf, const struct stat *st, char *err,
			    size_t errlen)
{
	const struct barrierd_header *h;
	uint64_t hb = 0, bound = 0, now;
	bool first = true;
	int ret = 0;

	if ((size_t)st->st_size < sizeof(*h))
		return 0;
	h = mmap(NULL, sizeof(*h), PROT_READ, MAP_SHARED, sf->fd, 0);
	if (h == MAP_FAILED)
		return 0; /* the reset's own mapping reports it */
	for (;;) {
		uint64_t f = bd_load(&h->flags), b = bd_load(&h->heartbeat_ns);

		/* The clock after the loads: a live daemon's heartbeat is never later. */
		bd_lfence();
		now = bd_mono_ns();
		if (!(f & BARRIERD_FLAG_RUNNING) || (f & BARRIERD_FLAG_STOPPED) || b > now)
			break;
		if (first) {
			hb = b;
			bound = liveness_ns(bd_load(&h->heartbeat_period_ns));
			first = false;
			if (now - hb > bound)
				break;
			log_info("%s is marked running with a fresh heartbeat: watching it for up "
				 "to %llu ms before resetting it",
				 sf->path, (unsigned long long)((hb + bound - now) / 1000000));
		} else if (b != hb) {
			snprintf(err, errlen,
				 "another daemon (pid %llu) is publishing into %s (another mount "
				 "namespace, or an older barrierd?); not touching it",
				 (unsigned long long)bd_load(&h->daemon_pid), sf->path);
			ret = -EBUSY;
			break;
		} else if (now - hb > bound) {
			break;
		}
		usleep(2000);
	}
	munmap((void *)h, sizeof(*h));
	return ret;
}

/* Split path into its directory (opened O_PATH) and its last component. */
static int open_parent(const char *path, int *dfd, const char **base, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash) {
		*base = path;
		snprintf(dir, sizeof(dir), ".");
	} else {
		*base = path + (slash - dir) + 1;
		if (slash == dir)
			slash[1] = 0; /* "/name": the root */
		else
			*slash = 0;
	}
	if (!**base || strcmp(*base, ".") == 0 || strcmp(*base, "..") == 0) {
		snprintf(err, errlen, "%s does not name a file", path);
		return -EINVAL;
	}
	*dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*dfd < 0) {
		int e = errno;

		snprintf(err, errlen, "cannot open directory %s: %s", dir, strerror(e));
		return -e;
	}
	/* Everything below is opened through this descriptor: checked once, used as checked. */
	return path_trust_dir_chain(*dfd, dir, err, errlen);
}

/*
 * The first step: sf with no descriptor, the SIGBUS guard installed, and the file's and lock's
 * paths.  Nothing to undo on failure.
 */
static int init_paths(struct state_file *sf, const char *path, uint64_t ncpu, char *err,
		      size_t errlen)
{
	memset(sf, 0, sizeof(*sf));
	sf->fd = sf->lock_fd = sf->inode_lock_fd = sf->dfd = sf->lock_dfd = -1;
	sf->ncpu = ncpu;
	install_sigbus();
	if (strlen(path) >= sizeof(sf->path) - 8) {
		snprintf(err, errlen, "state path too long");
		return -ENAMETOOLONG;
	}
	snprintf(sf->path, sizeof(sf->path), "%s", path);
	snprintf(sf->lock_path, sizeof(sf->lock_path), "%s.lock", path);
	return 0;
}

/* This boot's id, and the file's directory (created if missing, trusted) and name in it. */
static int open_directory(struct state_file *sf, char *err, size_t errlen)
{
	const char *path = sf->path, *base;
	int ret;

	ret = read_boot_id(sf->boot_id);
	if (ret) {
		snprintf(err, errlen, "cannot read /proc/sys/kernel/random/boot_id: %s",
			 strerror(-ret));
		return ret;
	}
	ret = ensure_dir(path, err, errlen);
	if (ret)
		return ret;
	ret = open_parent(path, &sf->dfd, &base, err, errlen);
	if (ret)
		return ret;
	if (strlen(base) > NAME_MAX - 5) {
		snprintf(err, errlen, "state file name too long: %s", base);
		return -ENAMETOOLONG;
	}
	snprintf(sf->base, sizeof(sf->base), "%s", base);
	return 0;
}

/*
 * The lock first: never touch a file that another barrierd of ours is publishing.  A lock on a
 * name another start unlinked (a failed start removes the PATH.lock it created, holding it)
 * guards nothing: lock again.
 */
static int lock_path(struct state_file *sf, char *err, size_t errlen)
{
	const char *path = sf->path;
	char lock_base[NAME_MAX + 8];
	int ret = 0;

	snprintf(lock_base, sizeof(lock_base), "%s.lock", sf->base);
	for (int tries = 0; tries < 3; tries++) {
		if (sf->lock_fd >= 0)
			close(sf->lock_fd);
		sf->lock_fd = -1;
		ret = refuse_special(sf->dfd, lock_base, "lock file", sf->lock_path, err, errlen);
		if (ret)
			return ret;
		sf->lock_fd = open_or_create(sf->dfd, lock_base, 0600, &sf->lock_created);
		if (sf->lock_fd < 0) {
			ret = sf->lock_fd;
			sf->lock_fd = -1;
			snprintf(err, errlen, "cannot open lock file %s: %s%s", sf->lock_path,
				 strerror(-ret), ret == -ELOOP ? " (a symlink: refused)" : "");
			return ret;
		}
		ret = path_trust_file(sf->lock_fd, "lock file", sf->lock_path, err, errlen);
		if (ret)
			return ret;
		if (flock(sf->lock_fd, LOCK_EX | LOCK_NB)) {
			ret = -errno;
			if (ret == -EWOULDBLOCK)
				snprintf(
				    err, errlen,
				    "another barrierd already serves %s (it holds the lock on %s)",
				    path, sf->lock_path);
			else
				snprintf(err, errlen, "cannot lock %s: %s", sf->lock_path,
					 strerror(-ret));
			sf->lock_created = false; /* never unlink a lock someone else holds */
			return ret;
		}
		ret = names_fd(sf->dfd, lock_base, sf->lock_fd) ? 0 : -EAGAIN;
		if (!ret)
			break;
	}
	if (ret) {
		snprintf(err, errlen, "cannot lock %s: it was removed again and again",
			 sf->lock_path);
		return ret;
	}
	fchmod(sf->lock_fd, 0600);
	return 0;
}

/*
 * Under the lock: open (or create) the file, trust it, lock its inode, and refuse a file that
 * is not ours to take (replaced meanwhile, too large, live).  *st: the file as opened.
 */
static int open_file(struct state_file *sf, struct stat *st, char *err, size_t errlen)
{
	const char *path = sf->path, *base = sf->base;
	int ret;

	/* Created by this run or not: only a file this run created is ever removed. */
	ret = refuse_special(sf->dfd, base, "state file", path, err, errlen);
	if (ret)
		return ret;
	sf->fd = open_or_create(sf->dfd, base, 0644, &sf->created);
	if (sf->fd < 0) {
		ret = sf->fd;
		sf->fd = -1;
		snprintf(err, errlen, "cannot open state file %s: %s%s", path, strerror(-ret),
			 ret == -ELOOP ? " (a symlink: refused)" : "");
		return ret;
	}
	/* Before anything is written or chmod'ed: a planted file or a hard link is refused. */
	ret = path_trust_file(sf->fd, "state file", path, err, errlen);
	if (ret)
		return ret;
	if (fstat(sf->fd, st)) {
		ret = -errno;
		snprintf(err, errlen, "cannot stat %s: %s", path, strerror(-ret));
		return ret;
	}
	sf->dev = (unsigned long long)st->st_dev;
	sf->ino = (unsigned long long)st->st_ino;
	/*
	 * The lock file guards the path; this guards the inode, which a bind mount could reach
	 * under another name.
	 */
	ret = lock_inode(sf, sf->dfd, st, err, errlen);
	if (ret)
		return ret;
	/*
	 * Locked: is the name still ours?  A start that failed while we waited for the lock
	 * may have unlinked the file it had created.  Serving a nameless inode would serve
	 * nobody (the heartbeat check would stop us a period later).
	 */
	if (!names_fd(sf->dfd, base, sf->fd) || fstat(sf->fd, st) || st->st_nlink != 1) {
		snprintf(err, errlen, "%s was removed or replaced while the daemon started", path);
		return -ESTALE;
	}
	/*
	 * A misconfigured --state naming a large file of root's (a VM image, a database): never
	 * allocate and zero it.  No file of ours is larger than the layout for the largest CPU
	 * count a reader accepts; one laid out at an earlier boot for more possible CPUs than
	 * now is smaller than that, and is reset as usual (never shrunk).
	 */
	if ((uint64_t)st->st_size > barrierd_file_size(BARRIERD_MAX_CPUS)) {
		snprintf(
		    err, errlen,
		    "refusing state file %s: it holds %lld bytes, more than any barrierd state "
		    "file (%llu at most for %u CPUs); is --state the right file? It is left "
		    "as it was",
		    path, (long long)st->st_size,
		    (unsigned long long)barrierd_file_size(BARRIERD_MAX_CPUS), BARRIERD_MAX_CPUS);
		return -EFBIG;
	}
	ret = refuse_live_file(sf, st, err, errlen);
	if (ret)
		return ret;
	/* Readable by everyone, writable by us only: clients refuse anything looser. */
	if (fchmod(sf->fd, 0644)) {
		ret = -errno;
		snprintf(err, errlen, "cannot chmod %s: %s", path, strerror(-ret));
		return ret;
	}
	return 0;
}

/*
 * Every block of the file before any mapping touches it: on a full file system a sparse file
 * maps, then faults (SIGBUS) in us and in every client that maps it.  Allocating never
 * shrinks a file and changes no byte of it.  On ENOSPC tmpfs undoes what it allocated, but
 * ext4 keeps it and the file may have grown: harmless, the grown range is allocated and reads
 * zero.
 */
static int allocate(struct state_file *sf, const struct stat *st, char *err, size_t errlen)
{
	const char *path = sf->path;
	size_t alloc;
	int ret;

	sf->size = barrierd_file_size(sf->ncpu);
	alloc = (size_t)st->st_size > sf->size ? (size_t)st->st_size : sf->size;
	ret = posix_fallocate(sf->fd, 0, (off_t)alloc);
	if (ret) {
		snprintf(err, errlen, "cannot allocate %zu bytes for %s: %s%s", alloc, path,
			 strerror(ret),
			 sf->created ? " (the new file is removed)"
				     : " (the file is not written or mapped)");
		return -ret;
	}
	return 0;
}

/*
 * Reset the file in place (same inode: old mappings see the zeros), whoever left it: no value
 * of an earlier run is carried over (DESIGN rule 9).  A daemon killed half-way, a writer that
 * came after a stop, a container with a fixed boot id: none of their values can be told from
 * ours by looking at the file, and zeros only delay.  The reason is logged for whoever wonders
 * whose file it was.  size: the file's size as found (0: new, nothing to reset).
 */
static int reset_found(struct state_file *sf, size_t size, char *err, size_t errlen)
{
	const char *path = sf->path, *why;
	bool interrupted = false;
	uint8_t *map;
	uint64_t now;
	int ret;

	if (!size)
		return 0;
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, sf->fd, 0);
	if (map == MAP_FAILED) {
		ret = -errno;
		snprintf(err, errlen, "cannot map %s: %s", path, strerror(-ret));
		return ret;
	}
	bus_guard_set(map, size, sf->fd, sf->path);
	/* The clock after the loads: a value of ours can never look later than it. */
	bd_lfence();
	now = bd_mono_ns();
	why = foreign_reason(sf, map, size, now, &interrupted);
	/* An interrupted write of ours is an ordinary kill: no warning for it. */
	if (why)
		log_msg(interrupted ? LOG_LVL_INFO : LOG_LVL_WARN,
			"resetting %s: %s; every time field zeroed, stopped flag set", path, why);
	else
		log_info("%s: left by an earlier daemon of ours; times restart from zero, vtime "
			 "above every value it held",
			 path);
	reset_words(map, size, sf->ncpu);
	bus_guard_set(NULL, 0, -1, NULL);
	munmap(map, size);
	return 0;
}

/*
 * Map the file at its layout's size, and lay it out if it is new or was just reset (stopped
 * until setup completes).  size: the file's size as found.
 */
static int map_layout(struct state_file *sf, size_t size, char *err, size_t errlen)
{
	const char *path = sf->path;
	uint8_t *map;
	int ret;

	/*
	 * Grow if needed (allocate() already did), never shrink: a reader mapping the old size
	 * would fault.
	 */
	if (size < sf->size && ftruncate(sf->fd, (off_t)sf->size)) {
		ret = -errno;
		snprintf(err, errlen, "cannot size %s: %s", path, strerror(-ret));
		return ret;
	}
	map = mmap(NULL, sf->size, PROT_READ | PROT_WRITE, MAP_SHARED, sf->fd, 0);
	if (map == MAP_FAILED) {
		ret = -errno;
		snprintf(err, errlen, "cannot map %s: %s", path, strerror(-ret));
		return ret;
	}
	bus_guard_set(map, sf->size, sf->fd, sf->path);
	sf->hdr = (void *)map;
	sf->ext = (void *)(map + barrierd_ext_offset(sf->ncpu));
	if (sf->hdr->magic != BARRIERD_MAGIC) {
		/* New, or just reset: lay it out, stopped until setup completes. */
		bd_store(&sf->hdr->flags, BARRIERD_FLAG_STOPPED);
		write_layout(sf);
	}
	return 0;
}

int state_file_open(struct state_file *sf, const char *path, uint64_t ncpu, char *err,
		    size_t errlen)
{
	struct stat st;
	int ret;

	ret = init_paths(sf, path, ncpu, err, errlen);
	if (ret)
		return ret;
	ret = open_directory(sf, err, errlen);
	if (!ret)
		ret = lock_path(sf, err, errlen);
	if (!ret)
		ret = open_file(sf, &st, err, errlen);
	if (!ret)
		ret = allocate(sf, &st, err, errlen);
	if (!ret)
		ret = reset_found(sf, (size_t)st.st_size, err, errlen);
	if (!ret)
		ret = map_layout(sf, (size_t)st.st_size, err, errlen);
	if (ret) {
		/* Nothing this run created stays: a failed start leaves what it found, reset or
		 * not. */
		state_file_discard(sf);
		state_file_close(sf);
	}
	return ret;
}

int state_file_check(struct state_file *sf)
{
	struct stat fst, pst;

	if (sf->fault)
		return sf->fault == STATE_FILE_TRUNCATED ? -EIO : -ESTALE;
	if (sf->fd < 0 || fstat(sf->fd, &fst))
		return 0; /* cannot tell now: the next heartbeat tries again */
	/* Shorter than what we map: the next access past its end faults.  Never touch it again. */
	if ((size_t)fst.st_size < sf->size) {
		sf->fault = STATE_FILE_TRUNCATED;
		log_err("state file %s was truncated to %lld bytes (the daemon maps %zu): stopping "
			"without writing to it beyond its flags",
			sf->path, (long long)fst.st_size, sf->size);
		return -EIO;
	}
	/* The name, afresh: clients that open the path from now on get whatever it names. */
	if (fstatat(AT_FDCWD, sf->path, &pst, AT_SYMLINK_NOFOLLOW)) {
		if (errno != ENOENT && errno != ENOTDIR)
			return 0;
		sf->fault = STATE_FILE_GONE;
		log_err("state file %s was removed (inode %llu has no name there any more): "
			"stopping",
			sf->path, (unsigned long long)fst.st_ino);
		return -ESTALE;
	}
	if (pst.st_dev != fst.st_dev || pst.st_ino != fst.st_ino) {
		sf->fault = STATE_FILE_GONE;
		log_err("state file %s was replaced (inode %llu → %llu): stopping; the new file is "
			"someone else's and is left alone",
			sf->path, (unsigned long long)fst.st_ino, (unsigned long long)pst.st_ino);
		return -ESTALE;
	}
	return 0;
}

void state_file_stop_truncated(struct state_file *sf)
{
	struct stat st;

	/*
	 * Whatever is left is ours, but nothing in it can be vouched for: no snapshot, no
	 * heartbeat, no reset (every store past the end would fault).  The stopped flag only,
	 * where page 0 still holds it, so that readers of what remains trust none of it.  A
	 * second truncation racing this is the SIGBUS handler's.
	 */
	if (!sf->hdr || fstat(sf->fd, &st) ||
	    (size_t)st.st_size < offsetof(struct barrierd_header, flags) + 8)
		return;
	state_flags_update(&sf->hdr->flags, BARRIERD_FLAGS_STATE_MASK, BARRIERD_FLAG_STOPPED);
}

/* Unlink name in dfd if it still names the file open as fd (which we hold locked). */
static void unlink_ours(int dfd, const char *name, int fd, const char *what)
{
	if (dfd < 0 || fd < 0 || !names_fd(dfd, name, fd))
		return;
	if (unlinkat(dfd, name, 0))
		log_warn("cannot remove the %s %s: %m", what, name);
}

void state_file_discard(struct state_file *sf)
{
	char lock_base[NAME_MAX + 8];

	/*
	 * The state file first, while both locks are held: a start that opened it meanwhile
	 * finds its name gone once it gets the lock, and starts over.  Then the lock files,
	 * each while still locked (the lockers check the name after locking).
	 */
	if (sf->created && sf->inode_locked) /* else another daemon may serve it already */
		unlink_ours(sf->dfd, sf->base, sf->fd, "state file");
	/*
	 * Only a per-inode lock file we created *and* hold: lock_inode may create it at a later
	 * try and then find it locked by another start, whose lock it is from then on.
	 */
	if (sf->inode_lock_created && sf->inode_locked)
		unlink_ours(sf->lock_dfd, sf->inode_lock_name, sf->inode_lock_fd, "lock file");
	snprintf(lock_base, sizeof(lock_base), "%s.lock", sf->base);
	if (sf->lock_created)
		unlink_ours(sf->dfd, lock_base, sf->lock_fd, "lock file");
	sf->created = sf->inode_lock_created = sf->lock_created = false;
}

/* Wake every time word, and the flags word, so that every waiter re-reads the file. */
static void wake_all(struct state_file *sf)
{
	struct barrierd_header *h = sf->hdr;

	futex_wake_word(&h->flags);
	futex_wake_word(&h->last_interrupt_ns);
	futex_wake_word(&h->last_interrupt_vtime);
	for (uint64_t c = 0; c < sf->ncpu; c++) {
		futex_wake_word(&h->per_cpu[c].last_interrupt_ns);
		futex_wake_word(&h->per_cpu[c].last_interrupt_vtime);
	}
}

void state_file_set_stopped(struct state_file *sf, uint64_t g_ns, uint64_t g_vt)
{
	struct barrierd_header *h = sf->hdr;

	/*
	 * The snapshot before the flag (TSO keeps the order): a reader that sees the flag sees
	 * the snapshot, and trusts no value above it from then on.  It is what *we* published:
	 * the file's words may have been raised by another writer since our last check, and
	 * taking them would hand that writer's values to every reader.  The caller checked the
	 * file (publisher_check) just before: a difference resets it instead.
	 */
	bd_store(&sf->ext->stop_ns, g_ns);
	bd_store(&sf->ext->stop_vtime, g_vt);
	bd_store(&h->heartbeat_ns, bd_mono_ns());
	state_flags_update(&h->flags, BARRIERD_FLAGS_STATE_MASK, BARRIERD_FLAG_STOPPED);
	/* Values are unchanged: the wakes only make waiters re-check and see the flag. */
	wake_all(sf);
}

void state_file_reset_foreign(struct state_file *sf)
{
	/*
	 * The words are not ours any more, and nothing tells which are: zero them, as for a file
	 * from another boot.  Readers of the original layout are then no longer released by the
	 * foreign values (they may have been between the write and our check: that window is
	 * the other writer's doing), ours trust nothing (stopped, zero snapshot), and the next
	 * daemon finds no magic (it resets every file anyway).  The heartbeat is zeroed too.
	 */
	log_err("%s was written by another process: resetting it (every time zeroed, stopped)",
		sf->path);
	reset_words((uint8_t *)sf->hdr, sf->size, sf->ncpu);
	wake_all(sf);
}

void state_file_close(struct state_file *sf)
{
	if (sf->hdr) {
		bus_guard_set(NULL, 0, -1, NULL);
		munmap(sf->hdr, sf->size);
	}
	sf->hdr = NULL;
	sf->ext = NULL;
	if (sf->fd >= 0)
		close(sf->fd);
	if (sf->inode_lock_fd >= 0)
		close(sf->inode_lock_fd); /* releases the OFD lock (the last descriptor) */
	if (sf->lock_fd >= 0)
		close(sf->lock_fd); /* releases the flock */
	if (sf->dfd >= 0)
		close(sf->dfd);
	if (sf->lock_dfd >= 0)
		close(sf->lock_dfd);
	sf->fd = sf->lock_fd = sf->inode_lock_fd = sf->dfd = sf->lock_dfd = -1;
}
