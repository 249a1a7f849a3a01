# Fully static gRPC clients. A CLI is started once per command, so its start-up is part
# of every researcher's call: a dynamically linked gRPC client spends ~15 ms resolving
# ~60 shared libraries before main(); a static one starts in ~2 ms.
#
# baton_link_static_grpc(TARGET LIBS...) links TARGET with -static against the given
# baton static libraries (by file, so their shared transitive dependencies are left out)
# and the static archives of gRPC, protobuf, absl, yaml-cpp and their dependencies.
option(BATON_STATIC_CLI "Link the baton CLI and the RPC floor client statically" ON)

find_package(PkgConfig REQUIRED)
pkg_check_modules(BATON_GRPC_STATIC REQUIRED grpc++ protobuf yaml-cpp)

function(baton_link_static_grpc target)
  if(NOT BATON_STATIC_CLI)
    target_link_libraries(${target} PRIVATE ${ARGN})
    return()
  endif()
  set(files)
  foreach(lib ${ARGN})
    list(APPEND files $<TARGET_FILE:${lib}>)
    add_dependencies(${target} ${lib})
  endforeach()
  target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR})
  # glibc warns that getaddrinfo in a static binary needs its NSS modules at run time;
  # gRPC resolves with c-ares, and loopback/IP addresses need no lookup at all.
  target_link_options(${target} PRIVATE -static -Wl,--no-warn-search-mismatch)
  target_link_libraries(${target} PRIVATE ${files} -Wl,--start-group
                        ${BATON_GRPC_STATIC_STATIC_LDFLAGS} -Wl,--end-group)
endfunction()
