# Runs at install time (install(CODE) sets BD_LIBDIR, BD_INCLUDEDIR, BD_VERSION, BD_TEMPLATE):
# writes barrierd.pc with the install directories of *this* install, so the file is right
# for `cmake --install --prefix ANY` and for absolute CMAKE_INSTALL_LIBDIR values alike.
foreach(v BD_LIBDIR BD_INCLUDEDIR)
  if(NOT IS_ABSOLUTE "${${v}}")
    set(${v} "${CMAKE_INSTALL_PREFIX}/${${v}}")
  endif()
endforeach()
set(prefix "${CMAKE_INSTALL_PREFIX}")
set(libdir "${BD_LIBDIR}")
set(includedir "${BD_INCLUDEDIR}")
set(version "${BD_VERSION}")
configure_file("${BD_TEMPLATE}" "$ENV{DESTDIR}${BD_LIBDIR}/pkgconfig/barrierd.pc" @ONLY)
message(STATUS "Installing: $ENV{DESTDIR}${BD_LIBDIR}/pkgconfig/barrierd.pc")
