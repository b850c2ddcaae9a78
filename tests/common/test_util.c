// SPDX-License-Identifier: MIT
/*
 * The tests' common helpers (test_util.h).
 */
#include "test_util.h"
#include "bd_scm.h"

#include <barrierd_slot.h>

#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void test_sleep_ns(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / TEST_SEC), .tv_nsec = (long)(ns % TEST_SEC)};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

void test_sleep_ms(long ms)
{
	test_sleep_ns((uint64_t)ms * TEST_MS);
}

int test_mkdtemp(char *out, size_t len, const char *parent)
{
	if ((size_t)snprintf(out, len, "%s/barrierd-test.XXXXXX", parent) >= len)
		return -ENAMETOOLONG;
	if (!mkdtemp(out))
		return -errno;
	if (chmod(out, 0755))
		return -errno;
	return 0;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(p);
	return 0;
}

void test_rmtree(const char *dir)
{
	if (dir && *dir)
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int test_write_file(const char *path, const void *buf, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	const char *p = buf;
	int ret = 0;

	if (fd < 0)
		return -errno;
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			ret = -errno;
			break;
		}
		p += n;
		len -= (size_t)n;
	}
	if (!ret && fchmod(fd, mode))
		ret = -errno;
	close(fd);
	return ret;
}

struct barrierd_header *test_map_rw(const char *path, size_t *size)
{
	struct stat st;
	void *m;
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		close(fd);
		return NULL;
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return NULL;
	*size = (size_t)st.st_size;
	return m;
}

struct barrierd_ext *test_ext_of(const void *file, uint64_t ncpu)
{
	return (struct barrierd_ext *)((uintptr_t)file + barrierd_ext_offset(ncpu));
}

void test_boot_id(uint8_t id[16])
{
	char txt[64];
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	size_t n = 0;

	memset(id, 0, 16);
	if (!f)
		return;
	if (fgets(txt, sizeof(txt), f)) {
		for (const char *p = txt; *p && n < 32; p++) {
			unsigned v;

			if (*p >= '0' && *p <= '9')
				v = (unsigned)(*p - '0');
			else if (*p >= 'a' && *p <= 'f')
				v = (unsigned)(*p - 'a' + 10);
			else
				continue;
			id[n / 2] = (uint8_t)(id[n / 2] | (v << (n % 2 ? 0 : 4)));
			n++;
		}
	}
	fclose(f);
}

uint64_t test_possible_cpus(void)
{
	char buf[256];
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	long last = 0;

	if (f && fgets(buf, sizeof(buf), f)) {
		char *dash = strrchr(buf, '-');

		last = strtol(dash ? dash + 1 : buf, NULL, 10);
	}
	if (f)
		fclose(f);
	return (uint64_t)last + 1;
}

long test_futex_wake(const uint64_t *word)
{
	return syscall(SYS_futex, (const uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

int test_await_sleeper(const uint64_t *word, uint64_t timeout_ns)
{
	uint64_t end = bd_mono_ns() + timeout_ns;

	do {
		if (test_futex_wake(word) > 0)
			return 1;
		test_sleep_ns(200 * TEST_US);
	} while (bd_mono_ns() < end);
	return 0;
}

void test_pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

int test_reap(pid_t pid, int seconds)
{
	int status;

	for (int i = 0; i < seconds * 100; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		test_sleep_ms(10);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

int test_system(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

pid_t test_spin_on(int cpu, int niceness)
{
	pid_t pid = fork();

	if (pid == 0) {
		/* Never outlive the test, whatever ends it (a failed assertion, a kill). */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() == 1)
			_exit(0);
		test_pin(cpu);
		if (nice(niceness) < 0) {
		}
		for (;;)
			__asm__ __volatile__("pause");
	}
	return pid;
}

pid_t test_spin_running(int cpu)
{
	int p[2], here = -1;
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() == 1)
			_exit(0);
		test_pin(cpu);
		here = sched_getcpu();
		if (write(p[1], &here, sizeof(here)) != sizeof(here))
			_exit(1);
		close(p[1]);
		for (;;)
			__asm__ __volatile__("pause");
	}
	close(p[1]);
	if (pid < 0 || read(p[0], &here, sizeof(here)) != sizeof(here) || here != cpu) {
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		pid = -1;
	}
	close(p[0]);
	return pid;
}

int test_spinners(pid_t *pids, int max)
{
	int n = (int)sysconf(_SC_NPROCESSORS_ONLN);

	if (n > max)
		n = max;
	for (int i = 0; i < n; i++)
		pids[i] = test_spin_on(i, 19);
	return n;
}

void test_unpin(void)
{
	cpu_set_t all;
	long n = sysconf(_SC_NPROCESSORS_CONF);

	CPU_ZERO(&all);
	for (long c = 0; c < n && c < CPU_SETSIZE; c++)
		CPU_SET(c, &all);
	sched_setaffinity(0, sizeof(all), &all);
}

void test_kill_all(pid_t *pids, int n)
{
	for (int i = 0; i < n; i++) {
		if (pids[i] <= 0)
			continue;
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
		pids[i] = -1;
	}
}

int test_drop_to_nobody(void)
{
	if (setgroups(0, NULL) || setresgid(TEST_NOBODY, TEST_NOBODY, TEST_NOBODY) ||
	    setresuid(TEST_NOBODY, TEST_NOBODY, TEST_NOBODY))
		return -errno;
	return getuid() == TEST_NOBODY && geteuid() == TEST_NOBODY ? 0 : -EPERM;
}

int test_as_nobody(int (*fn)(void *), void *arg, int seconds)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (test_drop_to_nobody())
			_exit(100);
		_exit(fn(arg));
	}
	st = test_reap(pid, seconds);
	if (st == -1 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/*
 * What the library does: connect to the socket, receive one record and its descriptors
 * (MSG_CMSG_CLOEXEC, room for the map and BARRIERD_SLOTS_MAX_LINKS links).  The number of
 * descriptors received (in fds), or -errno.
 */
int test_slots_fetch(const char *sock, struct barrierd_slots_msg *m, int *fds, int max)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	unsigned n = 0;
	ssize_t r;
	int s;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = errno;

		close(s);
		return -e;
	}
	r = bd_scm_recv(s, m, sizeof(*m), fds, max < 0 ? 0 : (unsigned)max, &n);
	close(s);
	if (r < 0 && r != -EPROTO)
		return (int)r;
	return r == (ssize_t)sizeof(*m) ? (int)n : -EPROTO;
}

const struct barrierd_slot *test_map_slots(const char *dir, size_t *len, uint64_t *ncpu)
{
	struct barrierd_slots_msg m;
	int dfd, nfds, fds[1 + BARRIERD_SLOTS_MAX_LINKS];
	char sock[108];
	void *map = MAP_FAILED;

	/* Through the directory's descriptor: the build tree's path may not fit sun_path. */
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return NULL;
	snprintf(sock, sizeof(sock), "/proc/self/fd/%d/state%s", dfd, BARRIERD_SLOTS_SOCKET_SUFFIX);
	nfds = test_slots_fetch(sock, &m, fds, (int)(1 + BARRIERD_SLOTS_MAX_LINKS));
	close(dfd);
	if (nfds >= 2) {
		*len = (size_t)m.ncpu * sizeof(struct barrierd_slot);
		*ncpu = m.ncpu;
		map = mmap(NULL, *len, PROT_READ, MAP_SHARED, fds[0], 0);
	}
	for (int i = 0; i < nfds; i++)
		close(fds[i]); /* the mapping keeps the map; no link is kept */
	return map == MAP_FAILED ? NULL : map;
}
