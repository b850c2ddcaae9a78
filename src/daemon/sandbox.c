// SPDX-License-Identifier: MIT
#include "sandbox.h"
#include "doorbell.h"
#include "log.h"
#include "state_file.h"

#include <barrierd.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int sandbox_drop_privileges(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	/* Effective, permitted and inheritable all empty: nothing can be regained. */
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	return 0;
}

#ifdef BARRIERD_SANITIZE
/* LeakSanitizer's interface (sanitizer/lsan_interface.h), weak: present only with LSan. */
extern void __lsan_do_leak_check(void) __attribute__((weak));
#endif

static uint64_t *sigsys_flags;

/* Async-signal-safe: a store to the mapped file, write(2) and _exit(2) only. */
static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	char msg[128];
	int nr = si->si_syscall, n;

	(void)sig;
	(void)uc;
	/* One RMW: the main thread may be changing the flags at the same moment. */
	if (sigsys_flags)
		state_flags_update(sigsys_flags, BARRIERD_FLAGS_STATE_MASK, BARRIERD_FLAG_STOPPED);
	n = snprintf(msg, sizeof(msg),
		     "<2>barrierd: seccomp: forbidden system call %d; state marked stopped, "
		     "exiting\n",
		     nr);
	if (n > 0 && write(2, msg, (size_t)n) < 0) {
	}
	_exit(70); /* EX_SOFTWARE */
}

int sandbox_install_filter(uint64_t *flags_word)
{
	/* What the steady state calls (main loop, doorbell thread, logging, shutdown). */
	static const int allowed[] = {
	    SCMP_SYS(epoll_wait),
	    SCMP_SYS(epoll_pwait),
	    SCMP_SYS(epoll_pwait2),
	    SCMP_SYS(read),
	    SCMP_SYS(write),
	    SCMP_SYS(writev),
	    SCMP_SYS(pread64),
	    SCMP_SYS(futex),
	    SCMP_SYS(clock_gettime),
	    SCMP_SYS(clock_nanosleep),
	    SCMP_SYS(nanosleep),
	    SCMP_SYS(getrusage),
	    SCMP_SYS(getcpu),
	    SCMP_SYS(sched_yield),
	    SCMP_SYS(sendto),
	    SCMP_SYS(close),
	    SCMP_SYS(munmap),
	    SCMP_SYS(madvise),
	    SCMP_SYS(brk),
	    SCMP_SYS(mremap),
	    SCMP_SYS(rt_sigreturn),
	    SCMP_SYS(rt_sigprocmask),
	    SCMP_SYS(exit),
	    SCMP_SYS(exit_group),
	    SCMP_SYS(getpid),
	    SCMP_SYS(gettid),
	    SCMP_SYS(restart_syscall),
	    SCMP_SYS(timerfd_settime),
	    SCMP_SYS(rseq),
	    SCMP_SYS(set_robust_list),
	    /*
	     * The heartbeat's check of the state file (state_file_check): fstat of our
	     * descriptor, lstat of the path (glibc makes both newfstatat; fstat for other
	     * libcs).  Metadata only; the SIGBUS handler's fstat too.
	     */
	    SCMP_SYS(newfstatat),
	    SCMP_SYS(fstat),
	    /*
	     * The slot server (slot_server.c): accept a client, send it the descriptors it
	     * already holds the rights to hand out, and, at the stop, shut the socket down.
	     */
	    SCMP_SYS(accept4),
	    SCMP_SYS(sendmsg),
	    SCMP_SYS(shutdown),
	};
#ifdef BARRIERD_SANITIZE
	/*
	 * Sanitizer builds only (BARRIERD_SANITIZE=...): what the ASan/UBSan runtime calls in the
	 * steady state and at exit, found with the filter in log mode.  A shipped build's filter
	 * has none of them.
	 *   sigaltstack: the runtime gives every thread an alternate signal stack for its deadly
	 *     signal handlers and takes it down again when the thread exits (the doorbell thread at
	 *     shutdown), before it unmaps it.
	 *   sched_getaffinity: the runtime counts the CPUs when a thread first needs it after the
	 *     filter is on (seen with the test-hook build's detaching thread, test_detach).
	 */
	static const int sanitizer_allowed[] = {
	    SCMP_SYS(sigaltstack),
	    SCMP_SYS(sched_getaffinity),
	};
#endif
	struct sigaction sa;
	scmp_filter_ctx ctx;
	int ret;

	sigsys_flags = flags_word;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSYS, &sa, NULL);

	ctx = seccomp_init(SCMP_ACT_TRAP);
	if (!ctx)
		return -ENOMEM;
	ret = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	for (size_t i = 0; !ret && i < sizeof(allowed) / sizeof(allowed[0]); i++)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0);
#ifdef BARRIERD_SANITIZE
	for (size_t i = 0; !ret && i < sizeof(sanitizer_allowed) / sizeof(sanitizer_allowed[0]);
	     i++)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, sanitizer_allowed[i], 0);
#endif
	/* malloc may map anonymous memory; never executable. */
	if (!ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
				       SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (!ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
				       SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	/*
	 * The fold rate limit and the follow gate (daemon.c, watch) stop and resume watching
	 * the ring buffer and the doorbell's eventfd, and the peek window the state file's opens
	 * (an inotify descriptor, read with read()): EPOLL_CTL_MOD only, never a new descriptor
	 * in the set.
	 */
	if (!ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(epoll_ctl), 1,
				       SCMP_A1(SCMP_CMP_EQ, EPOLL_CTL_MOD));
	/*
	 * A nudge thread back on its CPU after that CPU went offline and came back (nudge.c):
	 * its own affinity only (pid 0).
	 */
	if (!ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(sched_setaffinity), 1,
				       SCMP_A0(SCMP_CMP_EQ, 0));
	/*
	 * The stop's interruption of the doorbell thread's wait, on whatever word it is
	 * (doorbell_stop): pthread_kill, to this process only, with that one signal.
	 */
	if (!ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 2,
				       SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid()),
				       SCMP_A2(SCMP_CMP_EQ, DOORBELL_WAKE_SIGNAL));
#ifdef BARRIERD_SANITIZE
	/*
	 * LeakSanitizer's check at exit stops the world with a ptrace()ing clone (clone, prctl,
	 * ptrace, wait4, getppid, ...): far more than a sandbox may allow.  Run it here instead,
	 * the last moment it can run: it reports what setup leaked, and marks the check done so
	 * that exit does not try again.  Without LSan (UBSan alone) the symbol is absent.
	 */
	if (!ret && __lsan_do_leak_check)
		__lsan_do_leak_check();
#endif
	if (!ret)
		ret = seccomp_load(ctx);
	seccomp_release(ctx);
	return ret;
}
