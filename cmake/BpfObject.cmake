# bpf_object(NAME SOURCE [SKELETON_NAME name])
# Compiles SOURCE with clang for the BPF target (bpf/ on the include path, as for C targets) and
# generates NAME.skel.h with bpftool.
# Defines the interface target NAME_skel that adds the skeleton's directory to includes.
find_program(BPF_CLANG NAMES clang clang-16 clang-15 clang-14 REQUIRED)
find_program(BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin REQUIRED)

function(bpf_object name source)
  cmake_parse_arguments(B "" "SKELETON_NAME" "DEPENDS" ${ARGN})
  if(NOT B_SKELETON_NAME)
    set(B_SKELETON_NAME ${name}_bpf)
  endif()
  set(out_dir ${CMAKE_BINARY_DIR}/bpf)
  set(obj ${out_dir}/${name}.bpf.o)
  set(skel ${out_dir}/${name}.skel.h)
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-multiarch
                  OUTPUT_VARIABLE multiarch OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  set(arch_inc "")
  if(multiarch)
    set(arch_inc -I/usr/include/${multiarch})
  endif()
  add_custom_command(
    OUTPUT ${obj}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
    COMMAND ${BPF_CLANG} -target bpf -g -O2 -mcpu=v3 -D__TARGET_ARCH_x86 -Wall -Werror
            -I${CMAKE_CURRENT_SOURCE_DIR} -I${PROJECT_SOURCE_DIR}/bpf ${arch_inc}
            -c ${CMAKE_CURRENT_SOURCE_DIR}/${source}
            -o ${obj}
    DEPENDS ${source} ${B_DEPENDS}
    COMMENT "BPF ${source}"
    VERBATIM)
  add_custom_command(
    OUTPUT ${skel}
    COMMAND ${BPFTOOL} gen skeleton ${obj} name ${B_SKELETON_NAME} > ${skel}
    DEPENDS ${obj}
    COMMENT "skeleton ${name}.skel.h"
    VERBATIM)
  add_custom_target(${name}_skel_gen DEPENDS ${skel})
  add_library(${name}_skel INTERFACE)
  add_dependencies(${name}_skel ${name}_skel_gen)
  target_include_directories(${name}_skel INTERFACE ${out_dir})
endfunction()
