// SPDX-License-Identifier: MIT
/*
 * Clients in user namespaces (docs/PROTOCOL.md §6.1, §6.12; THREAT-MODEL §7): nobody, in its own
 * user, pid and mount namespaces (root unmapped there, as `unshare -Urpm --mount-proc` makes
 * them), with the state directory bind-mounted read-only.
 *
 *   - userns_open_direct: the real daemon's relay gives the file path and the direct path
 *     (credit seen through the observer); opening with BARRIERD_OPEN_NO_DIRECT still works.
 *   - userns_fake_relays_refused: a fake server in such a namespace relays, next to a file in
 *     a directory of its own: (a) the real map, link and anchor next to a forged file; (b) a
 *     map of an earlier daemon run (its last link closed) next to the current link and
 *     anchor; (b') that run's own anchor; (c) the real map and link with no anchor.  Each
 *     open is refused with EPERM.  The same relay of the current set next to the real file
 *     (a hard link) is accepted: the refusals are the checks', not the relay's.
 *   - host_nobody_file_refused: on the host, where every owner has a name, a file of nobody's
 *     (the overflow uid) next to a listening socket is refused with EPERM, and nothing
 *     connects to that socket.
 *   - userns_bound_maps: nobody binds the slots map it received to the daemon's anchor program
 *     (BPF_PROG_BIND_MAP needs no capability); root, standing in for anyone where
 *     kernel.unprivileged_bpf_disabled is 0, binds a frozen copy of the anchor's record map and
 *     then four more maps.  A relay of the real set with that copy as the record map is refused
 *     (EPERM), and so is a user ring buffer (map type 31, the syscall program type's number)
 *     relayed in the program's place; clients in the user namespace and on the host still open
 *     with the direct path.
 *
 * Times are hang guards only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <linux/bpf.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <sys/un.h>

#include "bd_scm.h"
#include "harness.h"

#define UNMAPPED_UID 12345 /* an owner no namespace of the test maps */

/* ---- a process in its own user, pid and mount namespaces -------------------------------- */

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -EIO;
}

/*
 * As `unshare -Urpm --mount-proc` run by nobody: uid and gid 0 inside are nobody outside,
 * everything else (root included) unmapped.  Returns in the new pid namespace's first process
 * (0), or -errno; the parent waits for it and exits with its status.
 */
static int step_failed(const char *what)
{
	int e = errno;

	fprintf(stderr, "enter_userns: %s: %s\n", what, strerror(e));
	return -e;
}

static int enter_userns(void)
{
	pid_t pid;
	int st;

	if (test_drop_to_nobody())
		return step_failed("becoming nobody");
	/* The uid change made us undumpable: /proc/self would be root's, its maps unwritable. */
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0))
		return step_failed("PR_SET_DUMPABLE");
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID))
		return step_failed("unshare");
	if (write_file("/proc/self/setgroups", "deny") ||
	    write_file("/proc/self/uid_map", "0 65534 1") ||
	    write_file("/proc/self/gid_map", "0 65534 1"))
		return step_failed("the id maps");
	pid = fork();
	if (pid < 0)
		return step_failed("fork");
	if (pid) {
		if (waitpid(pid, &st, 0) != pid)
			_exit(99);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 98);
	}
	/* Dies with the waiting parent: a hang guard that kills it leaves nothing behind. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return step_failed("making / private");
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		return step_failed("mounting proc");
	return 0;
}

/* Bind dir onto itself read-only (keeping the flags the mount above locks). */
static int bind_ro(const char *dir)
{
	struct statvfs sv;
	unsigned long keep = 0;

	if (mount(dir, dir, NULL, MS_BIND, NULL) || statvfs(dir, &sv))
		return -errno;
	keep |= (sv.f_flag & ST_NOSUID) ? MS_NOSUID : 0;
	keep |= (sv.f_flag & ST_NODEV) ? MS_NODEV : 0;
	keep |= (sv.f_flag & ST_NOEXEC) ? MS_NOEXEC : 0;
	keep |= (sv.f_flag & ST_NOATIME) ? MS_NOATIME : 0;
	keep |= (sv.f_flag & ST_RELATIME) ? MS_RELATIME : 0;
	if (mount(NULL, dir, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | keep, NULL))
		return -errno;
	return 0;
}

/* fn(arg) in a child (which enters the namespaces itself); its exit code, or -1. */
static int in_child(int (*fn)(void *), void *arg, int seconds)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(fn(arg));
	st = test_reap(pid, seconds);
	return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ---- 1. the real daemon's relay: file and direct path --------------------------------- */

static uint64_t credited; /* the observer's count */

static void observe(void *arg, uint64_t stamp_ns, unsigned cpu, int kind, uint64_t value)
{
	(void)arg, (void)stamp_ns, (void)cpu, (void)kind, (void)value;
	credited++;
}

static int open_direct_main(void *arg)
{
	const char *state = arg;
	const struct barrierd_open_opts nd = {.sz = sizeof(nd), .flags = BARRIERD_OPEN_NO_DIRECT};
	struct barrierd *b;
	struct stat st;
	int ret;

	ret = enter_userns();
	if (ret) {
		fprintf(stderr, "enter_userns: %s\n", strerror(-ret));
		return 10;
	}
	if (bind_ro(H.dir)) {
		fprintf(stderr, "bind_ro: %s\n", strerror(errno));
		return 11;
	}
	/* The premise: the file's owner is unmapped here. */
	if (stat(state, &st) || st.st_uid == 0)
		return 12;
	ret = barrierd_open(&b, state);
	if (ret) {
		fprintf(stderr, "barrierd_open in the user namespace: %s\n", strerror(-ret));
		return 1;
	}
	if (!barrierd_direct(b))
		return 2;
	barrierd_set_credit_observer(b, observe, NULL);
	/* Some barrier credits a CPU from the slots (our own, at least: SELF). */
	for (int i = 0; i < 100 && !credited; i++)
		if (barrierd_barrier(b, 5 * (int64_t)TEST_SEC))
			return 3;
	if (!credited)
		return 4;
	barrierd_close(b);
	ret = barrierd_open_opts(&b, state, &nd);
	if (ret)
		return 5;
	if (barrierd_direct(b) || barrierd_barrier(b, 5 * (int64_t)TEST_SEC))
		return 6;
	barrierd_close(b);
	return 0;
}

static void userns_open_direct(void **state)
{
	(void)state;
	assert_int_equal(in_child(open_direct_main, H.state, 60), 0);
}

/* ---- 2. fake relays ----------------------------------------------------------------------- */

/* One set as the daemon sends it: the record, map and link, then the anchor's two. */
struct set {
	struct barrierd_slots_msg m;
	int map, link, aprog, amap;
};

/* One record and its descriptors (bd_scm_recv): how many came, or -1 for a short record. */
static int recv_fds(int s, void *rec, size_t len, int *fds, unsigned max)
{
	unsigned n;

	return bd_scm_recv(s, rec, len, fds, max, &n) == (ssize_t)len ? (int)n : -1;
}

static void fetch_set(const char *state, struct set *out)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct barrierd_anchor_msg am;
	const char *base = strrchr(state, '/');
	char dir[PATH_MAX];
	int s, dfd, fds[8];

	/* Through the directory's descriptor: a build tree's path may not fit in sun_path. */
	assert_non_null(base);
	snprintf(dir, sizeof(dir), "%.*s", (int)(base - state), state);
	dfd = open(dir[0] ? dir : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s%s", dfd, base + 1,
		     BARRIERD_SLOTS_SOCKET_SUFFIX) >= (int)sizeof(sa.sun_path))
		fail_msg("state file name too long for sun_path: %s", state);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_true(s >= 0);
	assert_int_equal(connect(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(dfd);
	assert_int_equal(recv_fds(s, &out->m, sizeof(out->m), fds, 8), 2);
	out->map = fds[0];
	out->link = fds[1];
	assert_int_equal(recv_fds(s, &am, sizeof(am), fds, 8), 2);
	assert_true(am.magic == BARRIERD_ANCHOR_MAGIC);
	out->aprog = fds[0];
	out->amap = fds[1];
	close(s);
}

/* What a fake server relays: descriptors (-1: left out) and whether an anchor follows. */
struct relay {
	const char *name;
	const char *file; /* "forged" or "real" (a hard link to the daemon's file) */
	const struct barrierd_slots_msg *m;
	int map, link, aprog, amap; /* amap < 0: no anchor record */
	bool accepted;
};

static char fake_dir[300], fake_state[320];
static const struct relay *cur;

/* The fake server: nobody in a user namespace of its own, serving until killed. */
static int fake_server_main(void *arg)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int lfd;

	(void)arg;
	if (enter_userns())
		return 10;
	if (strlen(fake_state) > 60)
		return 12;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.60s%s", fake_state,
		 BARRIERD_SLOTS_SOCKET_SUFFIX);
	lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || chmod(sa.sun_path, 0666) ||
	    listen(lfd, 8))
		return 11;
	for (;;) {
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		int set[2] = {cur->map, cur->link}, an[2] = {cur->aprog, cur->amap};
		struct barrierd_anchor_msg am = {.magic = BARRIERD_ANCHOR_MAGIC, .nfds = 2};

		if (c < 0)
			continue;
		bd_scm_send(c, cur->m, sizeof(*cur->m), set, 2);
		if (cur->amap >= 0)
			bd_scm_send(c, &am, sizeof(am), an, 2);
		close(c);
	}
}

static int client_main(void *arg)
{
	struct barrierd *b;
	int ret;

	(void)arg;
	if (enter_userns())
		return 10;
	ret = barrierd_open(&b, fake_state);
	if (ret == 0) {
		bool direct = barrierd_direct(b);

		barrierd_close(b);
		return direct ? 0 : 2;
	}
	return ret == -EPERM ? 1 : 3;
}

static void copy_file(const char *from, const char *to)
{
	assert_int_equal(test_system("cp '%s' '%s' && chown %d '%s' && chmod 0644 '%s'", from, to,
				     UNMAPPED_UID, to, to),
			 0);
}

static char fake_sock[340];

/*
 * A directory of root's under /tmp, mode 0755, for a socket a test binds by its path: the
 * harness's directory, in a build tree, may be too deep for sun_path (108 bytes).
 */
static char short_parent[64];

static void short_dir(char *out, size_t len, const char *name)
{
	assert_int_equal(test_mkdtemp(short_parent, sizeof(short_parent), "/tmp"), 0);
	assert_int_equal(chmod(short_parent, 0755), 0);
	snprintf(out, len, "%s/%s", short_parent, name);
}

static void short_dir_end(void)
{
	if (short_parent[0])
		rmdir(short_parent);
	short_parent[0] = 0;
}

/* The fake server's directory, nobody's. */
static void fake_begin(void)
{
	short_dir(fake_dir, sizeof(fake_dir), "fake");
	snprintf(fake_state, sizeof(fake_state), "%s/state", fake_dir);
	snprintf(fake_sock, sizeof(fake_sock), "%s%s", fake_state, BARRIERD_SLOTS_SOCKET_SUFFIX);
	assert_int_equal(mkdir(fake_dir, 0755), 0);
	assert_int_equal(chown(fake_dir, TEST_NOBODY, TEST_NOBODY), 0);
}

static void fake_end(void)
{
	unlink(fake_state);
	unlink(fake_sock);
	rmdir(fake_dir);
	short_dir_end();
}

/* A fake server relays r; a client in a user namespace opens: accepted or refused as r says. */
static void relay_open(const struct relay *r)
{
	pid_t server;
	int st;

	cur = r;
	unlink(fake_state);
	unlink(fake_sock);
	if (strcmp(cur->file, "forged") == 0)
		copy_file(H.state, fake_state);
	else
		assert_int_equal(link(H.state, fake_state), 0);
	server = fork();
	assert_true(server >= 0);
	if (server == 0)
		_exit(fake_server_main(NULL));
	for (int t = 0; t < 500 && access(fake_sock, F_OK); t++)
		usleep(10000);
	st = in_child(client_main, NULL, 30);
	kill(server, SIGKILL);
	waitpid(server, NULL, 0);
	printf("%s: %s\n", cur->name, st == 0 ? "accepted" : st == 1 ? "refused (EPERM)" : "other");
	assert_int_equal(st, cur->accepted ? 0 : 1);
}

static void userns_fake_relays_refused(void **state)
{
	struct set old, now;

	(void)state;
	fetch_set(H.state, &old);
	/* A new run: the old map's last link closes when we drop ours. */
	assert_int_equal(h_stop(&H), 0);
	assert_int_equal(h_start(&H, -1, NULL), 0);
	close(old.link);
	fetch_set(H.state, &now);
	assert_true(now.m.generation > old.m.generation);

	fake_begin();
	const struct relay relays[] = {
	    {"(a) the real map, link and anchor next to a forged file", "forged", &now.m, now.map,
	     now.link, now.aprog, now.amap, false},
	    {"(b) an earlier run's map next to the current link and anchor", "real", &now.m,
	     old.map, now.link, now.aprog, now.amap, false},
	    {"(b') an earlier run's map and anchor next to the current link", "real", &old.m,
	     old.map, now.link, old.aprog, old.amap, false},
	    {"(c) the real map and link, no anchor", "real", &now.m, now.map, now.link, -1, -1,
	     false},
	    {"the current set, relayed next to the real file", "real", &now.m, now.map, now.link,
	     now.aprog, now.amap, true},
	};
	for (size_t i = 0; i < sizeof(relays) / sizeof(relays[0]); i++)
		relay_open(&relays[i]);
	fake_end();
}

/* ---- 3. maps bound to the anchor program after its load ----------------------------------- */

static long sys_bpf(int cmd, union bpf_attr *a)
{
	return syscall(SYS_bpf, cmd, a, sizeof(*a));
}

static int bind_map(int prog_fd, int map_fd)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.prog_bind_map.prog_fd = (uint32_t)prog_fd;
	a.prog_bind_map.map_fd = (uint32_t)map_fd;
	return sys_bpf(BPF_PROG_BIND_MAP, &a) ? -errno : 0;
}

static int array_map(uint32_t value_size, uint32_t flags)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_ARRAY;
	a.key_size = 4;
	a.value_size = value_size;
	a.max_entries = 1;
	a.map_flags = flags;
	return (int)sys_bpf(BPF_MAP_CREATE, &a);
}

static int map_elem(int cmd, int fd, void *value)
{
	union bpf_attr a;
	uint32_t key = 0;

	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)fd;
	a.key = (uint64_t)(uintptr_t)&key;
	a.value = (uint64_t)(uintptr_t)value;
	return sys_bpf(cmd, &a) ? -errno : 0;
}

/* How many maps the program has now. */
static uint32_t prog_nr_maps(int prog_fd)
{
	struct bpf_prog_info pi;
	union bpf_attr a;

	memset(&pi, 0, sizeof(pi));
	memset(&a, 0, sizeof(a));
	a.info.bpf_fd = (uint32_t)prog_fd;
	a.info.info_len = sizeof(pi);
	a.info.info = (uint64_t)(uintptr_t)&pi;
	assert_int_equal(sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a), 0);
	return pi.nr_map_ids;
}

/* Nobody binds the slots map it was sent to the anchor program it was sent: 0 or -errno. */
static int bind_as_nobody(const struct set *s)
{
	pid_t pid = fork();
	int st;

	if (pid == 0)
		_exit(test_drop_to_nobody() ? 100 : -bind_map(s->aprog, s->map));
	st = test_reap(pid, 10);
	assert_true(st != -1 && WIFEXITED(st));
	return -WEXITSTATUS(st);
}

/* The user namespace's client and the host's: both open with the direct path. */
static void clients_direct(void)
{
	struct barrierd *b;

	assert_int_equal(in_child(open_direct_main, H.state, 60), 0);
	assert_int_equal(barrierd_open(&b, H.state), 0);
	assert_true(barrierd_direct(b));
	barrierd_close(b);
}

static void userns_bound_maps(void **state)
{
	unsigned char rec[sizeof(struct barrierd_anchor)];
	struct set now;
	uint32_t n0;
	int forged, ringbuf, extra[4], ret;

	(void)state;
	fetch_set(H.state, &now);
	n0 = prog_nr_maps(now.aprog);
	ret = bind_as_nobody(&now);
	printf("nobody binds the slots map to the anchor program: %s\n",
	       ret ? strerror(-ret) : "bound");
	assert_true(ret == 0 || ret == -EPERM);

	/* The anchor's record, copied into a frozen map of the same shape, bound after the load. */
	forged = array_map(sizeof(rec), BPF_F_RDONLY_PROG);
	assert_true(forged >= 0);
	assert_int_equal(map_elem(BPF_MAP_LOOKUP_ELEM, now.amap, rec), 0);
	assert_int_equal(map_elem(BPF_MAP_UPDATE_ELEM, forged, rec), 0);
	{
		union bpf_attr a;

		memset(&a, 0, sizeof(a));
		a.map_fd = (uint32_t)forged;
		assert_int_equal(sys_bpf(BPF_MAP_FREEZE, &a), 0);
	}
	assert_int_equal(bind_map(now.aprog, forged), 0);
	printf("anchor program maps: %u at the load, %u now\n", n0, prog_nr_maps(now.aprog));

	/* A map in the program's place whose type number is the syscall program's (31). */
	{
		union bpf_attr a;

		memset(&a, 0, sizeof(a));
		a.map_type = BPF_MAP_TYPE_USER_RINGBUF;
		a.max_entries = (uint32_t)sysconf(_SC_PAGESIZE);
		ringbuf = (int)sys_bpf(BPF_MAP_CREATE, &a);
		assert_true(ringbuf >= 0);
	}

	fake_begin();
	const struct relay relays[] = {
	    {"a record map bound after the load, relayed with the real set", "real", &now.m,
	     now.map, now.link, now.aprog, forged, false},
	    {"a user ring buffer (map type 31) as the anchor program, the real record", "real",
	     &now.m, now.map, now.link, ringbuf, now.amap, false},
	    {"a user ring buffer as the anchor program, the bound record copy", "real", &now.m,
	     now.map, now.link, ringbuf, forged, false},
	    {"the current set, relayed next to the real file", "real", &now.m, now.map, now.link,
	     now.aprog, now.amap, true},
	};
	for (size_t i = 0; i < sizeof(relays) / sizeof(relays[0]); i++)
		relay_open(&relays[i]);
	fake_end();
	clients_direct();

	/* More maps than a program of one map could ever list. */
	for (int i = 0; i < 4; i++) {
		extra[i] = array_map(4, 0);
		assert_true(extra[i] >= 0);
		assert_int_equal(bind_map(now.aprog, extra[i]), 0);
	}
	printf("anchor program maps: %u now\n", prog_nr_maps(now.aprog));
	clients_direct();
	for (int i = 0; i < 4; i++)
		close(extra[i]);
	close(ringbuf);
	close(forged);
}

/* ---- 3. on the host: a file of nobody's is nobody's ------------------------------------ */

/*
 * The real daemon's file, copied into a private directory of root's and given to nobody (the
 * overflow uid), with a socket listening beside it.  On the host that owner is no unmapped
 * daemon's: the open is refused with EPERM, and nothing connects to the socket.
 */
static void host_nobody_file_refused(void **state)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char dir[300], file[320];
	struct barrierd *b;
	int lfd, c;

	(void)state;
	short_dir(dir, sizeof(dir), "host");
	snprintf(file, sizeof(file), "%s/state", dir);
	if (strlen(file) > 60)
		fail_msg("state path too long for sun_path: %s", file);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.60s%s", file, BARRIERD_SLOTS_SOCKET_SUFFIX);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(test_system("cp '%s' '%s' && chown %d '%s' && chmod 0644 '%s'", H.state,
				     file, TEST_NOBODY, file, file),
			 0);
	lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(chown(sa.sun_path, TEST_NOBODY, TEST_NOBODY), 0);
	assert_int_equal(listen(lfd, 8), 0);
	assert_int_equal(barrierd_open(&b, file), -EPERM);
	c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (c >= 0)
		fail_msg("barrierd_open connected to the socket beside a file of nobody's");
	assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
	close(lfd);
	unlink(sa.sun_path);
	unlink(file);
	rmdir(dir);
	short_dir_end();
}

static int setup_running(void **state)
{
	(void)state;
	h_mkdir(&H);
	return h_start(&H, -1, NULL);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_require_root();
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(userns_open_direct, setup_running, h_teardown),
	    cmocka_unit_test_setup_teardown(userns_fake_relays_refused, setup_running, h_teardown),
	    cmocka_unit_test_setup_teardown(host_nobody_file_refused, setup_running, h_teardown),
	    cmocka_unit_test_setup_teardown(userns_bound_maps, setup_running, h_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
