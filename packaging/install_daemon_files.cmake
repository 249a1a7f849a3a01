# Runs at install time (cmake --install, CPack), when the prefix is known: the daemon's
# systemd unit with this prefix's bindir and config file in ExecStart, and that config
# file, /etc/baton/<daemon>.yaml (/etc for the /usr prefix, as Debian has it;
# <prefix>/etc otherwise). Set by the caller: daemon, src (packaging/systemd), tmp.
set(CMAKE_INSTALL_FULL_BINDIR "${CMAKE_INSTALL_PREFIX}/bin")
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(BATON_ETC_DIR /etc)
else()
  set(BATON_ETC_DIR "${CMAKE_INSTALL_PREFIX}/etc")
endif()
configure_file(${src}/baton-${daemon}.service.in ${tmp}/baton-${daemon}.service @ONLY)
file(INSTALL ${tmp}/baton-${daemon}.service
     DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
file(INSTALL ${src}/${daemon}.yaml DESTINATION "${BATON_ETC_DIR}/baton")
