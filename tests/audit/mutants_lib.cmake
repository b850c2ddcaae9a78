# Library mutants: see the comment block in CMakeLists.txt for the pattern.

# The stop rule, read order: the library loads a value, then the flags alone, so a value another
# writer stored while the file was stopped, loaded before a restart, is trusted by the flags the
# restarted daemon set (lib/trusted.c's seqlock read is what the fix adds).  A window between
# two loads: no black-box check sees it.  Caught by test_lib_wait's
# restart_between_value_and_flags against the mutant library, which stops the library between
# those two loads (tests/unit/access_hook.h) and restarts the simulated daemon there.
audit_lib_mutant(trusted_no_seqlock BARRIERD_MUTANT_TRUSTED_NO_SEQLOCK)
audit_reuse(audit_wait-mutant-trusted_no_seqlock ${PROJECT_SOURCE_DIR}/tests/unit/test_lib_wait.c
            DAEMON barrierd LIBS barrierd_lib-mutant-trusted_no_seqlock pthread)
audit_mutant_test(trusted_no_seqlock COMMAND ${expect} restart_between_value_and_flags
                  $<TARGET_FILE:audit_wait-mutant-trusted_no_seqlock>
                  restart_between_value_and_flags)
