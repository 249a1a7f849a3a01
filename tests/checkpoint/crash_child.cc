// Helper for kill9_test: restores the newest checkpoint of <dir>, checks it bit-exact, then
// saves step after step (alternating Save and SaveAsync+Wait) until it is killed. Reports on
// stdout, unbuffered: "restored <step>" (-1: none), then "committed <step>" per save.
// Exit codes: 2 usage or setup, 3 restored data differ, 4 a save failed.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "checkpoint/checkpoint.h"
#include "tests/checkpoint/test_state.h"

namespace {

void Say(const std::string& line) {
  const std::string text = line + "\n";
  (void)!::write(STDOUT_FILENO, text.data(), text.size());
}

}  // namespace

int main(int argc, char** argv) {
  using namespace baton::checkpoint;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <checkpoint dir>\n", argv[0]);
    return 2;
  }
  LocalCollective collective;
  auto ckpt = Checkpointer::Create({.dir = argv[1], .keep_last = 2, .io_unit_bytes = 256 << 10},
                                   &collective);
  testing::TestState state({1 << 20, (300 << 10) + 5, 10});
  if (!ckpt.ok() || !state.Register(**ckpt).ok()) return 2;
  auto restored = (*ckpt)->RestoreLatest();
  if (!restored.ok()) {
    Say("BAD restore failed: " + std::string(restored.status().message()));
    return 3;
  }
  int64_t step = restored->has_value() ? (*restored)->step : -1;
  if (step >= 0 && !state.Mismatch(step).empty()) {
    Say("BAD restored step " + std::to_string(step) + " differs in " + state.Mismatch(step));
    return 3;
  }
  Say("restored " + std::to_string(step));
  for (int n = 0; n < 100000; ++n) {
    ++step;
    state.Fill(step);
    absl::Status s = step % 2 ? (*ckpt)->Save(step) : (*ckpt)->SaveAsync(step);
    if (s.ok() && step % 2 == 0) s = (*ckpt)->Wait();
    if (!s.ok()) {
      Say("failed " + std::to_string(step) + ": " + std::string(s.message()));
      return 4;
    }
    Say("committed " + std::to_string(step));
  }
  return 0;
}
