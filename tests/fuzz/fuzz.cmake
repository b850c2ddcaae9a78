# Fuzzing (issue 13): three libFuzzer targets, built with clang whatever compiler the main
# build uses, and their tests.  Included by tests/CMakeLists.txt.
#   test_fuzz (label fuzz, in the default set): the three targets side by side for 60 s each.
#   test_fuzz_long_<target> (label fuzz-long): 10 minutes each; registered only when the build
#   is configured with -DBARRIERD_FUZZ_LONG=ON, so a plain ctest never runs (or lists) them.
# New corpus entries and crash artefacts go to build/tests/fuzz/run, never the source tree.
option(BARRIERD_FUZZ_LONG "Register the 10-minute fuzz tests (ctest -L fuzz-long)" OFF)
set(BARRIERD_FUZZ_SECONDS 60 CACHE STRING "Seconds per target in test_fuzz (at least 60 in CI)")
set(BARRIERD_FUZZ_LONG_SECONDS 600 CACHE STRING "Seconds per target in test_fuzz_long_*")

find_program(BARRIERD_CLANG NAMES clang clang-14)
if(NOT BARRIERD_CLANG)
  message(FATAL_ERROR "the fuzz targets need clang and libFuzzer (scripts/deps.sh --test installs "
                      "clang and libclang-rt-14-dev)")
endif()

include(ExternalProject)
ExternalProject_Add(barrierd_fuzzers
  SOURCE_DIR ${CMAKE_CURRENT_SOURCE_DIR}/fuzz
  BINARY_DIR ${CMAKE_CURRENT_BINARY_DIR}/fuzz
  CMAKE_ARGS -DCMAKE_C_COMPILER=${BARRIERD_CLANG}
             -DCMAKE_BUILD_TYPE=RelWithDebInfo
             -DBARRIERD_SOURCE_DIR=${PROJECT_SOURCE_DIR}
             -DBARRIERD_VERSION=${PROJECT_VERSION}
             -DBARRIERD_WERROR=${BARRIERD_WERROR}
  INSTALL_COMMAND ""
  BUILD_ALWAYS ON
  USES_TERMINAL_BUILD OFF)

set(FUZZ_RUN sh ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/run_fuzz.sh ${CMAKE_CURRENT_BINARY_DIR}/fuzz
             ${CMAKE_CURRENT_SOURCE_DIR}/fuzz ${CMAKE_CURRENT_BINARY_DIR}/fuzz/run)
add_test(NAME test_fuzz COMMAND ${FUZZ_RUN} ${BARRIERD_FUZZ_SECONDS} state_file options
                                tracepoints)
math(EXPR FUZZ_TIMEOUT "${BARRIERD_FUZZ_SECONDS} * 2 + 120")
set_tests_properties(test_fuzz PROPERTIES LABELS fuzz TIMEOUT ${FUZZ_TIMEOUT})
if(BARRIERD_FUZZ_LONG)
  math(EXPR FUZZ_LONG_TIMEOUT "${BARRIERD_FUZZ_LONG_SECONDS} + 300")
  foreach(t state_file options tracepoints)
    add_test(NAME test_fuzz_long_${t} COMMAND ${FUZZ_RUN} ${BARRIERD_FUZZ_LONG_SECONDS} ${t})
    set_tests_properties(test_fuzz_long_${t} PROPERTIES LABELS fuzz-long
                         TIMEOUT ${FUZZ_LONG_TIMEOUT})
  endforeach()
endif()

# The state-file seeds' generator (not built by default; see make_seeds.c).
add_executable(fuzz_make_seeds EXCLUDE_FROM_ALL fuzz/make_seeds.c)
target_link_libraries(fuzz_make_seeds PRIVATE barrierd_testcommon)
