// SPDX-License-Identifier: MIT
#include "doorbell.h"
#include "bd_sync.h"
#include "probes.h"
#include "log.h"
#include "rate_limit.h"
#include "sandbox.h"
#include "state_file.h"

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static sem_t registered;

/*
 * The thread's FUTEX_WAIT lasts a random time in [DOORBELL_WAIT_MIN_NS, DOORBELL_WAIT_MAX_NS),
 * and every expiry is served as a ring.  Its word lies in a file every user maps, and any user
 * can move a waiter off it (FUTEX_CMP_REQUEUE onto a word nobody wakes): every ring after that
 * would reach nobody.  The main loop's tick finds the thread moved when nobody waits on the word
 * (doorbell_moved); what the tick cannot see (another user's waiter holding its place at the
 * ticks) the expiry serves: a ring lost to a moved thread is served within DOORBELL_WAIT_MAX_NS
 * of the start of the wait it was lost to, whatever waits on the word or the mark at any
 * instant.  Random: an attacker who knows the ticks' phase (heartbeat_ns) cannot also know when
 * the wait ends.  An idle daemon pays one wake-up of this thread and one credit pass per expiry,
 * about 1.1 a second: some 0.3 ms a second on the 2-vCPU VM (PERFORMANCE.md §14.7, DEMAND.md
 * "The doorbell").  A shorter wait would cost more and bound nothing better.  The stop does not
 * wait for it (it interrupts the wait, doorbell_stop).
 */
#define DOORBELL_WAIT_MIN_NS (750000000ULL)
#define DOORBELL_WAIT_MAX_NS (1000000000ULL)

/* xorshift64*: unpredictable enough once seeded from getrandom (doorbell_start). */
static uint64_t wait_ns(struct doorbell *d)
{
	d->rng ^= d->rng >> 12;
	d->rng ^= d->rng << 25;
	d->rng ^= d->rng >> 27;
	return DOORBELL_WAIT_MIN_NS +
	       (d->rng * 2685821657736338717ULL) % (DOORBELL_WAIT_MAX_NS - DOORBELL_WAIT_MIN_NS);
}

/* Hand a ring, or a wait's expiry, to the main loop: when it came, then the eventfd. */
static void hand_over(struct doorbell *d)
{
	uint64_t one = 1;

	/*
	 * The ring's time: later than the stamp of whoever rang (it stamps, then rings), and as
	 * early as we can read it, so that the horizon (daemon.c, on_doorbell) asks for no more
	 * than the ringers need.  An expiry's time is later than every ring lost before it.
	 * Stored before the eventfd write, which the main loop reads first (the write is a
	 * system call, and the read that sees its count is ordered after it).
	 */
	__atomic_store_n(&d->woke_ns, bd_mono_ns(), __ATOMIC_RELEASE);
	/* One eventfd write per wake; the main loop coalesces everything pending. */
	if (write(d->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("doorbell: eventfd write failed: %s", strerror(errno));
}

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
		uint64_t now, next, ns = wait_ns(d);
		struct timespec to = {(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL)};
		long r;

		/* A hint for doorbell_moved: a stale reading costs a signal and a pass at most. */
		__atomic_store_n(&d->waiting, 1, __ATOMIC_RELAXED);
		/* Relative: the kernel measures it on CLOCK_MONOTONIC, whatever word we end on. */
		r = syscall(SYS_futex, (uint32_t *)d->word, FUTEX_WAIT, 0, &to, NULL, 0);
		__atomic_store_n(&d->waiting, 0, __ATOMIC_RELAXED);
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
		/*
		 * A signal that is not the stop (checked above) is the main loop's: the thread
		 * was moved off its word, and a ring may have been lost since the tick that saw
		 * it (EINTR is served as a ring below, with this moment's time).
		 */
		if (r != 0 && errno != ETIMEDOUT && errno != EINTR) {
			/*
			 * EAGAIN: the word is not 0, which only a foreign (root) writer does.  Not
			 * a ring; and FUTEX_WAIT would return at once, forever.  The main loop's
			 * check of the file (publisher_check) stops the daemon within a heartbeat
			 * period.
			 */
			struct timespec ts = {0, 10 * 1000000L};

			clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
			continue;
		}
		/*
		 * A ring (0), an expiry (ETIMEDOUT) or the tick's signal (EINTR), after which a
		 * ring may have been lost whatever waits on the word now: served as a ring, a
		 * request to look, never evidence.  Only rings are counted (statistics: relaxed).
		 */
		if (r == 0)
			__atomic_fetch_add(&d->heard, 1, __ATOMIC_RELAXED);
		hand_over(d);
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
	/* Here, before the sandbox: its filter need not allow getrandom. */
	if (getrandom(&d->rng, sizeof(d->rng), GRND_NONBLOCK) != (ssize_t)sizeof(d->rng))
		d->rng = bd_mono_ns() ^ ((uint64_t)getpid() << 32);
	d->rng |= 1; /* xorshift's one fixed point is 0 */
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

bool doorbell_moved(struct doorbell *d)
{
	if (!d->started || !__atomic_load_n(&d->waiting, __ATOMIC_RELAXED))
		return false;
	/* Its word holds 0 (the daemon never changes it): no load needed for the count. */
	if (futex_count_u32((const uint32_t *)d->word, 0) > 0)
		return false;
	/* In its wait, yet not on its word: moved.  The signal ends that wait (EINTR). */
	pthread_kill(d->thread, DOORBELL_WAKE_SIGNAL);
	return true;
}

void doorbell_stop(struct doorbell *d)
{
	if (d->started) {
		d->stop = 1;
		while (pthread_tryjoin_np(d->thread, NULL) == EBUSY) {
			struct timespec ts = {0, 1000000};

			/*
			 * A wake of our word does not reach a thread that another user moved to a
			 * word of theirs (FUTEX_CMP_REQUEUE), nor one whose page was truncated away
			 * (the wake fails with EFAULT): interrupt its wait with a signal, every
			 * time, as well as the wake.  Repeated: a signal that lands between the
			 * thread's check of stop and its FUTEX_WAIT is spent on nothing.  And its
			 * wait ends by itself within DOORBELL_WAIT_MAX_NS, whatever becomes of
			 * these.
			 */
			syscall(SYS_futex, (uint32_t *)d->word, FUTEX_WAKE, INT32_MAX, NULL, NULL,
				0);
			pthread_kill(d->thread, DOORBELL_WAKE_SIGNAL);
			nanosleep(&ts, NULL);
		}
		d->started = false;
	}
	if (d->efd >= 0)
		close(d->efd);
	d->efd = -1;
}
