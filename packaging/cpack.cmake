# Distribution packages with CPack: `cmake -S . -B build -DCMAKE_INSTALL_PREFIX=/usr &&
# cmake --build build && cpack --config build/CPackConfig.cmake -G DEB` makes a .deb of the
# daemon, barrierctl, libbarrierd, its header and pkg-config file, the unit and tmpfiles entry.
set(CPACK_PACKAGE_NAME barrierd)
set(CPACK_PACKAGE_VENDOR "barrierd developers")
set(CPACK_PACKAGE_CONTACT "barrierd developers <dev@barrierd.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "asymmetric memory barriers from per-CPU BPF evidence")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE amd64)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "systemd")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_CURRENT_LIST_DIR}/debian/postinst ${CMAKE_CURRENT_LIST_DIR}/debian/prerm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
include(CPack)
