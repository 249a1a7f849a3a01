// `baton-agent exec HOST COMMAND…`: Open MPI's plm_rsh_agent. mpirun runs it, as it would
// ssh, to start its daemon on HOST; it asks HOST's agent to run COMMAND (one shell line)
// inside the job's attempt there, relays the output, and exits with COMMAND's status
// (255 when the agent cannot be reached or refuses, as ssh does). It learns the attempt,
// its secret and the agents' addresses from the environment mpirun inherited from the
// agent that started it: BATON_JOB_ID, BATON_ATTEMPT, BATON_EXEC_SECRET, BATON_EXEC_HOSTS
// (host=node@address,…), and BATON_EXEC_CA, the cluster CA: the secret goes only to an
// agent that proves, with its certificate, to be that host's node (BATON_EXEC_INSECURE=1:
// plaintext, agents on loopback only).
#pragma once

#include <string>
#include <vector>

namespace baton {

// `args`: HOST, then the command's words (joined with spaces into one shell line).
int RunExecClient(const std::vector<std::string>& args);

}  // namespace baton
