// SPDX-License-Identifier: MIT
#include "state_file.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

uint64_t mono_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int futex_wake_word(uint64_t *word)
{
	/* Low 32 bits of a little-endian 64-bit word are its first four bytes. */
	return (int)syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
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
	ssize_t n;
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	int k = 0;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 32)
		return -EIO;
	buf[n] = 0;
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

/* Why the file cannot be adopted as is, or NULL when it is ours from this boot. */
static const char *foreign_reason(const struct state_file *sf, const uint8_t *map, size_t size)
{
	const struct barrierd_header *h = (const void *)map;
	const struct barrierd_ext *x;

	if (size < sizeof(*h))
		return size ? "too short for a barrierd header" : NULL;
	if (h->magic != BARRIERD_MAGIC)
		return "no barrierd magic (written by the original barrierd, or not ours)";
#ifndef BARRIERD_MUTANT_NO_BOOT_RESET /* mutant for tests/audit: breaks the reboot rule */
	if (memcmp(h->boot_id, sf->boot_id, 16) != 0)
		return "written during another boot";
#endif
	if (h->abi_major != BARRIERD_ABI_MAJOR || h->header_size != sizeof(*h) ||
	    h->cpu_stride != sizeof(struct barrierd_cpu) || h->ncpu != sf->ncpu ||
	    h->ext_offset != barrierd_ext_offset(sf->ncpu) || size < barrierd_file_size(sf->ncpu))
		return "another layout or CPU count";
	/*
	 * Ours, this boot.  Every per-CPU time we publish precedes the heartbeat stored after it,
	 * every per-CPU vtime is at most the file's vtime, each global is at most every per-CPU
	 * value (it is their minimum, published after them), and a clean stop left the globals in
	 * the stop snapshot.  Anything else was written by someone else (or we died mid-pass):
	 * not evidence we can vouch for.
	 */
	x = (const void *)(map + barrierd_ext_offset(sf->ncpu));
	for (uint64_t c = 0; c < sf->ncpu; c++)
		if (h->per_cpu[c].last_interrupt_ns > h->heartbeat_ns ||
		    h->per_cpu[c].last_interrupt_vtime > h->vtime ||
		    h->last_interrupt_ns > h->per_cpu[c].last_interrupt_ns ||
		    h->last_interrupt_vtime > h->per_cpu[c].last_interrupt_vtime)
			return "holds values this daemon did not publish";
	if ((h->flags & BARRIERD_FLAG_STOPPED) &&
	    (h->last_interrupt_ns != x->stop_ns || h->last_interrupt_vtime != x->stop_vtime))
		return "changed after its daemon stopped";
	return NULL;
}

/*
 * Reset a foreign file in place, with single aligned stores in an order that is safe at every
 * step for a reader that still maps it:
 *  1. vtime first, raised above every vtime word, so a vtime stamp taken from now on is above
 *     every value still in the file (zeroing it first would let an old value pass a 0 stamp);
 *  2. the global words, then everything else but ncpu (a reader of the original layout walks
 *     per_cpu[0..ncpu): a zero ncpu would make its walk pass vacuously);
 *  3. the stopped flag, with a zero stop snapshot: our readers trust nothing until a daemon
 *     runs again.  Zero times are always safe: they only delay.
 */
static void reset_words(uint8_t *map, size_t size)
{
	struct barrierd_header *h = (void *)map;
	uint64_t maxv = 0;

	if (size < 32)
		goto rest;
	for (size_t off = 8; off + 8 <= size; off += 8) {
		/* vtime words: the header's two and the second word of each 16-byte entry */
		if (off == 8 || off == 24 || (off >= sizeof(*h) && (off - sizeof(*h)) % 16 == 8)) {
			uint64_t v = load64((uint64_t *)(map + off));

			maxv = v > maxv ? v : maxv;
		}
	}
	pub64(&h->vtime, maxv + 1);
	pub64(&h->last_interrupt_ns, 0);
	pub64(&h->last_interrupt_vtime, 0);
rest:
	for (size_t off = 16; off + 8 <= size; off += 8)
		pub64((uint64_t *)(map + off), 0);
	if (size >= sizeof(*h))
		pub64(&h->flags, BARRIERD_FLAG_STOPPED);
}

static void write_layout(struct state_file *sf)
{
	struct barrierd_header *h = sf->hdr;
	uint64_t boot[2];

	memcpy(boot, sf->boot_id, 16);
	pub64(&h->ncpu, sf->ncpu);
	/* Sizes and version before the magic: a reader that sees the magic sees a whole layout. */
	h->abi_major = BARRIERD_ABI_MAJOR;
	h->abi_minor = BARRIERD_ABI_MINOR;
	h->header_size = sizeof(*h);
	h->cpu_stride = sizeof(struct barrierd_cpu);
	pub64((uint64_t *)h->boot_id, boot[0]);
	pub64((uint64_t *)(h->boot_id + 8), boot[1]);
	pub64(&h->ext_offset, barrierd_ext_offset(sf->ncpu));
	pub64(&sf->ext->ext_size, sf->size - barrierd_ext_offset(sf->ncpu)); /* what we map */
	sf->ext->ext_header_size = sizeof(struct barrierd_ext);
	sf->ext->ext_cpu_stride = sizeof(struct barrierd_ext_cpu);
	pub64(&h->magic, BARRIERD_MAGIC);
}

int state_file_open(struct state_file *sf, const char *path, uint64_t ncpu, char *err,
		    size_t errlen)
{
	struct stat st;
	uint8_t *map;
	const char *why;
	int ret;

	memset(sf, 0, sizeof(*sf));
	sf->fd = sf->lock_fd = -1;
	sf->ncpu = ncpu;
	if (strlen(path) >= sizeof(sf->path) - 8) {
		snprintf(err, errlen, "state path too long");
		return -ENAMETOOLONG;
	}
	snprintf(sf->path, sizeof(sf->path), "%s", path);
	snprintf(sf->lock_path, sizeof(sf->lock_path), "%s.lock", path);
	ret = read_boot_id(sf->boot_id);
	if (ret) {
		snprintf(err, errlen, "cannot read /proc/sys/kernel/random/boot_id: %s",
			 strerror(-ret));
		return ret;
	}
	ret = ensure_dir(path, err, errlen);
	if (ret)
		return ret;

	/* The lock first: never touch a file that another barrierd of ours is publishing. */
	sf->lock_fd = open(sf->lock_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (sf->lock_fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open lock file %s: %s%s", sf->lock_path,
			 strerror(-ret), ret == -ELOOP ? " (a symlink: refused)" : "");
		goto fail;
	}
	if (fstat(sf->lock_fd, &st) || !S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		snprintf(err, errlen, "lock file %s is not a regular file", sf->lock_path);
		goto fail;
	}
	if (flock(sf->lock_fd, LOCK_EX | LOCK_NB)) {
		ret = -errno;
		if (ret == -EWOULDBLOCK)
			snprintf(err, errlen,
				 "another barrierd already serves %s (it holds the lock on %s)",
				 path, sf->lock_path);
		else
			snprintf(err, errlen, "cannot lock %s: %s", sf->lock_path, strerror(-ret));
		goto fail;
	}
	fchmod(sf->lock_fd, 0600);

	sf->fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (sf->fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open state file %s: %s%s", path, strerror(-ret),
			 ret == -ELOOP ? " (a symlink: refused)" : "");
		goto fail;
	}
	if (fstat(sf->fd, &st) || !S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		snprintf(err, errlen, "state file %s is not a regular file", path);
		goto fail;
	}
	/*
	 * The lock file guards the path; this guards the inode, which a hard link or a bind
	 * mount could reach under another name.
	 */
	{
		struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};

		if (fcntl(sf->fd, F_OFD_SETLK, &fl)) {
			ret = -errno;
			snprintf(err, errlen, "another barrierd already writes %s (under another name)",
				 path);
			goto fail;
		}
	}
	/* Readable by everyone, writable by us only: clients refuse anything looser. */
	if (fchmod(sf->fd, 0644)) {
		ret = -errno;
		snprintf(err, errlen, "cannot chmod %s: %s", path, strerror(-ret));
		goto fail;
	}

	/* Reset a foreign file in place (same inode: old mappings see the zeros). */
	if (st.st_size > 0) {
		map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, sf->fd, 0);
		if (map == MAP_FAILED) {
			ret = -errno;
			snprintf(err, errlen, "cannot map %s: %s", path, strerror(-ret));
			goto fail;
		}
		why = foreign_reason(sf, map, (size_t)st.st_size);
		if (why) {
			log_warn("resetting %s: %s; every time field zeroed, stopped flag set", path,
				 why);
			reset_words(map, (size_t)st.st_size);
		}
		munmap(map, (size_t)st.st_size);
	}

	/* Grow if needed, never shrink: a reader mapping the old size would fault. */
	sf->size = barrierd_file_size(ncpu);
	if ((size_t)st.st_size < sf->size && ftruncate(sf->fd, (off_t)sf->size)) {
		ret = -errno;
		snprintf(err, errlen, "cannot size %s: %s", path, strerror(-ret));
		goto fail;
	}
	map = mmap(NULL, sf->size, PROT_READ | PROT_WRITE, MAP_SHARED, sf->fd, 0);
	if (map == MAP_FAILED) {
		ret = -errno;
		snprintf(err, errlen, "cannot map %s: %s", path, strerror(-ret));
		goto fail;
	}
	sf->hdr = (void *)map;
	sf->ext = (void *)(map + barrierd_ext_offset(ncpu));
	if (sf->hdr->magic != BARRIERD_MAGIC) {
		/* New, or just reset: lay it out, stopped until setup completes. */
		pub64(&sf->hdr->flags, BARRIERD_FLAG_STOPPED);
		write_layout(sf);
	}
	return 0;
fail:
	state_file_close(sf);
	return ret;
}

void state_file_set_stopped(struct state_file *sf)
{
	struct barrierd_header *h = sf->hdr;
	uint64_t f = load64(&h->flags);

	/*
	 * The snapshot before the flag (TSO keeps the order): a reader that sees the flag sees
	 * the snapshot, and trusts no value above it from then on.  The heartbeat too: every
	 * per-CPU time we published precedes it, which the next daemon checks.
	 */
	pub64(&sf->ext->stop_ns, load64(&h->last_interrupt_ns));
	pub64(&sf->ext->stop_vtime, load64(&h->last_interrupt_vtime));
	pub64(&h->heartbeat_ns, mono_now_ns());
	pub64(&h->flags, (f & ~BARRIERD_FLAGS_STATE_MASK) | BARRIERD_FLAG_STOPPED);
	/* Values are unchanged: the wakes only make waiters re-check and see the flag. */
	futex_wake_word(&h->last_interrupt_ns);
	futex_wake_word(&h->last_interrupt_vtime);
	for (uint64_t c = 0; c < sf->ncpu; c++) {
		futex_wake_word(&h->per_cpu[c].last_interrupt_ns);
		futex_wake_word(&h->per_cpu[c].last_interrupt_vtime);
	}
}

void state_file_close(struct state_file *sf)
{
	if (sf->hdr)
		munmap(sf->hdr, sf->size);
	sf->hdr = NULL;
	sf->ext = NULL;
	if (sf->fd >= 0)
		close(sf->fd);
	if (sf->lock_fd >= 0)
		close(sf->lock_fd); /* releases the flock */
	sf->fd = sf->lock_fd = -1;
}
