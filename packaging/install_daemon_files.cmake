# Runs at install time (cmake --install, CPack), when the prefix is known: the daemon's
# systemd unit with this prefix's bindir in ExecStart, and its /etc/default flags file
# (/etc for the /usr prefix, as Debian has it; <prefix>/etc otherwise). Set by the caller:
# daemon, src (packaging/systemd), tmp (a build directory).
set(CMAKE_INSTALL_FULL_BINDIR "${CMAKE_INSTALL_PREFIX}/bin")
configure_file(${src}/baton-${daemon}.service.in ${tmp}/baton-${daemon}.service @ONLY)
file(INSTALL ${tmp}/baton-${daemon}.service
     DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(etc /etc)
else()
  set(etc "${CMAKE_INSTALL_PREFIX}/etc")
endif()
file(INSTALL ${src}/default-baton-${daemon} DESTINATION "${etc}/default"
     RENAME baton-${daemon})
