// SPDX-License-Identifier: MIT
#include "slot_server.h"
#include "bd_scm.h"
#include "bd_sync.h"
#include "log.h"
#include "probes.h"
#include "rate_limit.h"
#include "sandbox.h"

#include <errno.h>
#include <linux/futex.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static sem_t registered;

static void sleep_until(uint64_t due)
{
	struct timespec ts = {(time_t)(due / 1000000000ULL), (long)(due % 1000000000ULL)};

	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

/*
 * The anchor, as a second record: a reader that knows only the reply reads one and closes, the
 * kernel discards this one with its descriptors.  Sent on the same connection, so a client
 * receives both from the one peer it connected to; which peer that was matters to nobody
 * (the client checks the anchor against the kernel, PROTOCOL §6.12).
 */
static int reply_anchor(struct slot_server *s, int c)
{
	struct barrierd_anchor_msg m = {.magic = BARRIERD_ANCHOR_MAGIC, .nfds = 2};

	return bd_scm_send(c, &m, sizeof(m), s->anchor_fds, 2);
}

/* One reply: the record, and the descriptors as SCM_RIGHTS.  Never blocks (a fresh socket). */
static int reply(struct slot_server *s, int c)
{
	struct barrierd_slots_msg m = {
	    .magic = BARRIERD_SLOTS_MAGIC,
	    .slot_abi = BARRIERD_SLOT_ABI,
	    .slot_size = sizeof(struct barrierd_slot),
	    .ncpu = s->ncpu,
	    .generation = bd_load(s->generation),
	    .nlinks = s->nfds - 1,
	};
	int ret = bd_scm_send(c, &m, sizeof(m), s->fds, s->nfds);

	if (ret)
		return ret;
	return s->anchor_fds[0] >= 0 ? reply_anchor(s, c) : 0;
}

static void *server_main(void *arg)
{
	struct slot_server *s = arg;
	struct rate_limit limit;
	uint32_t tid = 0;

	/* Registered: this thread's switches are the daemon's own and never signal (4.1). */
	s->start_err = probes_whoami(s->probes, &tid);
	if (!s->start_err)
		s->start_err = probes_add_daemon_tid(s->probes, tid, false);
	if (!s->start_err)
		s->start_err = sandbox_drop_privileges();
	s->tid = tid;
	sem_post(&registered);
	if (s->start_err)
		return NULL;
	while (__atomic_load_n(&s->go, __ATOMIC_ACQUIRE) == 0)
		syscall(SYS_futex, &s->go, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);

	rate_limit_init(&limit, SLOT_SERVER_RATE, SLOT_SERVER_BURST);
	while (__atomic_load_n(&s->go, __ATOMIC_ACQUIRE) == 1) {
		int c = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC), ret;
		uint64_t now;

		if (c < 0) {
			if (errno == EINVAL)
				break; /* shut down by slot_server_stop() */
			/*
			 * Anything else is transient (no descriptors or memory left, a client
			 * gone): keep serving, 10 ms later, so a persistent error costs no CPU.
			 */
			if (errno != EINTR && errno != ECONNABORTED)
				sleep_until(bd_mono_ns() + 10000000ULL);
			continue;
		}
		/*
		 * A flood waits its turn here, holding one connection: the backlog bounds the
		 * rest in the kernel, and this thread never holds more than one descriptor of
		 * its own.  A client that gives up meanwhile only costs the send below.
		 */
		now = bd_mono_ns();
		if (!rate_limit_take(&limit, now)) {
			uint64_t next = rate_limit_next(&limit, now);

			sleep_until(next);
			rate_limit_take(&limit, next);
		}
		ret = reply(s, c);
		close(c);
		if (ret)
			__atomic_fetch_add(&s->failed, 1, __ATOMIC_RELAXED);
		else
			__atomic_fetch_add(&s->served, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

int slot_server_start(struct slot_server *s, const char *path, mode_t mode, struct probes *p,
		      uint64_t ncpu, const uint64_t *generation, const int *anchor_fds)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct rlimit rl;
	struct stat st;
	int n, ret;

	memset(s, 0, sizeof(*s));
	s->lfd = -1;
	s->probes = p;
	s->ncpu = ncpu;
	s->generation = generation;
	s->anchor_fds[0] = anchor_fds ? anchor_fds[0] : -1;
	s->anchor_fds[1] = anchor_fds ? anchor_fds[1] : -1;
	n = probes_share_fds(p, s->fds, sizeof(s->fds) / sizeof(s->fds[0]));
	if (n < 0)
		return n;
	/*
	 * Descriptors in flight (sent, not yet received) count against root's user and are
	 * refused (ETOOMANYREFS) past the sender's RLIMIT_NOFILE once this thread has dropped
	 * its capabilities: a user who connects and never reads holds four per reply (two with the
	 * anchor's).  The hard limit raises the number of replies such a user must hold (each costs
	 * them a descriptor) to stop the service; that costs clients the direct path only.
	 */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	s->nfds = (unsigned)n;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	/*
	 * A socket left by an earlier run is replaced; anything else at the path is not ours
	 * to remove.  The state file's checks already made its directory root's alone.
	 */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		if (unlink(path))
			return -errno;
	}
	s->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s->lfd < 0)
		return -errno;
	/*
	 * Bound with the process's umask (at most the mode asked for), then given its mode: a
	 * client can connect only once the mode allows it, and then it is complete.
	 */
	if (bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) || chmod(path, mode) ||
	    listen(s->lfd, 16)) {
		ret = -errno;
		goto fail;
	}
	sem_init(&registered, 0, 0);
	ret = pthread_create(&s->thread, NULL, server_main, s);
	if (ret) {
		ret = -ret;
		goto fail;
	}
	s->started = true;
	while (sem_wait(&registered) && errno == EINTR)
		;
	if (s->start_err) {
		ret = s->start_err;
		slot_server_stop(s);
		return ret;
	}
	return 0;
fail:
	close(s->lfd);
	s->lfd = -1;
	return ret;
}

void slot_server_go(struct slot_server *s)
{
	if (!s->started)
		return;
	__atomic_store_n(&s->go, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &s->go, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void slot_server_stop(struct slot_server *s)
{
	/* Once: the test hooks stop it before they destroy the link, and the exit again. */
	if (__atomic_exchange_n(&s->started, false, __ATOMIC_ACQ_REL)) {
		__atomic_store_n(&s->go, 2, __ATOMIC_RELEASE);
		syscall(SYS_futex, &s->go, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		/* accept() on a socket shut down returns EINVAL: the thread leaves. */
		shutdown(s->lfd, SHUT_RDWR);
		pthread_join(s->thread, NULL);
		close(s->lfd);
		s->lfd = -1;
	}
}
