// Saves and restores a checkpoint through the installed headers and library only: built
// by tests/install/install_test.sh outside baton's tree.
#include <baton/checkpoint/checkpoint.h>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer DIR\n");
    return 2;
  }
  baton::checkpoint::LocalCollective collective;
  baton::checkpoint::Options options;
  options.dir = argv[1];
  options.progress_file = std::string(argv[1]) + "/PROGRESS";
  auto ckpt = baton::checkpoint::Checkpointer::Create(options, &collective);
  if (!ckpt.ok()) {
    std::fprintf(stderr, "create: %s\n", ckpt.status().ToString().c_str());
    return 1;
  }
  std::vector<float> weights(1 << 16);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<float>(i) * 0.5f;
  if (auto s =
          (*ckpt)->RegisterHostBuffer("weights", weights.data(), weights.size() * sizeof(float));
      !s.ok()) {
    std::fprintf(stderr, "register: %s\n", s.ToString().c_str());
    return 1;
  }
  if (auto s = (*ckpt)->Save(7); !s.ok()) {
    std::fprintf(stderr, "save: %s\n", s.ToString().c_str());
    return 1;
  }
  std::vector<float> saved = weights;
  for (auto& w : weights) w = -1;
  auto restored = (*ckpt)->RestoreLatest();
  if (!restored.ok() || !restored->has_value() || (*restored)->step != 7 || weights != saved) {
    std::fprintf(stderr, "restore did not give back step 7's weights\n");
    return 1;
  }
  std::printf("restored step %lld\n", static_cast<long long>((*restored)->step));
  return 0;
}
