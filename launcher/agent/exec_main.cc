// baton-exec HOST COMMAND…: the static twin of `baton-agent exec` that agents hand to
// mpirun as plm_rsh_agent (see exec_client.h).
#include <string>
#include <vector>

#include "launcher/agent/exec_client.h"

int main(int argc, char** argv) {
  return baton::RunExecClient(std::vector<std::string>(argv + 1, argv + argc));
}
