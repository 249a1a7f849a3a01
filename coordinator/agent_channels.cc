#include "coordinator/agent_channels.h"

#include "proto/rpc_util.h"

namespace baton {

absl::StatusOr<std::shared_ptr<grpc::Channel>> AgentChannels::Get(const std::string& node,
                                                                  const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& ch = channels_[node + "@" + address];
  if (ch) return ch;
  grpc::ChannelArguments args;
  VerifyServerAs(node, &args);  // the agent at that address must hold node `node`'s certificate
  SetClientMessageLimits(&args);
  auto creds = ChannelCredentials(tls_, address);
  if (!creds.ok()) return creds.status();
  ch = grpc::CreateCustomChannel(address, *creds, args);
  return ch;
}

}  // namespace baton
