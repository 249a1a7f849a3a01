// The keeper zygote: one baton-keeper per agent, started by exec like any keeper (empty
// environment, every signal blocked), that forks each job process's keeper from its own
// small address space instead of the agent exec'ing a fresh baton-keeper every time. A
// fresh static binary spends most of its start in glibc's CPU and cache detection (dozens
// of CPUID instructions, each a VM exit on a virtual machine; about half of a keeper's CPU
// in the end-to-end benchmark); a fork of the zygote starts with that done.
//
// Each keeper is forked with CLONE_PARENT, so it is the agent's own child, as an exec'd
// keeper is: the agent's reaper waits for it, and it outlives an agent restart the same way.
// The zygote itself only forks; it ends when the agent's end of its socket closes.
//
// Wire (a stream socket pair, the agent's end close-on-exec):
//   request: ZygoteRequest, with the request's descriptors (SCM_RIGHTS) on its first byte,
//            then `payload_bytes` of the keeper's arguments (keeper_args.h), each ending in
//            a NUL. The descriptors replace, in this order, the arguments' msg, out, err (when
//            set) and keep descriptors, whose numbers are the agent's.
//   reply:   one int32: the keeper's pid, or -errno when the zygote could not fork.
// Libc only: this is baton-keeper's code.
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace baton {

struct ZygoteRequest {
  static constexpr uint32_t kMagic = 0x315a4b42;  // "BKZ1"
  uint32_t magic = kMagic;
  uint32_t payload_bytes = 0;
  uint32_t fd_count = 0;
  uint32_t reserved = 0;
  // The CPUs the requesting thread may run on: the keeper starts with them, as it would
  // have inherited them from that thread by exec (the node's own work stays off the cores
  // inference holds, self_affinity.h).
  cpu_set_t cpus;
};

constexpr uint32_t kZygoteMaxPayload = 8u << 20;  // more than exec would take
constexpr uint32_t kZygoteMaxFds = 64;

// The zygote's loop on `sock`: never returns. For each request it forks a keeper, which
// calls `run_keeper(args, fds)` (the descriptors as received, in the wire's order).
// A malformed request or the socket's end ends the zygote.
[[noreturn]] void ZygoteMain(int sock, void (*run_keeper)(const std::vector<std::string>& args,
                                                          const std::vector<int>& fds));

// The agent's side: sends one request on `sock` and returns the keeper's pid; -1 with errno
// set when the zygote is gone (EPIPE, ECONNRESET, EOF: the caller starts a keeper itself)
// or could not fork (its errno).
pid_t RequestKeeper(int sock, const std::vector<std::string>& args, const std::vector<int>& fds);

}  // namespace baton
