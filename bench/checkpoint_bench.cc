// baton-bench-checkpoint: libbaton_checkpoint against the physical limit of the data dir's
// filesystem, measured in the same run. Interleaved repetitions, medians:
//   raw write   dd bs=16M oflag=direct conv=fsync      vs  Save
//   raw read    dd bs=16M after dropping caches         vs  RestoreLatest (cold)
//   memcpy      the same bytes between pre-faulted buffers  vs  SaveAsync's stall
// Ends with one JSON line (keys in DESIGN.md "Benchmarks").
//   baton-bench-checkpoint [--dir=/var/tmp] [--size=2Gi] [--buffers=64] [--reps=3]
//                          [--io-threads=4] [--io-unit=8Mi] [--no-direct]
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "common/resources.h"

namespace baton::checkpoint {
namespace {

constexpr uint64_t kDdBlock = 16 << 20;
constexpr double kGiB = 1024.0 * 1024 * 1024;

struct Flags {
  std::string dir = "/var/tmp";
  uint64_t size = 2ull << 30;
  int buffers = 64;
  int reps = 3;
  int io_threads = 4;
  uint64_t io_unit = 8 << 20;
  bool direct = true;
};

bool ParseSize(const char* text, uint64_t* out) {
  auto bytes = ParseBytes(text);
  if (!bytes.ok()) return false;
  *out = *bytes;
  return true;
}

bool ParseCount(const char* text, int* out) {
  char* end = nullptr;
  const long n = std::strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || n < 1 || n > 100000) return false;
  *out = static_cast<int>(n);
  return true;
}

bool ParseFlag(const std::string& arg, Flags* f) {
  auto value = [&](const char* name) -> const char* {
    const size_t n = std::strlen(name);
    return arg.compare(0, n, name) == 0 ? arg.c_str() + n : nullptr;
  };
  if (arg == "--no-direct") {
    f->direct = false;
    return true;
  }
  if (const char* v = value("--dir=")) {
    f->dir = v;
    return !f->dir.empty();
  }
  if (const char* v = value("--size=")) return ParseSize(v, &f->size) && f->size >= kDdBlock;
  if (const char* v = value("--io-unit=")) return ParseSize(v, &f->io_unit);
  if (const char* v = value("--buffers=")) return ParseCount(v, &f->buffers);
  if (const char* v = value("--reps=")) return ParseCount(v, &f->reps);
  if (const char* v = value("--io-threads=")) return ParseCount(v, &f->io_threads);
  return false;
}

double Seconds(const std::function<void()>& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Runs a command with its output discarded. posix_spawn, not fork: fork would mark this
// process's gigabytes copy-on-write, and every later write to them would fault once.
bool RunQuiet(std::vector<std::string> args) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return false;
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Writes back dirty pages and empties the page cache; false where that is not allowed.
bool DropCaches() {
  ::sync();
  const int fd = ::open("/proc/sys/vm/drop_caches", O_WRONLY);
  if (fd < 0) return false;
  const bool ok = ::write(fd, "3", 1) == 1;
  ::close(fd);
  return ok;
}

// 64 buffers of mixed sizes summing to `total`: a few large, many middling, some tiny.
std::vector<std::vector<char>> MakeState(uint64_t total, int count) {
  std::vector<uint64_t> weights;
  uint64_t sum = 0;
  for (int i = 0; i < count; ++i) {
    const uint64_t w = i % 16 == 0 ? 4000 : i % 4 == 0 ? 300 : i % 7 == 0 ? 1 : 60 + i;
    weights.push_back(w);
    sum += w;
  }
  std::vector<std::vector<char>> buffers;
  uint64_t left = total;
  for (int i = 0; i < count; ++i) {
    uint64_t n = i + 1 == count ? left : total / sum * weights[i] + (i % 3) * 333;
    n = std::min(n, left);
    left -= n;
    buffers.emplace_back(n);
    // Incompressible-looking bytes, as trained weights are (zeros could flatter the disk).
    uint64_t x = 0x9E3779B97F4A7C15ull * (i + 1);
    for (uint64_t k = 0; k + 8 <= n; k += 8) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      std::memcpy(buffers.back().data() + k, &x, 8);
    }
  }
  return buffers;
}

struct Samples {
  std::vector<double> raw_write, raw_read, save, restore, memcpy_s, stall;
};

struct Bench {
  Flags flags;
  std::string dir;
  std::vector<std::vector<char>> state;
  std::vector<char> copy_target;
  std::unique_ptr<Checkpointer> ckpt;
  LocalCollective local;
  bool cold = true;
  int64_t step = 0;
};

void Check(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "baton-bench-checkpoint: %s\n", what.c_str());
  std::exit(1);
}

void Check(const absl::Status& s, const std::string& what) {
  Check(s.ok(), what + ": " + std::string(s.message()));
}

void MeasureRaw(Bench& b, Samples& s) {
  const std::string file = b.dir + "/dd.bin";
  const std::string count = std::to_string(b.flags.size / kDdBlock);
  ::sync();
  s.raw_write.push_back(Seconds([&] {
    Check(RunQuiet({"dd", "if=/dev/zero", "of=" + file, "bs=16M", "count=" + count, "oflag=direct",
                    "conv=fsync"}),
          "dd write failed");
  }));
  b.cold &= DropCaches();
  s.raw_read.push_back(Seconds([&] {
    Check(RunQuiet({"dd", "if=" + file, "of=/dev/null", "bs=16M"}), "dd read failed");
  }));
  std::filesystem::remove(file);
}

void MeasureLibrary(Bench& b, Samples& s) {
  ::sync();
  const int64_t saved = ++b.step;
  s.save.push_back(Seconds([&] { Check(b.ckpt->Save(saved), "Save"); }));
  Check(b.ckpt->Wait(), "background pruning");  // old checkpoints go after Save returns
  b.cold &= DropCaches();
  s.restore.push_back(Seconds([&] {
    auto restored = b.ckpt->RestoreLatest();
    Check(restored.ok() && restored->has_value() && (*restored)->step == saved,
          "RestoreLatest did not bring back step " + std::to_string(saved));
  }));
}

void MeasureStall(Bench& b, Samples& s) {
  s.memcpy_s.push_back(Seconds([&] {
    char* dst = b.copy_target.data();
    for (const auto& buf : b.state) {
      std::memcpy(dst, buf.data(), buf.size());
      dst += buf.size();
    }
  }));
  ::sync();
  const int64_t step = ++b.step;
  s.stall.push_back(Seconds([&] { Check(b.ckpt->SaveAsync(step), "SaveAsync"); }));
  Check(b.ckpt->Wait(), "async save");
}

void Setup(Bench& b) {
  std::string tmpl = b.flags.dir + "/baton-bench-ckpt-XXXXXX";
  Check(::mkdtemp(tmpl.data()) != nullptr, "cannot create a directory in " + b.flags.dir);
  b.dir = tmpl;
  b.state = MakeState(b.flags.size, b.flags.buffers);
  b.copy_target.assign(b.flags.size, 1);  // pre-faulted
  auto ckpt = Checkpointer::Create({.dir = b.dir + "/ckpt",
                                    .keep_last = 1,
                                    .io_threads = b.flags.io_threads,
                                    .io_unit_bytes = b.flags.io_unit,
                                    .direct_io = b.flags.direct},
                                   &b.local);
  Check(ckpt.status(), "Checkpointer::Create");
  b.ckpt = std::move(*ckpt);
  for (size_t i = 0; i < b.state.size(); ++i) {
    Check(b.ckpt->RegisterHostBuffer("buffer-" + std::to_string(i), b.state[i].data(),
                                     b.state[i].size()),
          "register");
  }
  Check(b.ckpt->ReserveStaging(), "ReserveStaging");
}

double GiBs(uint64_t bytes, double seconds) { return bytes / kGiB / seconds; }

void Report(const Bench& b, const Samples& s) {
  const uint64_t n = b.flags.size;
  const double raw_w = GiBs(n, Median(s.raw_write)), raw_r = GiBs(n, Median(s.raw_read));
  const double save = GiBs(n, Median(s.save)), restore = GiBs(n, Median(s.restore));
  const double memcpy_ms = Median(s.memcpy_s) * 1e3, stall_ms = Median(s.stall) * 1e3;
  std::printf("state: %s in %d buffers, %d reps, dir %s%s\n", FormatBytes(n).c_str(),
              b.flags.buffers, b.flags.reps, b.flags.dir.c_str(),
              b.cold ? "" : " (cache drop not allowed: reads may be warm)");
  std::printf("%-28s %8.3f GiB/s   %-24s %8.3f GiB/s   ratio %.3f (target >= 0.9)\n", "Save", save,
              "dd oflag=direct fsync", raw_w, save / raw_w);
  std::printf("%-28s %8.3f GiB/s   %-24s %8.3f GiB/s   ratio %.3f (target >= 0.9)\n",
              "RestoreLatest (cold)", restore, "dd read (cold)", raw_r, restore / raw_r);
  std::printf("%-28s %8.1f ms       %-24s %8.1f ms       ratio %.3f (target <= 1.5)\n",
              "SaveAsync stall", stall_ms, "memcpy", memcpy_ms, stall_ms / memcpy_ms);
  std::printf(
      "{\"save_vs_raw_write\":%.3f,\"restore_vs_raw_read\":%.3f,\"async_stall_vs_memcpy\":%.3f,"
      "\"save_gib_s\":%.3f,\"raw_write_gib_s\":%.3f,\"restore_gib_s\":%.3f,"
      "\"raw_read_gib_s\":%.3f,\"async_stall_ms\":%.1f,\"memcpy_ms\":%.1f,\"bytes\":%llu,"
      "\"buffers\":%d,\"reps\":%d,\"cold_reads\":%s}\n",
      save / raw_w, restore / raw_r, stall_ms / memcpy_ms, save, raw_w, restore, raw_r, stall_ms,
      memcpy_ms, static_cast<unsigned long long>(n), b.flags.buffers, b.flags.reps,
      b.cold ? "true" : "false");
}

}  // namespace
}  // namespace baton::checkpoint

int main(int argc, char** argv) {
  using namespace baton::checkpoint;
  Bench b;
  for (int i = 1; i < argc; ++i) {
    if (!ParseFlag(argv[i], &b.flags)) {
      std::fprintf(stderr,
                   "baton-bench-checkpoint: bad flag '%s'\nflags: --dir=PATH --size=BYTES(>=16Mi) "
                   "--buffers=N --reps=N --io-threads=N --io-unit=BYTES --no-direct\n",
                   argv[i]);
      return 2;
    }
  }
  Setup(b);
  Samples s;
  for (int rep = 0; rep < b.flags.reps; ++rep) {
    MeasureRaw(b, s);
    MeasureLibrary(b, s);
    MeasureStall(b, s);
    std::fprintf(stderr,
                 "rep %d: raw write %.2fs read %.2fs | save %.2fs restore %.2fs | "
                 "memcpy %.0fms stall %.0fms\n",
                 rep, s.raw_write.back(), s.raw_read.back(), s.save.back(), s.restore.back(),
                 s.memcpy_s.back() * 1e3, s.stall.back() * 1e3);
  }
  b.ckpt.reset();
  std::error_code ec;
  std::filesystem::remove_all(b.dir, ec);
  Report(b, s);
  return 0;
}
