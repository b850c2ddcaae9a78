# bpf_object(NAME SOURCE [SKELETON_NAME name] [OUTPUT_DIR dir] [OUTPUT_NAME base]
#            [DEFINES def...] [INCLUDE_DIRS dir...] [DEPENDS file...])
# Compiles SOURCE (relative to the current source directory, or absolute) with clang for the BPF
# target and generates BASE.skel.h with bpftool, BASE.bpf.o and BASE.skel.h in OUTPUT_DIR
# (default: BASE = NAME, OUTPUT_DIR = <build>/bpf).  The include path is INCLUDE_DIRS, then the
# current source directory, then bpf/, as for C targets.  DEFINES are passed as -D.
# Defines the interface target NAME_skel that adds OUTPUT_DIR to includes, and NAME_skel_gen,
# the target that generates the skeleton.
find_program(BPF_CLANG NAMES clang clang-16 clang-15 clang-14 REQUIRED)
find_program(BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin REQUIRED)
execute_process(COMMAND ${CMAKE_C_COMPILER} -print-multiarch
                OUTPUT_VARIABLE BPF_MULTIARCH OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)

function(bpf_object name source)
  cmake_parse_arguments(B "" "SKELETON_NAME;OUTPUT_DIR;OUTPUT_NAME" "DEFINES;INCLUDE_DIRS;DEPENDS"
                        ${ARGN})
  if(NOT B_SKELETON_NAME)
    set(B_SKELETON_NAME ${name}_bpf)
  endif()
  if(NOT B_OUTPUT_DIR)
    set(B_OUTPUT_DIR ${CMAKE_BINARY_DIR}/bpf)
  endif()
  if(NOT B_OUTPUT_NAME)
    set(B_OUTPUT_NAME ${name})
  endif()
  if(NOT IS_ABSOLUTE ${source})
    set(source ${CMAKE_CURRENT_SOURCE_DIR}/${source})
  endif()
  set(obj ${B_OUTPUT_DIR}/${B_OUTPUT_NAME}.bpf.o)
  set(skel ${B_OUTPUT_DIR}/${B_OUTPUT_NAME}.skel.h)
  set(flags "")
  foreach(d IN LISTS B_DEFINES)
    list(APPEND flags -D${d})
  endforeach()
  foreach(d IN LISTS B_INCLUDE_DIRS)
    list(APPEND flags -I${d})
  endforeach()
  if(BPF_MULTIARCH)
    set(arch_inc -I/usr/include/${BPF_MULTIARCH})
  endif()
  add_custom_command(
    OUTPUT ${obj}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${B_OUTPUT_DIR}
    COMMAND ${BPF_CLANG} -target bpf -g -O2 -mcpu=v3 -D__TARGET_ARCH_x86 -Wall -Werror ${flags}
            -I${CMAKE_CURRENT_SOURCE_DIR} -I${PROJECT_SOURCE_DIR}/bpf ${arch_inc}
            -c ${source}
            -o ${obj}
    DEPENDS ${source} ${B_DEPENDS}
    COMMENT "BPF ${name}"
    VERBATIM)
  add_custom_command(
    OUTPUT ${skel}
    COMMAND ${BPFTOOL} gen skeleton ${obj} name ${B_SKELETON_NAME} > ${skel}
    DEPENDS ${obj}
    COMMENT "skeleton ${name}: ${B_OUTPUT_NAME}.skel.h"
    VERBATIM)
  add_custom_target(${name}_skel_gen DEPENDS ${skel})
  add_library(${name}_skel INTERFACE)
  add_dependencies(${name}_skel ${name}_skel_gen)
  target_include_directories(${name}_skel INTERFACE ${B_OUTPUT_DIR})
endfunction()
