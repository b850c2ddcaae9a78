// SPDX-License-Identifier: MIT
#include "doorbell.h"
#include "bd_sync.h"
#include "probes.h"
#include "log.h"
#include "rate_limit.h"
#include "sandbox.h"

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static sem_t registered;

static void *doorbell_main(void *arg)
{
	struct doorbell *d = arg;
	uint32_t tid = 0;
	struct rate_limit limit;

	d->start_err = probes_whoami(d->probes, &tid);
	if (!d->start_err)
		d->start_err = probes_add_daemon_tid(d->probes, tid, false);
	/* Capabilities and no_new_privs are per thread: this one drops its own. */
	if (!d->start_err)
		d->start_err = sandbox_drop_privileges();
	d->tid = tid;
	sem_post(&registered);
	if (d->start_err)
		return NULL;

	rate_limit_init(&limit, d->rate, BARRIERD_CREDIT_BURST);
	while (!d->stop) {
		uint64_t one = 1, now, next;
		long r = syscall(SYS_futex, (uint32_t *)d->word, FUTEX_WAIT, 0, NULL, NULL, 0);

		if (d->stop)
			break;
		if (r != 0 && errno == EFAULT) {
			/*
			 * The word's page is gone: the state file was truncated under us.  Waiting
			 * again would fail at once, forever; the main loop's heartbeat (or its
			 * SIGBUS handler) stops the daemon.
			 */
			log_warn(
			    "doorbell: the state file's doorbell word is gone (file truncated?); "
			    "no more rings");
			break;
		}
		if (r != 0 && errno != EAGAIN)
			continue; /* EINTR */
		if (r != 0) {
			/*
			 * The word is not 0: only a foreign (root) writer does that.  Not a ring;
			 * and FUTEX_WAIT would return at once, forever.  The main loop's check of
			 * the file (publisher_check) stops the daemon within a heartbeat period.
			 */
			struct timespec ts = {0, 10 * 1000000L};

			clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
			continue;
		}
		/*
		 * The ring's time: later than the stamp of whoever rang (it stamps, then rings),
		 * and as early as we can read it, so that the horizon (daemon.c, on_doorbell) asks
		 * for no more than the ringers need.  Stored before the eventfd write that the main
		 * loop reads first.
		 */
		__atomic_store_n(&d->woke_ns, bd_mono_ns(), __ATOMIC_RELEASE);
		/* One eventfd write per wake; the main loop coalesces everything pending. */
		if (write(d->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			log_warn("doorbell: eventfd write failed: %s", strerror(errno));
		/*
		 * Flood bound: wake-ups at the credit rate, with the same burst as the credit
		 * passes.  Once the burst is spent, sit out the gap: a ring that arrives while we
		 * are not waiting returns 0 to its FUTEX_WAKE; its client re-rings (bounded) and
		 * otherwise sleeps with a bounded timeout, so a lost ring only delays.
		 */
		now = bd_mono_ns();
		if (!rate_limit_take(&limit, now)) {
			struct timespec ts;

			/* Rings come faster than we serve them: the main loop follows (daemon.c).
			 */
			__atomic_store_n(&d->saturated, 1, __ATOMIC_RELAXED);
			next = rate_limit_next(&limit, now);
			ts.tv_sec = (time_t)(next / 1000000000ULL);
			ts.tv_nsec = (long)(next % 1000000000ULL);
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			rate_limit_take(&limit, next);
		}
	}
	return NULL;
}

/* Interrupts the thread's FUTEX_WAIT (no SA_RESTART): see doorbell_stop. */
static void on_wake_signal(int sig)
{
	(void)sig;
}

int doorbell_start(struct doorbell *d, uint64_t *word, struct probes *probes, uint64_t rate)
{
	pthread_attr_t attr;
	struct sched_param sp = {.sched_priority = 1};
	struct sigaction sa;
	int ret;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_wake_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(DOORBELL_WAKE_SIGNAL, &sa, NULL);

	memset(d, 0, sizeof(*d));
	d->word = word;
	d->probes = probes;
	d->rate = rate;
	d->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->efd < 0)
		return -errno;
	sem_init(&registered, 0, 0);
	pthread_attr_init(&attr);
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
	pthread_attr_setschedparam(&attr, &sp);
	ret = pthread_create(&d->thread, &attr, doorbell_main, d);
	if (ret == EPERM) {
		log_warn("doorbell: no permission for SCHED_FIFO; running it at normal priority");
		ret = pthread_create(&d->thread, NULL, doorbell_main, d);
	}
	pthread_attr_destroy(&attr);
	if (ret) {
		close(d->efd);
		d->efd = -1;
		return -ret;
	}
	d->started = true;
	while (sem_wait(&registered) && errno == EINTR)
		;
	if (d->start_err) {
		doorbell_stop(d);
		return d->start_err;
	}
	return 0;
}

void doorbell_stop(struct doorbell *d)
{
	if (d->started) {
		d->stop = 1;
		/* Our own ring wakes the thread; it sees stop and leaves. */
		while (pthread_tryjoin_np(d->thread, NULL) == EBUSY) {
			struct timespec ts = {0, 1000000};

			/*
			 * A wake of a word whose page was truncated away fails (EFAULT) and the
			 * thread's wait never ends by itself: interrupt it with a signal.
			 */
			if (syscall(SYS_futex, (uint32_t *)d->word, FUTEX_WAKE, INT32_MAX, NULL,
				    NULL, 0) < 0)
				pthread_kill(d->thread, DOORBELL_WAKE_SIGNAL);
			nanosleep(&ts, NULL);
		}
		d->started = false;
	}
	if (d->efd >= 0)
		close(d->efd);
	d->efd = -1;
}
