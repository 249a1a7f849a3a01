// baton-exec HOST COMMAND…: the static twin of `baton-agent exec` that agents hand to
// mpirun as plm_rsh_agent (see exec_client.h); `baton-exec --bind-rank -- COMMAND…` binds
// an mpi rank before it runs COMMAND (rank_bind.h).
#include <iostream>
#include <string>
#include <vector>

#include "common/version.h"
#include "launcher/agent/exec_client.h"
#include "launcher/agent/rank_bind.h"

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--version") {
    std::cout << "baton-exec " << baton::Version() << "\n";
    return 0;
  }
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == baton::kBindRankFlag) {
    return baton::RunBoundRank(std::vector<std::string>(args.begin() + 1, args.end()));
  }
  return baton::RunExecClient(args);
}
