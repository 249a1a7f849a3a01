// A rank's binding as a process applies it to itself before it execs the job's program:
// its CPU affinity and its memory policy (docs/isolation.md, "Per-rank binding"). In direct
// mode the agent's forked child does it; in mpi mode each rank runs
// `baton-exec --bind-rank -- COMMAND…`, which reads its local rank's binding from the
// node's BATON_RANK_BINDINGS (EncodeBindings) and then execs COMMAND. The bindings
// themselves are planned by the agent (isolation/rank_plan.h). No dependencies beyond libc,
// so the static baton-exec carries it; thread-safe, BindThisProcess async-signal-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace baton {

inline constexpr char kBindingsEnv[] = "BATON_RANK_BINDINGS";  // the node's, per local rank
inline constexpr char kBindExecEnv[] = "BATON_BIND_EXEC";      // this node's baton-exec
inline constexpr char kBindRankFlag[] = "--bind-rank";

struct ProcessBinding {
  std::vector<uint32_t> cpus;  // CPU affinity; empty: every CPU, so its cpuset decides
  std::vector<uint32_t> mems;  // NUMA nodes its memory is bound to (MPOL_BIND); empty: none
  bool operator==(const ProcessBinding&) const = default;
};

// Sets the calling process's affinity (the kernel intersects it with the process's
// cpuset, and keeps asking for it when the cpuset changes) and memory policy. Returns 0,
// or 1 when the affinity was refused, 2 when the memory policy was, with errno set.
// Async-signal-safe: for a forked child before exec.
int BindThisProcess(const ProcessBinding& binding);

// "1,2,3" for {1, 2, 3}; "" for none.
std::string JoinNumberList(const std::vector<uint32_t>& numbers);
// Parses what JoinNumberList writes, each number at most `max`; false when malformed (not a
// decimal number, too big, an empty item or a trailing comma).
bool ParseNumberList(std::string_view text, uint64_t max, std::vector<uint32_t>* out);

// "CPUS/MEMS" per local rank, ';'-separated, lists comma-separated ("0,1/0;/").
std::string EncodeBindings(const std::vector<ProcessBinding>& per_local_rank);
// The binding of `local_rank`; nullopt when `text` has no entry for it or is malformed.
std::optional<ProcessBinding> DecodeBinding(const std::string& text, uint32_t local_rank);

// `baton-exec --bind-rank [--] COMMAND…` under mpirun: binds this process as
// BATON_RANK_BINDINGS says for OMPI_COMM_WORLD_LOCAL_RANK, then execs COMMAND (argv[0]
// looked up in PATH). A binding the kernel refuses is reported on stderr and the command
// runs unbound (its cpuset still holds it); returns 127 only when COMMAND cannot be run.
int RunBoundRank(const std::vector<std::string>& command);

// The argv prefix that runs a command through `exec_client --bind-rank` on every node:
// `sh -c` with the node's own BATON_BIND_EXEC, so that it needs no path shared by the
// nodes (without it, the command runs as it is).
std::vector<std::string> BindRankPrefix();

}  // namespace baton
