# Library mutants: see the comment block in CMakeLists.txt for the pattern.

# The stop rule, read order: the library loads a value, then the flags alone, so a value another
# writer stored while the file was stopped, loaded before a restart, is trusted by the flags the
# restarted daemon set (lib/trusted.c's seqlock read is what the fix adds).  A window between
# two loads: no black-box check sees it.  Caught by test_lib_wait's
# restart_between_value_and_flags against the mutant library, which stops the library between
# those two loads (tests/unit/access_hook.h) and restarts the simulated daemon there.
audit_lib_mutant(trusted_no_seqlock)
audit_reuse(audit_wait-mutant-trusted_no_seqlock ${PROJECT_SOURCE_DIR}/tests/unit/test_lib_wait.c
            DAEMON barrierd LIBS barrierd_lib-mutant-trusted_no_seqlock pthread)
audit_mutant_test(trusted_no_seqlock COMMAND ${expect} restart_between_value_and_flags
                  $<TARGET_FILE:audit_wait-mutant-trusted_no_seqlock>
                  restart_between_value_and_flags)

# The membarrier fallback without its bound: the call's result answers any stamp, one from the
# future too, though it proves a barrier only for stamps taken before it (lib/fallback.c).
# Caught by test_lib_wait's fallback_future_ns_refused against the mutant library: a stamp
# 10 s ahead, the daemon live and the fallback due at once, passes.
audit_lib_mutant(fallback_no_bound)
audit_reuse(audit_wait-mutant-fallback_no_bound ${PROJECT_SOURCE_DIR}/tests/unit/test_lib_wait.c
            DAEMON barrierd LIBS barrierd_lib-mutant-fallback_no_bound pthread)
audit_mutant_test(fallback_no_bound COMMAND ${expect} fallback_future_ns_refused
                  $<TARGET_FILE:audit_wait-mutant-fallback_no_bound> fallback_future_ns_refused)

# Rule 10, vtime: a stopped file's vtime values capped at the stop snapshot, as ns values are.
# A vtime stamp is a load of header.vtime, which a writer that came after the stop can lower
# below the snapshot: the stamp then passes on values that precede it.  Caught by
# test_after_stop's lowered_vtime_not_passed against the mutant library.
audit_lib_mutant(vtime_stop_cap)
audit_reuse(audit_after_stop-mutant-vtime_stop_cap ${integration_dir}/test_after_stop.c
            DAEMON barrierd LIBS barrierd_lib-mutant-vtime_stop_cap)
audit_mutant_test(vtime_stop_cap ROOT COMMAND ${expect} lowered_vtime_not_passed
                  $<TARGET_FILE:audit_after_stop-mutant-vtime_stop_cap> lowered_vtime_not_passed)

# Rule 10, SIGKILL: "running" read from the flag alone, without a live heartbeat.  A daemon
# killed with SIGKILL leaves RUNNING set, and a writer that comes after it is believed for good.
# Caught by test_after_stop's killed_daemon_then_writer against the mutant library.
audit_lib_mutant(trust_stale_heartbeat)
audit_reuse(audit_after_stop-mutant-trust_stale_heartbeat ${integration_dir}/test_after_stop.c
            DAEMON barrierd LIBS barrierd_lib-mutant-trust_stale_heartbeat)
audit_mutant_test(trust_stale_heartbeat ROOT COMMAND ${expect} killed_daemon_then_writer
                  $<TARGET_FILE:audit_after_stop-mutant-trust_stale_heartbeat>
                  killed_daemon_then_writer)

# ---- direct evidence, own CPU (issue 17; kept apart from the blocks above for merging) --------
#
# Rule 11: barrierd_barrier() reads its CPU before the stamp and credits it as its own.  The
# thread may have left that CPU before T.  Caught by the audit's migrate phase against the
# mutant library: the audit's sched_getcpu() (migrate.c, which the mutant library's call binds
# to as the real one's does) moves the client away at that read on half of the calls, and the
# self credit's check finds the client nowhere on the CPU it left after r.  The phase alone: it
# takes a fraction of a second, and the first moved barrier is caught.
audit_lib_mutant(direct_self_before_stamp)
audit_driver(barrierd-audit-mutant-direct_self_before_stamp
             barrierd_lib-mutant-direct_self_before_stamp)
add_dependencies(audit_mutants barrierd-audit-mutant-direct_self_before_stamp)
audit_mutant_test(direct_self_before_stamp ROOT COMMAND
                  barrierd-audit-mutant-direct_self_before_stamp --expect-violation
                  --stop-at-first --timeout-ms 500 --phases migrate)

# ---- direct evidence (DESIGN rule 11): the library's own credit from the slots ------------------

# The client's clock read with no LFENCE after it: the CPU read and the idle loads may be
# performed before the clock read completed.  A window of nanoseconds: no black-box check sees
# it.  Caught by the library's disassembly (test_audit_code_direct_fence's check).
audit_lib_mutant(direct_no_lfence)
audit_mutant_test(direct_no_lfence COMMAND ${expect} direct-disassembly
                  sh ${audit_dir}/check_disasm.sh direct
                  $<TARGET_FILE:barrierd_lib-mutant-direct_no_lfence>)

# Idle and own-CPU credit without r > T: a stamp from the future passes on a CPU that is idle
# now, or that the caller runs on now.  Caught by test_direct's future_stamp_not_passed
# against the mutant library.
audit_lib_mutant(direct_idle_vs_T)
audit_reuse(audit_direct-mutant-direct_idle_vs_T ${integration_dir}/test_direct.c
            DAEMON barrierd LIBS barrierd_lib-mutant-direct_idle_vs_T)
audit_mutant_test(direct_idle_vs_T ROOT COMMAND ${expect} future_stamp_not_passed
                  $<TARGET_FILE:audit_direct-mutant-direct_idle_vs_T> future_stamp_not_passed)

# The sched_switch link closed right after it was checked (only the map kept): once the daemon
# is killed nobody holds it, the program leaves the tracepoint and an idle word frozen at IDLE
# credits a CPU that runs a task.  Caught by test_direct's held_link_keeps_idle_live against the
# mutant library.
audit_lib_mutant(direct_detached_map)
audit_reuse(audit_direct-mutant-direct_detached_map ${integration_dir}/test_direct.c
            DAEMON barrierd LIBS barrierd_lib-mutant-direct_detached_map)
audit_mutant_test(direct_detached_map ROOT COMMAND ${expect} held_link_keeps_idle_live
                  $<TARGET_FILE:audit_direct-mutant-direct_detached_map>
                  held_link_keeps_idle_live)
