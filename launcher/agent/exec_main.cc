// baton-exec HOST COMMAND…: the static twin of `baton-agent exec` that agents hand to
// mpirun as plm_rsh_agent (see exec_client.h).
#include <iostream>
#include <string>
#include <vector>

#include "common/version.h"
#include "launcher/agent/exec_client.h"

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--version") {
    std::cout << "baton-exec " << baton::Version() << "\n";
    return 0;
  }
  return baton::RunExecClient(std::vector<std::string>(argv + 1, argv + argc));
}
