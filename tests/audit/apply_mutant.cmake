# cmake -DPATCH=tests/audit/mutants/NAME.patch -DSOURCE_DIR=<repo> -DDEST=<dir> -DFOLDERS=a,b
#       -DSTAMP=<file> -P apply_mutant.cmake
#
# Copies FOLDERS (relative to SOURCE_DIR, e.g. src/daemon,bpf) to DEST and applies PATCH there,
# with no fuzz: a patch whose context no longer matches the sources fails the build.  The patch
# is applied to a staging copy first, and only files whose content differs are written to DEST,
# so that a source change rebuilds only what it changes.
foreach(v PATCH SOURCE_DIR DEST FOLDERS STAMP)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "apply_mutant.cmake: -D${v}= missing")
  endif()
endforeach()
find_program(PATCH_PROGRAM patch REQUIRED) # unless -DPATCH_PROGRAM= says where
string(REPLACE "," ";" FOLDERS "${FOLDERS}")
file(RELATIVE_PATH patch_name ${SOURCE_DIR} ${PATCH})

set(stage ${DEST}.stage)
file(REMOVE_RECURSE ${stage})
foreach(f IN LISTS FOLDERS)
  get_filename_component(parent ${stage}/${f} DIRECTORY)
  file(COPY ${SOURCE_DIR}/${f} DESTINATION ${parent})
endforeach()

# -F0: no fuzz; -N: a patch that looks applied already fails instead of being reversed;
# -r -: no .rej files.  stdin from /dev/null: patch never waits for an answer.
execute_process(
  COMMAND ${PATCH_PROGRAM} -p1 -N -F0 --no-backup-if-mismatch -r - -d ${stage} -i ${PATCH}
  INPUT_FILE /dev/null
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  file(REMOVE_RECURSE ${stage})
  string(STRIP "${out}" out)
  string(REPLACE "\n" "\n    " out "${out}")
  message(FATAL_ERROR
    "${patch_name} no longer applies to the sources (patch -p1 -F0, no fuzz):\n"
    "    ${out}\n"
    "Make the mutant again against the current sources: tests/audit/README.md, section 4.")
endif()

# Write what changed into DEST, drop what the sources no longer have.
foreach(f IN LISTS FOLDERS)
  file(GLOB_RECURSE new RELATIVE ${stage}/${f} ${stage}/${f}/*)
  file(GLOB_RECURSE old RELATIVE ${DEST}/${f} ${DEST}/${f}/*)
  foreach(x IN LISTS new)
    get_filename_component(d ${DEST}/${f}/${x} DIRECTORY)
    file(MAKE_DIRECTORY ${d})
    file(COPY_FILE ${stage}/${f}/${x} ${DEST}/${f}/${x} ONLY_IF_DIFFERENT)
  endforeach()
  if(old AND new)
    list(REMOVE_ITEM old ${new})
  endif()
  foreach(x IN LISTS old)
    file(REMOVE ${DEST}/${f}/${x})
  endforeach()
endforeach()
file(REMOVE_RECURSE ${stage})
file(TOUCH ${STAMP})
