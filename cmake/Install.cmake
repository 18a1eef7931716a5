# SPDX-License-Identifier: Apache-2.0
# `cmake --install` layout and the Debian package (CPack DEB, `make package`).
#
#   <prefix>/bin/shootdown
#   <prefix>/lib/shootdown/libshootdown_probe.so   private library: `probe`
#       finds it relative to the binary (../lib/shootdown/, cmd_probe.cpp)
#   <prefix>/share/man/man1/shootdown*.1.gz        generated (man/, tools/mangen)
#   <prefix>/share/bash-completion/completions/shootdown
#   <prefix>/share/doc/shootdown/{copyright,changelog.gz}, docs, dashboards,
#       examples/shootdown-monitor-daemonset.yaml (Kubernetes)
#   <prefix>/lib/systemd/system/shootdown-monitor.service   installed, not enabled
include(GNUInstallDirs)

install(TARGETS shootdown RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS shootdown_probe LIBRARY DESTINATION lib/shootdown)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/bash-completion/shootdown
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PROJECT_SOURCE_DIR}/packaging/systemd/shootdown-monitor.service DESTINATION lib/systemd/system)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/kubernetes/shootdown-monitor-daemonset.yaml
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
install(FILES ${PROJECT_SOURCE_DIR}/docs/monitor.md ${PROJECT_SOURCE_DIR}/docs/formats.md
        ${PROJECT_SOURCE_DIR}/docs/exit-codes.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
if(EXISTS ${PROJECT_SOURCE_DIR}/dashboards)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/dashboards/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/dashboards
          FILES_MATCHING PATTERN "*.json" PATTERN "*.yaml" PATTERN "*.yml")
endif()

# Debian changelog of a native package: /usr/share/doc/shootdown/changelog.gz,
# compressed with -n (no name/timestamp: reproducible).
find_program(GZIP_PROGRAM gzip REQUIRED)
set(SHOOTDOWN_CHANGELOG_GZ ${PROJECT_BINARY_DIR}/packaging/changelog.gz)
add_custom_command(OUTPUT ${SHOOTDOWN_CHANGELOG_GZ}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/packaging
  COMMAND ${GZIP_PROGRAM} -9n -c ${PROJECT_SOURCE_DIR}/packaging/changelog > ${SHOOTDOWN_CHANGELOG_GZ}
  DEPENDS ${PROJECT_SOURCE_DIR}/packaging/changelog VERBATIM)
add_custom_target(shootdown_changelog ALL DEPENDS ${SHOOTDOWN_CHANGELOG_GZ})
install(FILES ${SHOOTDOWN_CHANGELOG_GZ} DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_PACKAGE_NAME shootdown)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "shootdown maintainers <shootdown@shootdown.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "measure what TLB shootdowns cost the other threads of a process")
set(CPACK_PACKAGE_DESCRIPTION
    "shootdown measures the stall that releasing memory in one thread (free, munmap,\n"
    "madvise, mprotect) causes in the other threads of the same process through\n"
    "TLB shootdown IPIs, with kernel evidence from tracepoints and /proc/interrupts.\n"
    "Subcommands: run, compare, trace, monitor (Prometheus, InfluxDB), doctor,\n"
    "blame, probe and report.")
string(REPLACE ";" "" CPACK_PACKAGE_DESCRIPTION "${CPACK_PACKAGE_DESCRIPTION}")
set(CPACK_GENERATOR DEB)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://shootdown.invalid/")
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
# The probe library lives in a private directory: no shlibs file, no ldconfig.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
