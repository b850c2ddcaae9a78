# How a mutant is built (README.md, section 4).  Mutant NAME is tests/audit/mutants/NAME.patch, a
# unified diff against the shipped sources.  The build copies what the mutant's program is built
# from (src/daemon/ and bpf/ for the daemon, lib/ for the library) to
# <build>/tests/audit/mutant-NAME/, applies the patch there with no fuzz (apply_mutant.cmake: a
# patch that no longer applies fails the build), and builds the mutant's targets from that copy.
# The shipped sources hold no trace of any mutant.

set(mutant_patch_dir ${audit_dir}/mutants)
find_program(PATCH_PROGRAM patch REQUIRED)

# What each kind of mutant copies: the folders its program is built from.
set(mutant_daemon_folders src/daemon bpf)
set(mutant_lib_folders lib)

# audit_mutant_sources(NAME KIND): the copy of KIND's folders (daemon or lib) with NAME.patch
# applied, made by the target audit_mutant_src-NAME.  Sets mutant_dir (the copy's root) and
# mutant_bpf (whether the patch changes bpf/) in the caller's scope.
function(audit_mutant_sources name kind)
  set(patch ${mutant_patch_dir}/${name}.patch)
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/mutant-${name})
  set(folders ${mutant_${kind}_folders})
  if(NOT EXISTS ${patch})
    message(FATAL_ERROR "mutant ${name}: ${patch} does not exist")
  endif()
  # The files the patch changes ("+++ b/PATH") must lie in the folders a KIND mutant copies.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${patch})
  file(STRINGS ${patch} targets REGEX "^\\+\\+\\+ b/")
  set(bpf FALSE)
  foreach(t IN LISTS targets)
    string(REGEX REPLACE "^\\+\\+\\+ b/([^\t]*).*" "\\1" t "${t}")
    set(ok FALSE)
    foreach(f IN LISTS folders)
      if(t MATCHES "^${f}/")
        set(ok TRUE)
      endif()
    endforeach()
    if(NOT ok)
      string(REPLACE ";" "/, " shown "${folders}")
      message(FATAL_ERROR "mutants/${name}.patch changes ${t}: a ${kind} mutant is built from "
                          "a copy of ${shown}/ only")
    endif()
    if(t MATCHES "^bpf/")
      set(bpf TRUE)
    endif()
  endforeach()
  if(NOT targets)
    message(FATAL_ERROR "mutants/${name}.patch changes no file")
  endif()
  set(mutant_dir ${dir} PARENT_SCOPE)
  set(mutant_bpf ${bpf} PARENT_SCOPE)
  if(TARGET audit_mutant_src-${name})
    return()
  endif()

  # Re-applied whenever the patch or any file of the copied folders changes.  The copies of
  # the sources are byproducts: the mutant's targets compile them.
  set(inputs "")
  set(copies "")
  foreach(f IN LISTS folders)
    file(GLOB_RECURSE in CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR}
         ${PROJECT_SOURCE_DIR}/${f}/*)
    foreach(x IN LISTS in)
      list(APPEND inputs ${PROJECT_SOURCE_DIR}/${x})
      list(APPEND copies ${dir}/${x})
    endforeach()
  endforeach()
  string(REPLACE ";" "," folder_arg "${folders}")
  add_custom_command(
    OUTPUT ${dir}.applied
    BYPRODUCTS ${copies}
    COMMAND ${CMAKE_COMMAND} -DPATCH=${patch} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DDEST=${dir}
            -DFOLDERS=${folder_arg} -DSTAMP=${dir}.applied -DPATCH_PROGRAM=${PATCH_PROGRAM}
            -P ${audit_dir}/apply_mutant.cmake
    DEPENDS ${patch} ${audit_dir}/apply_mutant.cmake ${inputs}
    COMMENT "mutant ${name}: applying tests/audit/mutants/${name}.patch to a copy"
    VERBATIM)
  add_custom_target(audit_mutant_src-${name} DEPENDS ${dir}.applied)
  set_property(TARGET audit_mutant_src-${name} APPEND PROPERTY ADDITIONAL_CLEAN_FILES ${dir})
endfunction()

# The sources of a shipped target, as paths in mutant NAME's copy.
function(audit_mutant_target_sources out target dir)
  get_target_property(srcs ${target} SOURCES)
  get_target_property(src_dir ${target} SOURCE_DIR)
  file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${src_dir})
  list(TRANSFORM srcs PREPEND ${dir}/${rel}/)
  set(${out} ${srcs} PARENT_SCOPE)
endfunction()

set(mutant_daemon_libs PkgConfig::LIBBPF PkgConfig::AUDIT_SECCOMP PkgConfig::AUDIT_SYSTEMD pthread)

# barrierd_core-mutant-NAME: barrierd_core (the daemon's pieces without BPF) from the copy, for
# the mutant daemon, its test-hook build and the publisher simulation.
function(audit_mutant_core name)
  if(TARGET barrierd_core-mutant-${name})
    return()
  endif()
  audit_mutant_sources(${name} daemon)
  audit_mutant_target_sources(srcs barrierd_core ${mutant_dir})
  set(t barrierd_core-mutant-${name})
  add_library(${t} STATIC EXCLUDE_FROM_ALL ${srcs})
  target_include_directories(${t} PUBLIC ${PROJECT_SOURCE_DIR}/include ${mutant_dir}/bpf
                             ${mutant_dir}/src/daemon)
  target_link_libraries(${t} PUBLIC barrierd_internal)
  target_compile_options(${t} PRIVATE -Wno-unused-function) # as in audit_lib_mutant
  add_dependencies(${t} audit_mutant_src-${name})
  if(mutant_bpf)
    # The daemon's programs, compiled from the copy, under the skeleton's usual name.
    file(GLOB bpf_headers RELATIVE ${PROJECT_SOURCE_DIR}/bpf CONFIGURE_DEPENDS
         ${PROJECT_SOURCE_DIR}/bpf/*.h)
    list(TRANSFORM bpf_headers PREPEND ${mutant_dir}/bpf/)
    # The slot layout is public (include/barrierd_slot.h): not in the copy, taken as shipped.
    bpf_object(barrierd-mutant-${name} ${mutant_dir}/bpf/barrierd.bpf.c
               SKELETON_NAME barrierd_bpf OUTPUT_DIR ${mutant_dir}/skel OUTPUT_NAME barrierd
               INCLUDE_DIRS ${mutant_dir}/bpf ${PROJECT_SOURCE_DIR}/include
               DEPENDS ${bpf_headers} ${PROJECT_SOURCE_DIR}/include/barrierd_slot.h)
    add_dependencies(barrierd-mutant-${name}_skel_gen audit_mutant_src-${name})
  endif()
endfunction()

# A daemon executable from mutant NAME's copy: barrierd's sources, the mutant core, and the
# mutant's skeleton if its patch changes bpf/.
function(audit_mutant_daemon_exe t name)
  audit_mutant_core(${name})
  audit_mutant_sources(${name} daemon)
  audit_mutant_target_sources(srcs barrierd ${mutant_dir})
  add_executable(${t} EXCLUDE_FROM_ALL ${srcs})
  # The anchor's program is no mutant's: taken as shipped.
  target_link_libraries(${t} PRIVATE barrierd_core-mutant-${name} ${mutant_daemon_libs}
                                     barrierd_anchor_skel)
  if(mutant_bpf)
    target_link_libraries(${t} PRIVATE barrierd-mutant-${name}_skel)
  else()
    target_link_libraries(${t} PRIVATE barrierd_skel)
  endif()
  add_dependencies(audit_mutants ${t})
endfunction()

# barrierd-mutant-NAME.
function(audit_daemon_mutant name)
  audit_mutant_daemon_exe(barrierd-mutant-${name} ${name})
endfunction()

# barrierd-testhooks-mutant-NAME: the test-only build (BARRIERD_TEST_HOOKS) of the mutant.
function(audit_testhooks_mutant name)
  audit_mutant_daemon_exe(barrierd-testhooks-mutant-${name} ${name})
  target_compile_definitions(barrierd-testhooks-mutant-${name} PRIVATE BARRIERD_TEST_HOOKS)
endfunction()

# audit_publisher_sim-mutant-NAME: the publisher simulation against the mutant's core.
function(audit_publisher_sim_mutant name)
  audit_mutant_core(${name})
  audit_publisher_sim(audit_publisher_sim-mutant-${name} barrierd_core-mutant-${name})
  add_dependencies(audit_mutants audit_publisher_sim-mutant-${name})
endfunction()

# libbarrierd-mutant-NAME.so (target barrierd_lib-mutant-NAME): the library from the copy,
# exporting exactly what libbarrierd exports.
function(audit_lib_mutant name)
  audit_mutant_sources(${name} lib)
  audit_mutant_target_sources(srcs barrierd_lib ${mutant_dir})
  set(t barrierd_lib-mutant-${name})
  set(map ${mutant_dir}/lib/libbarrierd.map)
  add_library(${t} SHARED EXCLUDE_FROM_ALL ${srcs})
  set_target_properties(${t} PROPERTIES OUTPUT_NAME barrierd-mutant-${name}
                        C_VISIBILITY_PRESET hidden LINK_DEPENDS ${map})
  target_include_directories(${t} PUBLIC ${PROJECT_SOURCE_DIR}/include)
  target_include_directories(${t} PRIVATE ${mutant_dir}/lib ${PROJECT_SOURCE_DIR}/common)
  target_link_options(${t} PRIVATE -Wl,--version-script=${map} -Wl,--no-undefined)
  # A mutant that drops a call leaves its helper unused (clang warns on static inline ones).
  target_compile_options(${t} PRIVATE -Wno-unused-function)
  add_dependencies(${t} audit_mutant_src-${name})
  add_dependencies(audit_mutants ${t})
endfunction()
