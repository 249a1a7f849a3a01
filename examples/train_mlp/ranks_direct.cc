// Ranks for train_mlp_direct: torchrun-style variables, collectives over TCP
// (tcp_collective.h), no MPI.
#include <cstdlib>

#include "examples/train_mlp/ranks.h"
#include "examples/train_mlp/tcp_collective.h"

namespace baton::examples {
namespace {

class DirectRanks : public Ranks {
 public:
  explicit DirectRanks(std::unique_ptr<TcpRanks> tcp) : tcp_(std::move(tcp)) {}
  int rank() const override { return tcp_->env().rank; }
  int world() const override { return tcp_->env().world; }
  int local_rank() const override { return tcp_->env().local_rank; }
  const char* transport() const override { return "tcp"; }
  absl::StatusOr<std::unique_ptr<checkpoint::Collective>> NewCollective() override {
    return tcp_->NewCollective();
  }
  void Finalize() override {}
  void Abort(int code) override { std::_Exit(code); }

 private:
  std::unique_ptr<TcpRanks> tcp_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Ranks>> Ranks::Init(int* /*argc*/, char*** /*argv*/) {
  auto env = DirectEnvFromEnvironment();
  if (!env.ok()) return env.status();
  auto tcp = TcpRanks::Create(*env);
  if (!tcp.ok()) return tcp.status();
  return std::unique_ptr<Ranks>(new DirectRanks(std::move(*tcp)));
}

}  // namespace baton::examples
