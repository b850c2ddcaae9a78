// SPDX-License-Identifier: MIT
/*
 * The slot socket (issue 17, docs/PROTOCOL.md §7), as nobody and against rogue servers.
 *
 *   - slots_write_paths_refused: nobody receives the frozen slots map and the sched_switch link
 *     exactly as the library does, and every write path fails (a writable shared or private
 *     mapping, mprotect, BPF_MAP_UPDATE_ELEM, detaching or updating the link), while the
 *     read-only mapping works and the programs still write the slots.
 *   - rogue_server_refused: servers that are not the daemon, or a root server that hands out
 *     anything but a frozen slots array and the sched_switch link, are never used by the
 *     library (barrierd_direct() false), barriers still complete through the file, and the
 *     client is left without a descriptor more than before.
 *   - socket_flood_bounded: nobody floods the socket; the daemon's descriptors stay bounded,
 *     it keeps publishing, and a client gets the slots again once the flood ends.
 *   - socket_mode_and_off: --slot-socket-mode 0600 and off, and bad values.
 *
 * Times are hang guards only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <barrierd_slot.h>
#include <dirent.h>
#include <grp.h>
#include <linux/bpf.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "harness.h"

#define NOBODY TEST_NOBODY

/* ---- helpers ----------------------------------------------------------------------------- */

static void sock_of(char *out, size_t len, const char *state)
{
	snprintf(out, len, "%s%s", state, BARRIERD_SLOTS_SOCKET_SUFFIX);
}

/* Open descriptors of a process (0: this one). */
static int count_fds(pid_t pid)
{
	char dir[64];
	struct dirent *e;
	int n = 0;
	DIR *d;

	if (pid)
		snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	else
		snprintf(dir, sizeof(dir), "/proc/self/fd");
	d = opendir(dir);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - (pid ? 0 : 1); /* not the directory's own descriptor */
}

static long sys_bpf(int cmd, union bpf_attr *a)
{
	return syscall(SYS_bpf, cmd, a, sizeof(*a));
}

/* Does /proc/self/fdinfo/fd hold the line "key:\tvalue"? */
static bool fdinfo_has(int fd, const char *key, const char *value)
{
	char path[64], text[2048], want[128];
	ssize_t n;
	int f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return false;
	n = read(f, text, sizeof(text) - 1);
	close(f);
	if (n <= 0)
		return false;
	text[n] = 0;
	snprintf(want, sizeof(want), "\n%s:\t%s\n", key, value);
	if (strncmp(text, want + 1, strlen(want + 1)) == 0)
		return true;
	return strstr(text, want) != NULL;
}

static uint64_t file_ncpu(const char *state)
{
	size_t sz;
	const struct barrierd_header *m = map_ro(state, &sz);
	uint64_t n;

	assert_non_null(m);
	n = bd_load(&m->ncpu);
	munmap((void *)m, sz);
	return n;
}

static size_t slots_len(uint64_t ncpu)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return ((size_t)ncpu * sizeof(struct barrierd_slot) + page - 1) & ~(page - 1);
}

/* A raw tracepoint program that does nothing ("r0 = 0; exit"): a prog fd root can hand out. */
static int load_noop_prog(void)
{
	struct bpf_insn insns[2] = {
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT;
	a.insns = (uint64_t)(uintptr_t)insns;
	a.insn_cnt = 2;
	a.license = (uint64_t)(uintptr_t) "GPL";
	return (int)sys_bpf(BPF_PROG_LOAD, &a);
}

/* A raw tracepoint link of that program on tp (not sched_switch in the tests). */
static int raw_tp_link(int prog, const char *tp)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.raw_tracepoint.name = (uint64_t)(uintptr_t)tp;
	a.raw_tracepoint.prog_fd = (uint32_t)prog;
	return (int)sys_bpf(BPF_RAW_TRACEPOINT_OPEN, &a);
}

/* An array of `entries` values of value_size bytes, every 8-byte word IDLE; frozen or not. */
static int rogue_array(uint32_t value_size, uint32_t entries, uint32_t flags, bool freeze)
{
	union bpf_attr a;
	size_t len = ((size_t)value_size * entries + 4095) & ~(size_t)4095;
	uint64_t *p;
	int fd;

	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_ARRAY;
	a.key_size = 4;
	a.value_size = value_size;
	a.max_entries = entries;
	a.map_flags = flags;
	fd = (int)sys_bpf(BPF_MAP_CREATE, &a);
	assert_true(fd >= 0);
	/* Through a writable mapping, or through the syscall where the flags forbid one. */
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p != MAP_FAILED) {
		for (size_t i = 0; i < (size_t)value_size * entries / 8; i++)
			p[i] = BARRIERD_SLOT_IDLE;
		munmap(p, len);
	} else {
		uint64_t v[16];

		assert_true(value_size <= sizeof(v));
		for (size_t i = 0; i < value_size / 8; i++)
			v[i] = BARRIERD_SLOT_IDLE;
		for (uint32_t k = 0; k < entries; k++) {
			memset(&a, 0, sizeof(a));
			a.map_fd = (uint32_t)fd;
			a.key = (uint64_t)(uintptr_t)&k;
			a.value = (uint64_t)(uintptr_t)v;
			assert_int_equal(sys_bpf(BPF_MAP_UPDATE_ELEM, &a), 0);
		}
	}
	if (freeze) {
		memset(&a, 0, sizeof(a));
		a.map_fd = (uint32_t)fd;
		assert_int_equal(sys_bpf(BPF_MAP_FREEZE, &a), 0);
	}
	return fd;
}

/* A memfd of ncpu slots, every word IDLE: "every CPU is idle", were it believed. */
static int idle_memfd(uint64_t ncpu)
{
	size_t len = slots_len(ncpu);
	int fd = memfd_create("idle-slots", MFD_CLOEXEC);
	uint64_t *p;

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)len), 0);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	for (size_t i = 0; i < len / 8; i++)
		p[i] = BARRIERD_SLOT_IDLE;
	munmap(p, len);
	return fd;
}

static int setup_running(void **state)
{
	(void)state;
	h_mkdir(&H);
	return h_start(&H, -1, NULL);
}

/* ---- 1. every write path refused, as nobody --------------------------------------------- */

struct wp {
	const char *sock;
	uint64_t ncpu;
	int prog; /* a raw tracepoint program root loaded (for BPF_LINK_UPDATE), inherited */
};

#define WP_FAIL(n, what)                                                                           \
	do {                                                                                       \
		fprintf(stderr, "check %d (%s): errno %d (%s)\n", n, what, errno,                  \
			strerror(errno));                                                          \
		return n;                                                                          \
	} while (0)

static int write_paths_main(void *arg)
{
	const struct wp *w = arg;
	struct barrierd_slots_msg m;
	int fds[1 + BARRIERD_SLOTS_MAX_LINKS], n, map, link;
	size_t len = slots_len(w->ncpu);
	char ncpu[32];
	union bpf_attr a;
	uint32_t key = 0;
	uint8_t value[64];
	volatile const struct barrierd_slot *s;
	uint64_t sw0 = 0, sw1 = 0, st0 = 0, st1 = 0, end;
	void *p;

	if (geteuid() != NOBODY)
		return 1;
	n = test_slots_fetch(w->sock, &m, fds, 1 + BARRIERD_SLOTS_MAX_LINKS);
	if (n < 0) {
		errno = -n;
		WP_FAIL(2, "fetch");
	}
	if (n != 2 || m.magic != BARRIERD_SLOTS_MAGIC || m.nlinks != 1 || m.ncpu != w->ncpu ||
	    m.slot_size != sizeof(struct barrierd_slot) || m.slot_abi != BARRIERD_SLOT_ABI)
		return 3;
	map = fds[0];
	link = fds[1];
	snprintf(ncpu, sizeof(ncpu), "%llu", (unsigned long long)w->ncpu);
	if (!fdinfo_has(map, "map_type", "2") || !fdinfo_has(map, "key_size", "4") ||
	    !fdinfo_has(map, "value_size", "64") || !fdinfo_has(map, "max_entries", ncpu) ||
	    !fdinfo_has(map, "map_flags", "0x400") || !fdinfo_has(map, "frozen", "1"))
		return 4;
	if (!fdinfo_has(link, "link_type", "raw_tracepoint") ||
	    !fdinfo_has(link, "tp_name", "sched_switch"))
		return 5;
	/* Descriptors are close-on-exec, as the library asks (MSG_CMSG_CLOEXEC). */
	if (!(fcntl(map, F_GETFD) & FD_CLOEXEC) || !(fcntl(link, F_GETFD) & FD_CLOEXEC))
		return 6;

	/* A writable shared mapping of a frozen map: EPERM. */
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, map, 0);
	if (p != MAP_FAILED || errno != EPERM)
		WP_FAIL(7, "mmap RW shared");
	/* A read-only one works, and cannot be made writable: EACCES. */
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, map, 0);
	if (p == MAP_FAILED)
		WP_FAIL(8, "mmap RO shared");
	if (mprotect(p, len, PROT_READ | PROT_WRITE) == 0 || errno != EACCES)
		WP_FAIL(9, "mprotect RO->RW");
	/* No private copy-on-write mapping either (BPF maps are shared only): EINVAL. */
	{
		void *q = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, map, 0);

		if (q != MAP_FAILED || errno != EINVAL)
			WP_FAIL(10, "mmap RW private");
	}
	/* The syscall side: a lookup works for nobody, an update is refused (frozen): EPERM. */
	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)map;
	a.key = (uint64_t)(uintptr_t)&key;
	a.value = (uint64_t)(uintptr_t)value;
	if (sys_bpf(BPF_MAP_LOOKUP_ELEM, &a))
		WP_FAIL(11, "lookup");
	memset(value, 0, sizeof(value));
	value[16] = BARRIERD_SLOT_IDLE;
	a.flags = BPF_ANY;
	if (sys_bpf(BPF_MAP_UPDATE_ELEM, &a) == 0 || errno != EPERM)
		WP_FAIL(12, "update");
	a.flags = BPF_EXIST;
	if (sys_bpf(BPF_MAP_UPDATE_ELEM, &a) == 0 || errno != EPERM)
		WP_FAIL(13, "update BPF_EXIST");
	/* The link: no detaching it (the idle words would freeze) nor replacing its program. */
	memset(&a, 0, sizeof(a));
	a.link_detach.link_fd = (uint32_t)link;
	if (sys_bpf(BPF_LINK_DETACH, &a) == 0 || (errno != EOPNOTSUPP && errno != EPERM))
		WP_FAIL(14, "link detach");
	memset(&a, 0, sizeof(a));
	a.link_update.link_fd = (uint32_t)link;
	a.link_update.new_prog_fd = (uint32_t)w->prog;
	if (sys_bpf(BPF_LINK_UPDATE, &a) == 0 || (errno != EINVAL && errno != EPERM))
		WP_FAIL(15, "link update");
	/* Still frozen after all that. */
	if (!fdinfo_has(map, "frozen", "1"))
		return 16;

	/*
	 * The read-only mapping reads what the programs write: switches (and the stamps) move on
	 * while we make this CPU switch.
	 */
	s = p;
	for (uint64_t c = 0; c < w->ncpu; c++) {
		sw0 += s[c].switches;
		st0 = s[c].stamp > st0 ? s[c].stamp : st0;
	}
	end = bd_mono_ns() + 5 * TEST_SEC;
	do {
		test_sleep_ms(1);
		sw1 = st1 = 0;
		for (uint64_t c = 0; c < w->ncpu; c++) {
			sw1 += s[c].switches;
			st1 = s[c].stamp > st1 ? s[c].stamp : st1;
		}
	} while ((sw1 <= sw0 || st1 <= st0) && bd_mono_ns() < end);
	if (sw1 <= sw0)
		return 17;
	if (st1 <= st0)
		return 18;
	for (uint64_t c = 0; c < w->ncpu; c++)
		if (s[c].idle > BARRIERD_SLOT_BUSY)
			return 19;
	printf("nobody: every write path refused; switches %llu -> %llu, newest stamp +%llu ns\n",
	       (unsigned long long)sw0, (unsigned long long)sw1, (unsigned long long)(st1 - st0));
	munmap(p, len);
	close(map);
	close(link);
	return 0;
}

static void slots_write_paths_refused(void **state)
{
	char sock[400];
	struct wp w;
	struct barrierd *b;

	(void)state;
	sock_of(sock, sizeof(sock), H.state);
	w.sock = sock;
	w.ncpu = file_ncpu(H.state);
	w.prog = load_noop_prog();
	assert_true(w.prog >= 0);
	assert_int_equal(test_as_nobody(write_paths_main, &w, 30), 0);
	close(w.prog);
	/* And the daemon serves on, the slots included. */
	assert_int_equal(barrierd_open(&b, H.state), 0);
	assert_true(barrierd_direct(b));
	assert_int_equal(barrierd_barrier(b, 5 * (int64_t)TEST_SEC), 0);
	barrierd_close(b);
}

/* ---- 2. rogue servers ---------------------------------------------------------------------- */

enum payload {
	P_GENUINE,	  /* the daemon's own map and link */
	P_MEMFD,	  /* a memfd of IDLE words, the daemon's link */
	P_ARRAY_RW,	  /* a writable (not frozen) mmapable array of IDLE words */
	P_ARRAY_VALUE,	  /* frozen, value_size 128 */
	P_ARRAY_ENTRIES,  /* frozen, max_entries ncpu + 1 */
	P_ARRAY_FLAGS,	  /* frozen, BPF_F_MMAPABLE | BPF_F_RDONLY_PROG */
	P_NO_LINK,	  /* the daemon's map, nlinks 0 */
	P_LINK_MISSING,	  /* the daemon's map, nlinks 1 but no link descriptor */
	P_LINK_ELSEWHERE, /* the daemon's map, a raw tracepoint link on sched_wakeup */
	P_MAP_AS_LINK,	  /* the daemon's map twice */
	P_TOO_MANY,	  /* the daemon's map and 70 copies of its link, nlinks 70 */
	P_BAD_NCPU,	  /* genuine descriptors, ncpu + 1 in the record */
	P_BAD_MAGIC,	  /* genuine descriptors, another magic */
	P_LONG_RECORD,	  /* genuine descriptors, a record 8 bytes too long */
	P_SHORT_RECORD,	  /* genuine descriptors, a record 8 bytes short */
	P_BAD_SLOT_SIZE,  /* genuine descriptors, slot_size 128 */
};

enum who {
	ROOT,		   /* root binds, listens and serves */
	ROOT_SOCK_NOBODYS, /* root serves, but the socket file is chowned to nobody */
	NOBODY_LISTENS,	   /* root binds (the file is root's), nobody listens and serves */
	ROOT_LISTENS,	   /* root binds and listens, nobody accepts and serves */
	NOBODY_BINDS,	   /* nobody binds its own socket in the sticky directory */
};

struct rcase {
	const char *name;
	enum who who;
	enum payload p;
	bool want_direct;
};

static const struct rcase rcases[] = {
    {"root server, the daemon's own descriptors (control)", ROOT, P_GENUINE, true},
    {"socket file owned by nobody, the daemon's own descriptors", ROOT_SOCK_NOBODYS, P_GENUINE,
     false},
    {"nobody listens, the daemon's own descriptors", NOBODY_LISTENS, P_GENUINE, false},
    {"nobody listens, a memfd of IDLE words", NOBODY_LISTENS, P_MEMFD, false},
    {"nobody's own socket in the sticky directory, the daemon's own descriptors", NOBODY_BINDS,
     P_GENUINE, false},
    {"nobody's own socket in the sticky directory, a memfd", NOBODY_BINDS, P_MEMFD, false},
    {"root listened, nobody serves a memfd", ROOT_LISTENS, P_MEMFD, false},
    {"root, a memfd of IDLE words", ROOT, P_MEMFD, false},
    {"root, a writable array of IDLE words", ROOT, P_ARRAY_RW, false},
    {"root, a frozen array of 128-byte values", ROOT, P_ARRAY_VALUE, false},
    {"root, a frozen array of ncpu + 1 entries", ROOT, P_ARRAY_ENTRIES, false},
    {"root, a frozen array with BPF_F_RDONLY_PROG", ROOT, P_ARRAY_FLAGS, false},
    {"root, the map and no link", ROOT, P_NO_LINK, false},
    {"root, the map, nlinks 1 and no link descriptor", ROOT, P_LINK_MISSING, false},
    {"root, the map and a link on sched_wakeup", ROOT, P_LINK_ELSEWHERE, false},
    {"root, the map passed as its own link", ROOT, P_MAP_AS_LINK, false},
    {"root, the map and 70 links", ROOT, P_TOO_MANY, false},
    {"root, a record with the wrong ncpu", ROOT, P_BAD_NCPU, false},
    {"root, a record with the wrong magic", ROOT, P_BAD_MAGIC, false},
    {"root, a record too long", ROOT, P_LONG_RECORD, false},
    {"root, a record too short", ROOT, P_SHORT_RECORD, false},
    {"root, a record with the wrong slot size", ROOT, P_BAD_SLOT_SIZE, false},
};

static char rsticky[200];
static pid_t rogue_pid = -1; /* the rogue server of the case being run */

/* The daemon's state in a root-owned sticky directory (like /tmp), which nobody can write. */
static int setup_rogue(void **state)
{
	(void)state;
	h_mkdir(&H);
	if (snprintf(rsticky, sizeof(rsticky), "%s/sticky", H.dir) >= (int)sizeof(rsticky))
		return -1;
	if (mkdir(rsticky, 0755) || chmod(rsticky, 01777))
		return -1;
	snprintf(H.state, sizeof(H.state), "%s/state", rsticky);
	return h_start(&H, -1, NULL);
}

/* A failed case leaves its server running: it goes here. */
static int teardown_rogue(void **state)
{
	if (rogue_pid > 0) {
		kill(rogue_pid, SIGKILL);
		waitpid(rogue_pid, NULL, 0);
		rogue_pid = -1;
	}
	return h_teardown(state);
}

/* What a rogue server sends: a record (len bytes of it, up to 48) and descriptors. */
struct reply {
	uint8_t rec[48];
	size_t len;
	int fds[80];
	int nfds;
};

/*
 * Accept and reply until killed; *served counts the connections accepted (a client that
 * refuses the peer has closed before the reply, which then fails with EPIPE).
 */
static void serve(int lfd, const struct reply *r, volatile int *served)
{
	for (;;) {
		union {
			char buf[CMSG_SPACE(sizeof(int) * 80)];
			struct cmsghdr align;
		} u;
		struct iovec iov = {(void *)r->rec, r->len};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
		struct cmsghdr *cm;
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (c < 0)
			continue;
		__atomic_fetch_add(served, 1, __ATOMIC_RELAXED);
		memset(u.buf, 0, sizeof(u.buf));
		if (r->nfds) {
			mh.msg_control = u.buf;
			mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)r->nfds);
			cm = CMSG_FIRSTHDR(&mh);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)r->nfds);
			memcpy(CMSG_DATA(cm), r->fds, sizeof(int) * (size_t)r->nfds);
		}
		sendmsg(c, &mh, MSG_NOSIGNAL);
		close(c);
	}
}

/* Bind (and listen, unless `listen_later`) a fresh socket at path; mode 0666. */
static int bind_at(const char *path, bool listen_now)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (s < 0)
		return -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) || chmod(path, 0666) ||
	    (listen_now && listen(s, 16))) {
		close(s);
		return -1;
	}
	return s;
}

static void run_rogue(const struct rcase *rc, const char *sock, const struct barrierd_slots_msg *gm,
		      int gmap, int glink, int prog, volatile int *served)
{
	struct barrierd_slots_msg m = *gm;
	struct reply r = {.len = sizeof(m)};
	int own[2] = {-1, -1}, lfd = -1, pfd[2], before, after;
	uint64_t ncpu = gm->ncpu;
	struct barrierd *b;
	pid_t pid;
	char c;
	bool direct, owner_wrong;

	printf("rogue: %s\n", rc->name);
	r.fds[r.nfds++] = gmap;
	r.fds[r.nfds++] = glink;
	switch (rc->p) {
	case P_GENUINE:
		break;
	case P_MEMFD:
		r.fds[0] = own[0] = idle_memfd(ncpu);
		break;
	case P_ARRAY_RW:
		r.fds[0] = own[0] = rogue_array(64, (uint32_t)ncpu, BPF_F_MMAPABLE, false);
		break;
	case P_ARRAY_VALUE:
		r.fds[0] = own[0] = rogue_array(128, (uint32_t)ncpu, BPF_F_MMAPABLE, true);
		break;
	case P_ARRAY_ENTRIES:
		r.fds[0] = own[0] = rogue_array(64, (uint32_t)ncpu + 1, BPF_F_MMAPABLE, true);
		break;
	case P_ARRAY_FLAGS:
		r.fds[0] = own[0] =
		    rogue_array(64, (uint32_t)ncpu, BPF_F_MMAPABLE | BPF_F_RDONLY_PROG, true);
		break;
	case P_NO_LINK:
		m.nlinks = 0;
		r.nfds = 1;
		break;
	case P_LINK_MISSING:
		r.nfds = 1;
		break;
	case P_LINK_ELSEWHERE:
		r.fds[1] = own[1] = raw_tp_link(prog, "sched_wakeup");
		assert_true(own[1] >= 0);
		break;
	case P_MAP_AS_LINK:
		r.fds[1] = gmap;
		break;
	case P_TOO_MANY:
		m.nlinks = 70;
		for (r.nfds = 1; r.nfds < 71; r.nfds++)
			r.fds[r.nfds] = glink;
		break;
	case P_BAD_NCPU:
		m.ncpu = ncpu + 1;
		break;
	case P_BAD_MAGIC:
		m.magic ^= 1;
		break;
	case P_LONG_RECORD:
		r.len = sizeof(m) + 8;
		break;
	case P_SHORT_RECORD:
		r.len = sizeof(m) - 8;
		break;
	case P_BAD_SLOT_SIZE:
		m.slot_size = 128;
		break;
	}
	memcpy(r.rec, &m, sizeof(m));

	unlink(sock);
	if (rc->who != NOBODY_BINDS) {
		lfd = bind_at(sock, rc->who == ROOT || rc->who == ROOT_SOCK_NOBODYS ||
					rc->who == ROOT_LISTENS);
		assert_true(lfd >= 0);
		if (rc->who == ROOT_SOCK_NOBODYS)
			assert_int_equal(chown(sock, NOBODY, NOBODY), 0);
	}
	__atomic_store_n(served, 0, __ATOMIC_RELAXED);
	assert_int_equal(pipe(pfd), 0);
	rogue_pid = pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pfd[0]);
		if (rc->who != ROOT && rc->who != ROOT_SOCK_NOBODYS && test_drop_to_nobody())
			_exit(100);
		if (rc->who == NOBODY_BINDS)
			lfd = bind_at(sock, true);
		else if (rc->who == NOBODY_LISTENS && listen(lfd, 16))
			lfd = -1;
		if (lfd < 0)
			_exit(101);
		c = 1;
		if (write(pfd[1], &c, 1) != 1)
			_exit(102);
		serve(lfd, &r, served);
		_exit(0);
	}
	close(pfd[1]);
	if (lfd >= 0)
		close(lfd);
	assert_int_equal(read(pfd[0], &c, 1), 1); /* it serves */
	close(pfd[0]);
	if (rc->who == NOBODY_BINDS) {
		struct stat st;

		assert_int_equal(lstat(sock, &st), 0);
		assert_int_equal(st.st_uid, NOBODY);
	}

	before = count_fds(0);
	assert_int_equal(barrierd_open(&b, H.state), 0);
	/*
	 * The library connected (a test that never reached the server would prove nothing),
	 * unless the socket's owner is wrong: then it must not even connect.
	 */
	owner_wrong = rc->who == ROOT_SOCK_NOBODYS || rc->who == NOBODY_BINDS;
	for (int i = 0; i < 200 && !owner_wrong && !__atomic_load_n(served, __ATOMIC_RELAXED); i++)
		test_sleep_ms(10);
	if (!owner_wrong)
		assert_true(__atomic_load_n(served, __ATOMIC_RELAXED) >= 1);
	direct = barrierd_direct(b);
	/* ...barriers complete either way, through the file when not directly... */
	assert_int_equal(barrierd_barrier(b, 5 * (int64_t)TEST_SEC), 0);
	assert_int_equal(barrierd_barrier(b, 5 * (int64_t)TEST_SEC), 0);
	/* ...and retries (one per 100 ms at most) are refused as well. */
	test_sleep_ms(150);
	assert_int_equal(barrierd_barrier(b, 5 * (int64_t)TEST_SEC), 0);
	if (direct != rc->want_direct || barrierd_direct(b) != rc->want_direct)
		fail_msg("%s: barrierd_direct %d then %d, expected %d", rc->name, direct,
			 barrierd_direct(b), rc->want_direct);
	barrierd_close(b);
	if (owner_wrong)
		assert_int_equal(__atomic_load_n(served, __ATOMIC_RELAXED), 0);
	after = count_fds(0);
	if (before != after)
		fail_msg("%s: %d descriptors before the open, %d after the close", rc->name, before,
			 after);

	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	rogue_pid = -1;
	for (int i = 0; i < 2; i++)
		if (own[i] >= 0)
			close(own[i]);
	unlink(sock);
}

static void rogue_server_refused(void **state)
{
	struct barrierd_slots_msg gm;
	int g[1 + BARRIERD_SLOTS_MAX_LINKS], n, prog;
	char sock[400];
	volatile int *served;

	(void)state;
	sock_of(sock, sizeof(sock), H.state);
	/* The daemon's own set, as a client gets it; then its socket is out of the way. */
	n = test_slots_fetch(sock, &gm, g, 1 + BARRIERD_SLOTS_MAX_LINKS);
	assert_int_equal(n, 2);
	prog = load_noop_prog();
	assert_true(prog >= 0);
	served = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(served != MAP_FAILED);
	for (size_t i = 0; i < sizeof(rcases) / sizeof(rcases[0]); i++)
		run_rogue(&rcases[i], sock, &gm, g[0], g[1], prog, served);
	munmap((void *)served, 4096);
	close(prog);
	close(g[0]);
	close(g[1]);
}

/* ---- 3. a connection flood, as nobody ------------------------------------------------------ */

#define FLOOD_S 4
#define FLOOD_MIN_CONNECTS 5000
#define FLOOD_KEEP 100

struct sflood {
	const char *sock;
	int pipe_w;
};

/*
 * Connect as fast as possible for FLOOD_S seconds (and at least FLOOD_MIN_CONNECTS times),
 * never reading a reply; the first FLOOD_KEEP connections that got in are kept open to the end
 * (each holds a reply and its descriptors in flight), every other one is closed at once.
 */
static int sflood_main(void *arg)
{
	const struct sflood *f = arg;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	uint64_t end = bd_mono_ns() + FLOOD_S * TEST_SEC, counts[3] = {0, 0, 0};
	int kept[FLOOD_KEEP], nkept = 0;

	if (strlen(f->sock) >= sizeof(sa.sun_path))
		return 3;
	memcpy(sa.sun_path, f->sock, strlen(f->sock) + 1);
	while (bd_mono_ns() < end || counts[0] + counts[1] < FLOOD_MIN_CONNECTS) {
		int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

		if (s < 0)
			return 1;
		if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			counts[0]++;
			if (nkept < FLOOD_KEEP) {
				kept[nkept++] = s;
				continue;
			}
		} else if (errno == EAGAIN) {
			counts[1]++; /* the backlog is full */
		} else {
			counts[2]++;
		}
		close(s);
	}
	for (int i = 0; i < nkept; i++)
		close(kept[i]);
	return write(f->pipe_w, counts, sizeof(counts)) == sizeof(counts) ? 0 : 2;
}

static void socket_flood_bounded(void **state)
{
	struct barrierd_open_opts o = {.sz = sizeof(o), .flags = BARRIERD_OPEN_NO_DIRECT};
	char sock[400];
	struct sflood f;
	struct barrierd *b, *fb;
	uint64_t counts[3], barriers = 0, failures = 0, t0, t1;
	int pfd[2], fd0, fdmax, st;
	pid_t pid;

	(void)state;
	sock_of(sock, sizeof(sock), H.state);
	f.sock = sock;
	/* A reply served first: the count is the serving daemon's. */
	assert_int_equal(barrierd_open(&b, H.state), 0);
	assert_true(barrierd_direct(b));
	barrierd_close(b);
	fd0 = count_fds(H.pid);
	fdmax = fd0;
	assert_true(fd0 > 0);
	assert_int_equal(barrierd_open_opts(&fb, H.state, &o), 0);
	assert_false(barrierd_direct(fb));
	assert_int_equal(pipe(pfd), 0);
	f.pipe_w = pfd[1];
	t0 = bd_mono_ns();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pfd[0]);
		_exit(test_drop_to_nobody() ? 100 : sflood_main(&f));
	}
	close(pfd[1]);
	/* Meanwhile: the daemon's descriptors, and barriers through the file. */
	for (;;) {
		int n = count_fds(H.pid);

		if (n > fdmax)
			fdmax = n;
		if (barrierd_barrier(fb, 5 * (int64_t)TEST_SEC))
			failures++;
		barriers++;
		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
		if (bd_mono_ns() - t0 > (FLOOD_S + 60) * TEST_SEC) { /* a hang guard */
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			fail_msg("the flood did not end");
		}
	}
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(read(pfd[0], counts, sizeof(counts)), (ssize_t)sizeof(counts));
	close(pfd[0]);
	barrierd_close(fb);

	/* After the flood, a fresh client gets the slots again (hang guard: 10 s). */
	t0 = bd_mono_ns();
	for (;;) {
		bool direct;

		assert_int_equal(barrierd_open(&b, H.state), 0);
		direct = barrierd_direct(b);
		if (direct)
			assert_int_equal(barrierd_barrier(b, 5 * (int64_t)TEST_SEC), 0);
		barrierd_close(b);
		t1 = bd_mono_ns();
		if (direct)
			break;
		assert_true(t1 - t0 < 10 * TEST_SEC);
		test_sleep_ms(10);
	}
	printf("socket flood by nobody: %llu connected, %llu refused (backlog full), %llu other "
	       "errors; daemon descriptors %d at the start, at most %d; %llu barriers through the "
	       "file, %llu failed; direct again after %.3f s\n",
	       (unsigned long long)counts[0], (unsigned long long)counts[1],
	       (unsigned long long)counts[2], fd0, fdmax, (unsigned long long)barriers,
	       (unsigned long long)failures, (double)(t1 - t0) / 1e9);
	assert_true(counts[0] + counts[1] >= FLOOD_MIN_CONNECTS);
	assert_true(counts[0] > 0);
	assert_int_equal(failures, 0);
	assert_true(barriers > 0);
	assert_true(fdmax <= fd0 + 2); /* the accepted connection, and a spare */
	assert_true(count_fds(H.pid) <= fd0 + 1);
}

/* ---- 4. --slot-socket-mode ------------------------------------------------------------------- */

struct nb_open {
	const char *state;
};

/* As nobody: the file opens and barriers complete, without the slots. */
static int nobody_no_direct_main(void *arg)
{
	const struct nb_open *a = arg;
	struct barrierd *b;

	if (barrierd_open(&b, a->state))
		return 1;
	if (barrierd_barrier(b, 5 * (int64_t)TEST_SEC))
		return 2;
	if (barrierd_direct(b))
		return 3;
	barrierd_close(b);
	return 0;
}

static int nobody_direct_main(void *arg)
{
	const struct nb_open *a = arg;
	struct barrierd *b;

	if (barrierd_open(&b, a->state))
		return 1;
	if (!barrierd_direct(b))
		return 3;
	if (barrierd_barrier(b, 5 * (int64_t)TEST_SEC))
		return 2;
	barrierd_close(b);
	return 0;
}

static void socket_mode_and_off(void **state)
{
	const char *mode0600[] = {"--slot-socket-mode", "0600", NULL};
	const char *off[] = {"--slot-socket-mode", "off", NULL};
	struct nb_open a = {.state = H.state};
	char sock[400];
	struct barrierd *b;
	struct stat st;
	size_t sz;

	(void)state;
	sock_of(sock, sizeof(sock), H.state);

	/* The default: 0666, anyone who can read the file gets the slots. */
	assert_int_equal(h_start(&H, -1, NULL), 0);
	assert_int_equal(lstat(sock, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0666);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(test_as_nobody(nobody_direct_main, &a, 20), 0);
	assert_int_equal(WEXITSTATUS(h_stop(&H)), 0);
	h_rmdir(&H);

	/* 0600: root's alone; nobody still passes barriers, through the file. */
	h_mkdir(&H);
	a.state = H.state;
	sock_of(sock, sizeof(sock), H.state);
	assert_int_equal(h_start(&H, -1, mode0600), 0);
	assert_int_equal(lstat(sock, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(test_as_nobody(nobody_no_direct_main, &a, 20), 0);
	assert_int_equal(barrierd_open(&b, H.state), 0);
	assert_true(barrierd_direct(b));
	assert_true(bd_load(&barrierd_mapping(b, &sz)->flags) & BARRIERD_FEAT_DIRECT);
	assert_int_equal(barrierd_barrier(b, 5 * (int64_t)TEST_SEC), 0);
	barrierd_close(b);
	assert_int_equal(WEXITSTATUS(h_stop(&H)), 0);
	h_rmdir(&H);

	/* off: no socket, no DIRECT feature; barriers through the file for everyone. */
	h_mkdir(&H);
	a.state = H.state;
	sock_of(sock, sizeof(sock), H.state);
	assert_int_equal(h_start(&H, -1, off), 0);
	assert_int_equal(lstat(sock, &st), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(barrierd_open(&b, H.state), 0);
	assert_false(barrierd_direct(b));
	assert_false(bd_load(&barrierd_mapping(b, &sz)->flags) & BARRIERD_FEAT_DIRECT);
	assert_int_equal(barrierd_barrier(b, 5 * (int64_t)TEST_SEC), 0);
	assert_false(barrierd_direct(b));
	barrierd_close(b);
	assert_int_equal(test_as_nobody(nobody_no_direct_main, &a, 20), 0);
	assert_int_equal(WEXITSTATUS(h_stop(&H)), 0);
}

/* A bad mode: exit 64 (EX_USAGE) before anything is created, one line naming the option. */
static void socket_mode_bad(void **state)
{
	static const char *const bad[] = {"9", "abc", "01000", "-1", "", "0x1ff", "OFF", "0600x"};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *args[] = {"--state", H.state, "--slot-socket-mode", bad[i], NULL};
		char out[1024];
		struct stat st;
		long mark = h_log_mark(&H);
		ssize_t n;
		int fd, lines = 0;
		pid_t pid = h_spawn(&H, -1, args);
		int wst = test_reap(pid, 10);

		assert_true(wst != -1 && WIFEXITED(wst));
		assert_int_equal(WEXITSTATUS(wst), 64);
		fd = open(H.log, O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(lseek(fd, mark, SEEK_SET), mark);
		n = read(fd, out, sizeof(out) - 1);
		close(fd);
		assert_true(n > 0);
		out[n] = 0;
		for (ssize_t j = 0; j < n; j++)
			lines += out[j] == '\n';
		if (lines != 1 || !strstr(out, "--slot-socket-mode") || !strstr(out, bad[i]))
			fail_msg("--slot-socket-mode '%s': %s", bad[i], out);
		assert_int_equal(lstat(H.state, &st), -1);
	}
}

/* argv[1], if given: run only the tests whose names match this pattern. */
int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_require_root();
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(slots_write_paths_refused, setup_running, h_teardown),
	    cmocka_unit_test_setup_teardown(rogue_server_refused, setup_rogue, teardown_rogue),
	    cmocka_unit_test_setup_teardown(socket_flood_bounded, setup_running, h_teardown),
	    cmocka_unit_test_setup_teardown(socket_mode_and_off, h_setup, h_teardown),
	    cmocka_unit_test_setup_teardown(socket_mode_bad, h_setup, h_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
