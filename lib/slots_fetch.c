// SPDX-License-Identifier: MIT
/*
 * Fetching the daemon's slots (docs/PROTOCOL.md §6.12, DESIGN rule 11): connect to the socket
 * beside the state file, receive the frozen slots map and the sched_switch link, check what was
 * received, map the slots read-only, and keep every descriptor until the set is released
 * (lib/direct_sets.c: once its daemon is gone and no call reads it, or at barrierd_close()).
 *
 * What makes a received set trustworthy: the socket is found through the state file's trusted
 * directory and is a trusted owner's; the peer is root (or the trusted uid); the map is a
 * frozen BPF_F_MMAPABLE array of 64-byte slots, one per CPU of the file; and a link is a raw
 * tracepoint link on sched_switch.  fdinfo cannot tie the map to that link's program: the
 * daemon's anchor does (recv_anchor, PROTOCOL §6.12), checked whenever one comes; without one
 * that rests on the peer (root, or the uid the caller trusts for its file).  A handle whose file
 * owner is unmapped (bd_open_relayed) cannot judge owners or peers at all and takes only
 * anchored sets.  A memfd or a writable map handed over by anyone else fails those checks.  Holding
 * the links is what keeps the programs attached, and so the idle words live, for as long as the
 * slots can be read (CLIENT-EVIDENCE §2).
 */
#include "bpf_obj.h"
#include "direct.h"
#include "handle.h"
#include "slots_fetch.h"
#include "timens.h"
#include "trust.h"
#include "bd_scm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define FETCH_TIMEOUT_US 50000 /* the daemon replies at once, unless flooded */
/* Between two attempts of one handle: 100 ms after a success, doubling after failures. */
#define FETCH_RETRY_NS (100 * 1000000ULL)
#define FETCH_RETRY_MAX_NS (10 * 1000000000ULL)
#define RELAY_VERIFY_ATTEMPTS 4

/* The value of "key:\t..." in /proc/self/fdinfo/fd, or -1; lines are short. */
static int fdinfo(int fd, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return -errno;
	n = read(f, buf, len - 1);
	close(f);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	return 0;
}

/* Does fdinfo text hold the line "key:\tvalue" exactly? */
static bool has_line(const char *text, const char *key, const char *value)
{
	char want[128];
	size_t n = (size_t)snprintf(want, sizeof(want), "%s:\t%s\n", key, value);

	for (const char *p = text; (p = strstr(p, want)); p++)
		if (p == text || p[-1] == '\n')
			return n < sizeof(want);
	return false;
}

/* The number after "key:\t" in fdinfo text, or 0. */
static uint64_t fdinfo_u64(const char *text, const char *key)
{
	char want[64];
	const char *p;

	snprintf(want, sizeof(want), "\n%s:\t", key);
	p = strstr(text, want);
	return p ? strtoull(p + strlen(want), NULL, 10) : 0;
}

static void close_fds(const int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		close(fds[i]);
}

static int check_map(int fd, uint64_t ncpu)
{
	char text[1024], n[32];

	if (fdinfo(fd, text, sizeof(text)))
		return -EPROTO;
	snprintf(n, sizeof(n), "%llu", (unsigned long long)ncpu);
	/* 2: BPF_MAP_TYPE_ARRAY; 0x400: BPF_F_MMAPABLE alone (no BPF_F_RDONLY_PROG tricks). */
	if (!has_line(text, "map_type", "2") || !has_line(text, "value_size", "64") ||
	    !has_line(text, "key_size", "4") || !has_line(text, "max_entries", n) ||
	    !has_line(text, "map_flags", "0x400") || !has_line(text, "frozen", "1"))
		return -EPROTO;
	return 0;
}

/*
 * A raw tracepoint link (tp_btf links are too); *sw set if it is on sched_switch, and *sw_prog
 * to its program's id.
 */
static int check_link(int fd, bool *sw, uint64_t *sw_prog)
{
	char text[1024];

	if (fdinfo(fd, text, sizeof(text)) || !has_line(text, "link_type", "raw_tracepoint"))
		return -EPROTO;
	if (has_line(text, "tp_name", "sched_switch")) {
		*sw = true;
		*sw_prog = fdinfo_u64(text, "prog_id");
	}
	return 0;
}

/*
 * The anchor record that follows the reply on the same connection (PROTOCOL §6.12): 1 and *a
 * if one came and the kernel vouches for it (lib/anchor.c, and frozen: no system call writes
 * it), 0 if none came (a daemon without one), -EPROTO if what came is no anchor.  Its
 * descriptors are closed here: the record is all a client keeps.
 */
static int recv_anchor(int s, struct barrierd_anchor *a)
{
	struct barrierd_anchor_msg m;
	int fds[2], ret;
	unsigned nfds;
	char text[1024];
	ssize_t n;

	n = bd_scm_recv(s, &m, sizeof(m), fds, 2, &nfds);
	if (n <= 0 && n != -EPROTO)
		return 0; /* closed after the reply, or nothing within the timeout */
	ret = -EPROTO;
	/*
	 * Each descriptor is what it claims to be before the kernel is asked about it:
	 * BPF_OBJ_GET_INFO_BY_FD on a map fills a map's record, and a map type can share the
	 * syscall program type's number (a user ring buffer's is 31 too).  fdinfo names the
	 * kind: "prog_type" for a program, "map_type" for a map (31: BPF_PROG_TYPE_SYSCALL, 2:
	 * BPF_MAP_TYPE_ARRAY, asserted in lib/anchor.c).
	 */
	if (n == (ssize_t)sizeof(m) && m.magic == BARRIERD_ANCHOR_MAGIC && m.nfds == 2 &&
	    nfds == 2 && fdinfo(fds[0], text, sizeof(text)) == 0 &&
	    has_line(text, "prog_type", "31") && fdinfo(fds[1], text, sizeof(text)) == 0 &&
	    has_line(text, "map_type", "2") && has_line(text, "frozen", "1") &&
	    bd_anchor_read(fds[0], fds[1], a) == 0)
		ret = 1;
	close_fds(fds, nfds);
	return ret;
}

/* Connect to path+suffix through the trusted directory; the socket fd or -errno. */
static int connect_trusted(const struct barrierd *b)
{
	char name[PATH_MAX], via[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *base;
	struct timeval tv = {0, FETCH_TIMEOUT_US};
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	struct stat st;
	int dfd, s, ret;

	if (!b->path || snprintf(name, sizeof(name), "%s%s", b->path,
				 BARRIERD_SLOTS_SOCKET_SUFFIX) >= (int)sizeof(name))
		return -ENAMETOOLONG;
	/*
	 * A handle trusted through the anchor alone cannot tell who owns the socket or who
	 * answers (its owners are unmapped): whoever it is, only an anchor the kernel vouches
	 * for, naming what was sent, gets a set accepted (fetch).
	 */
	if (b->relay_only)
		ret = bd_open_dir(name, &dfd, &base);
	else
		ret = bd_open_trusted_dir(name, b->trusted_uid, b->trusted_uid_set, &dfd, &base);
	if (ret)
		return ret;
	/*
	 * Through the directory we checked, not the name again; the socket must be a trusted
	 * owner's (nobody else can create one in that directory, but say so).
	 */
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) || !S_ISSOCK(st.st_mode) ||
	    (!b->relay_only && !bd_owner_trusted(st.st_uid, b->trusted_uid, b->trusted_uid_set)) ||
	    snprintf(via, sizeof(via), "/proc/self/fd/%d/%s", dfd, base) >= (int)sizeof(via)) {
		close(dfd);
		return -EPERM;
	}
	memcpy(sa.sun_path, via, sizeof(via));
	/*
	 * Non-blocking connect: a backlog kept full (by anyone) fails at once with EAGAIN
	 * instead of blocking the open or the wait; the reply is then awaited for at most
	 * FETCH_TIMEOUT_US.
	 */
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0) {
		ret = -errno;
		close(dfd);
		return ret;
	}
	ret = connect(s, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	close(dfd);
	if (!ret &&
	    (fcntl(s, F_SETFL, 0) || setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))))
		ret = -errno;
	/* The peer is the daemon (root), or the uid the caller trusts for its file. */
	if (!ret && !b->relay_only &&
	    (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &cl) ||
	     !bd_owner_trusted(cred.uid, b->trusted_uid, b->trusted_uid_set)))
		ret = -EPERM;
	if (ret) {
		close(s);
		return ret;
	}
	return s;
}

/*
 * Receive, check and map one set for the file mapped at h; 0 and *out (and the anchor in
 * *anchor_out, if one came and anchor_out is not NULL), or -errno with nothing left open.
 */
static int fetch(const struct barrierd *b, const struct barrierd_header *h, struct bd_direct **out,
		 struct barrierd_anchor *anchor_out)
{
	struct barrierd_anchor anchor;
	uint64_t sw_prog = 0;
	int anchored = 0;
	struct barrierd_slots_msg m;
	struct bd_direct *d;
	unsigned nfds = 0;
	bool sw = false;
	ssize_t n;
	long page = sysconf(_SC_PAGESIZE);
	void *map;
	int s, ret;

	s = connect_trusted(b);
	if (s < 0)
		return s;
	d = calloc(1, sizeof(*d));
	if (!d) {
		close(s);
		return -ENOMEM;
	}
	/* Every descriptor that arrived is ours to close, whatever else is wrong (d->fds). */
	n = bd_scm_recv(s, &m, sizeof(m), d->fds, 1 + BARRIERD_SLOTS_MAX_LINKS, &nfds);
	ret = n < 0 ? (int)n : 0;
	if (!ret)
		anchored = recv_anchor(s, &anchor);
	close(s);
	d->nfds = nfds;
	if (!ret && (n != (ssize_t)sizeof(m) || m.magic != BARRIERD_SLOTS_MAGIC ||
		     m.slot_abi != BARRIERD_SLOT_ABI ||
		     m.slot_size != sizeof(struct barrierd_slot) || m.ncpu != b->ncpu ||
		     m.nlinks < 1 || m.nlinks > BARRIERD_SLOTS_MAX_LINKS || nfds != 1 + m.nlinks))
		ret = -EPROTO;
	if (!ret)
		ret = check_map(d->fds[0], b->ncpu);
	for (unsigned i = 1; !ret && i < nfds; i++)
		ret = check_link(d->fds[i], &sw, &sw_prog);
	if (!ret && !sw)
		ret =
		    -EPROTO; /* without the sched_switch link, nothing keeps the idle words live */
	/*
	 * The anchor (PROTOCOL §6.12), checked whenever one comes: it binds the set to this run.
	 * Its generation is this file's now (not an earlier run's anchor, relayed), the file is
	 * the one we map, the map is the one its sched_switch program writes (not a map an
	 * earlier run left, whose programs are gone), and the link runs that program.  A handle
	 * that trusts its file through the anchor alone takes no set without one.
	 */
	if (!ret && anchored < 0)
		ret = -EPROTO;
	if (!ret && !anchored && b->relay_only)
		ret = -EPERM;
	/* Each descriptor's identity, for the anchor's map id and for the release. */
	for (unsigned i = 0; !ret && i < nfds; i++)
		if (bd_obj_head(d->fds[i], d->ids[i]) || !d->ids[i][1])
			ret = -EPROTO;
	if (!ret && anchored > 0 &&
	    (anchor.generation != bd_load(&h->generation) || anchor.file_dev != b->dev ||
	     anchor.file_ino != b->ino || anchor.slots_map_id != d->ids[0][1] ||
	     anchor.switch_prog_id != sw_prog))
		ret = -EPERM;
	if (!ret) {
		d->len = ((size_t)b->ncpu * sizeof(struct barrierd_slot) + (size_t)page - 1) &
			 ~((size_t)page - 1);
		map = mmap(NULL, d->len, PROT_READ, MAP_SHARED, d->fds[0], 0);
		if (map == MAP_FAILED)
			ret = -errno;
		else
			d->slots = map;
	}
	if (ret) {
		close_fds(d->fds, d->nfds);
		free(d);
		return ret;
	}
	/* The anchor's generation is the daemon's word; the record's only the peer's. */
	d->generation = anchored > 0 ? anchor.generation : m.generation;
	if (anchored > 0 && anchor_out)
		*anchor_out = anchor;
	d->fork_gen = __atomic_load_n(&bd_fork_gen, __ATOMIC_ACQUIRE);
	*out = d;
	return 0;
}

void bd_direct_refresh(struct barrierd *b, int64_t budget_ns)
{
	const struct barrierd_header *h = bd_hdr(b);
	struct bd_direct *d;
	uint64_t flags, backoff;
	int ret;

	if (b->no_direct || !h)
		return;
	/* A wait with less time left than a fetch may take does not spend it on one. */
	if (budget_ns >= 0 && budget_ns < 2 * FETCH_TIMEOUT_US * 1000LL)
		return;
	flags = bd_load(&h->flags);
	if (!(flags & BARRIERD_FEAT_DIRECT) || !(flags & BARRIERD_FLAG_RUNNING) ||
	    (flags & BARRIERD_FLAG_STOPPED))
		return;
	if (bd_clock_raw() < __atomic_load_n(&b->direct_next_ns, __ATOMIC_RELAXED))
		return;
	if (!bd_direct_lock(b))
		return;
	/* The set in use is this daemon's, of this process: nothing to fetch. */
	if (bd_direct_reap(b))
		goto out;
	ret = fetch(b, h, &d, NULL);
	if (ret == 0) {
		/* Every place holds a set a call still reads: keep the old daemon's for now. */
		ret = bd_direct_install(b, d);
		if (ret)
			bd_direct_release(b, d);
	}
	if (ret == 0) {
		b->direct_backoff = 0;
		backoff = FETCH_RETRY_NS;
	} else {
		/*
		 * A socket we may not use (its mode), a daemon that refuses, a flood: ask again
		 * later and later, so that a handle that cannot have the slots costs its waits
		 * nothing; a new daemon (a new generation) gets asked sooner (the set is stale
		 * then, and the backoff is its own).
		 */
		backoff = b->direct_backoff ? b->direct_backoff * 2 : FETCH_RETRY_NS;
		if (backoff > FETCH_RETRY_MAX_NS)
			backoff = FETCH_RETRY_MAX_NS;
		b->direct_backoff = backoff;
	}
	__atomic_store_n(&b->direct_next_ns, bd_clock_raw() + backoff, __ATOMIC_RELAXED);
out:
	bd_direct_unlock(b);
}

/* A set fetched only to be checked: unmapped and closed at once (nobody loaded from it). */
static void drop(struct bd_direct *d)
{
	munmap((void *)d->slots, d->len);
	close_fds(d->fds, d->nfds);
	free(d);
}

int bd_relay_verify(const struct barrierd *b, const struct barrierd_header *h, int file_fd)
{
	struct barrierd_anchor a;
	struct bd_direct *d;
	int ret;

	/*
	 * relay_only: fetch() accepts only an anchored set, whose anchor names our file.  A few
	 * attempts, 20 ms apart: a loaded daemon may miss one reply's 50 ms, and this open has
	 * no later fetch to fall back on (a refusal costs the caller at most this much more).
	 */
	for (int attempt = 0;; attempt++) {
		struct timespec pause = {0, 20 * 1000000L};

		ret = fetch(b, h, &d, &a);
		if (!ret || attempt == RELAY_VERIFY_ATTEMPTS - 1)
			break;
		nanosleep(&pause, NULL);
	}
	if (ret)
		return ret;
	drop(d);
	/*
	 * fetch() matched the anchor's inode number and generation; the handle also holds the
	 * inode's generation, so a file that reused the number of an earlier run's file (an
	 * anchor of that run relayed next to it) is told apart.
	 */
	ret = bd_file_handle_is(file_fd, &a);
	return ret == 1 ? 0 : -EPERM;
}
