# cmake -DGIT=... -DSOURCE_DIR=... -DCOMMIT=... -DDEST=... -DWRAPPER=... -P extract_old.cmake
#
# The compatibility test's download step: the library as it was at COMMIT (lib/, the public
# header, the internal shared folder it includes (common/, or src/common/ in commits before it
# moved), and the top-level CMakeLists.txt for its
# version), taken from SOURCE_DIR's git history into DEST, never into the source tree, so the
# repository holds no second copy of the library.  WRAPPER becomes DEST's CMakeLists.txt: the
# part of the top-level list the library's own list relies on.
foreach(v GIT SOURCE_DIR COMMIT DEST WRAPPER)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "extract_old.cmake: ${v} is not set")
  endif()
endforeach()

file(REMOVE_RECURSE ${DEST})
file(MAKE_DIRECTORY ${DEST})
# The shared folder where that commit has it: git archive fails on a path the commit lacks.
execute_process(COMMAND ${GIT} -C ${SOURCE_DIR} cat-file -e ${COMMIT}:common
                RESULT_VARIABLE no_common OUTPUT_QUIET ERROR_QUIET)
if(no_common)
  set(shared src/common)
else()
  set(shared common)
endif()
execute_process(
  COMMAND ${GIT} -C ${SOURCE_DIR} archive --format=tar -o ${DEST}.tar ${COMMIT} --
          CMakeLists.txt lib include ${shared}
  RESULT_VARIABLE rc ERROR_VARIABLE err)
if(rc)
  message(FATAL_ERROR "cannot extract the library of commit ${COMMIT} from ${SOURCE_DIR} "
                      "(git archive: ${err}); the compatibility test needs a clone with that "
                      "commit in its history")
endif()
file(ARCHIVE_EXTRACT INPUT ${DEST}.tar DESTINATION ${DEST})
file(REMOVE ${DEST}.tar)
file(RENAME ${DEST}/CMakeLists.txt ${DEST}/CMakeLists.upstream.txt)
configure_file(${WRAPPER} ${DEST}/CMakeLists.txt COPYONLY)
