// baton-bench-checkpoint: libbaton_checkpoint against the physical limit of the data dir's
// filesystem, measured in the same run, on the same files, interleaved, medians.
//   write  Save                 vs the best of  dd bs=16M oflag=direct conv=fsync, and a
//                                               plain O_DIRECT writer (16 MiB, huge
//                                               pages, fsync)
//   read   RestoreLatest, cold  vs the best of  dd bs=16M, fio sequential read (O_DIRECT,
//                                               16 MiB, queue depth 4, fio's own figure)
//                                               and a single-stream O_DIRECT reader
//                                               (16 MiB, huge pages) — each reading
//                                               the very shard files RestoreLatest reads,
//                                               each after dropping the page cache
//          and, for states up to 4 GiB, RestoreLatest vs a single-stream O_DIRECT reader
//          landing the files in pre-faulted memory the size of the state on 4 KiB pages,
//          as the state is (the strict readers rewrite one 16 MiB block that stays in the
//          cache; a restore must fill the program's memory)
//   stall  SaveAsync's stall    vs memcpy of the same bytes between pre-faulted buffers
// Each configuration (state size x ranks; by default 2 GiB and 8 GiB, 1 rank and 4 ranks
// sharing the disk as threads of this process, the size split between them) runs --reps
// repetitions of: Save, the write references, the read references and RestoreLatest in
// turn (the order of the readers rotates per repetition), and, for states up to 4 GiB, the
// stall. Ends with one JSON line (keys in docs/benchmarks.md; _8g / _4r name the other
// configurations). Needs root for the cache drops (else the reads are marked warm).
//   baton-bench-checkpoint [--dir=/var/tmp] [--size=2Gi,8Gi] [--ranks=1,4] [--buffers=64]
//                          [--reps=3] [--io-threads=2] [--io-depth=2] [--io-unit=4Mi]
//                          [--no-direct] [--explain]
// --explain adds readers to the rotation, RestoreLatest on the same files another way:
// through the page cache (no O_DIRECT), with one I/O thread, with twice the threads, with
// twice the unit, with half the unit, with half the threads and half the unit, with one
// read in flight per thread, with twice the reads in flight — where restore time goes; and,
// each in a directory of its own, Save and RestoreLatest with io_in_place (the state's pages
// moved in place, not through bounce buffers; another layout) and, for states up to 4 GiB,
// of a page-aligned copy of the state on transparent huge pages (read in place by default).
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "common/resources.h"
#include "tests/checkpoint/thread_collective.h"

namespace baton::checkpoint {
namespace {

constexpr uint64_t kBlock = 16 << 20;  // every reference's I/O size
constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr uint64_t kStallMaxBytes = 4ull << 30;  // the stall's pre-faulted copy doubles memory

struct Flags {
  std::string dir = "/var/tmp";
  std::vector<uint64_t> sizes = {2ull << 30, 8ull << 30};
  std::vector<int> ranks = {1, 4};
  int buffers = 64;
  int reps = 3;
  int io_threads = Options{}.io_threads;  // the library's defaults
  int io_depth = Options{}.io_queue_depth;
  uint64_t io_unit = Options{}.io_unit_bytes;
  bool direct = true;
  bool explain = false;  // also restore buffered and with one I/O thread (where time goes)
};

bool ParseCount(const std::string& text, int max, int* out) {
  char* end = nullptr;
  const long n = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || n < 1 || n > max) return false;
  *out = static_cast<int>(n);
  return true;
}

std::vector<std::string> SplitFields(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t at; (at = text.find(sep, start)) != std::string::npos; start = at + 1) {
    out.push_back(text.substr(start, at - start));
  }
  out.push_back(text.substr(start));
  return out;
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
  if (arg == "--explain") {
    f->explain = true;
    return true;
  }
  if (const char* v = value("--dir=")) {
    f->dir = v;
    return !f->dir.empty();
  }
  if (const char* v = value("--size=")) {
    f->sizes.clear();
    for (const std::string& s : SplitFields(v, ',')) {
      absl::StatusOr<uint64_t> bytes = ParseBytes(s);
      if (!bytes.ok() || *bytes < 4 * kBlock) return false;
      f->sizes.push_back(*bytes);
    }
    return true;
  }
  if (const char* v = value("--ranks=")) {
    f->ranks.clear();
    for (const std::string& s : SplitFields(v, ',')) {
      int n = 0;
      if (!ParseCount(s, 64, &n)) return false;
      f->ranks.push_back(n);
    }
    return true;
  }
  if (const char* v = value("--io-unit=")) {
    absl::StatusOr<uint64_t> bytes = ParseBytes(v);
    if (!bytes.ok()) return false;
    f->io_unit = *bytes;
    return true;
  }
  if (const char* v = value("--buffers=")) return ParseCount(v, 100000, &f->buffers);
  if (const char* v = value("--reps=")) return ParseCount(v, 1000, &f->reps);
  if (const char* v = value("--io-threads=")) return ParseCount(v, 64, &f->io_threads);
  if (const char* v = value("--io-depth=")) return ParseCount(v, 64, &f->io_depth);
  return false;
}

// CPU seconds this process has used, every thread's, user and system.
double CpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

double Seconds(const std::function<void()>& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

void Check(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "baton-bench-checkpoint: %s\n", what.c_str());
  std::exit(1);
}

void Check(const absl::Status& s, const std::string& what) {
  Check(s.ok(), what + ": " + std::string(s.message()));
}

// Starts a command with its output discarded. posix_spawn, not fork: fork would mark this
// process's gigabytes copy-on-write, and every later write to them would fault once.
pid_t Spawn(std::vector<std::string> args) {
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
  return rc == 0 ? pid : -1;
}

bool Exited0(pid_t pid) {
  int status = 0;
  return pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

// Runs the commands at once and waits for all of them; true when all exited 0.
bool RunTogether(const std::vector<std::vector<std::string>>& commands) {
  std::vector<pid_t> pids;
  for (const auto& c : commands) pids.push_back(Spawn(c));
  bool ok = true;
  for (pid_t pid : pids) ok &= Exited0(pid);
  return ok;
}

bool HaveFio() { return Exited0(Spawn({"fio", "--version"})); }

// Writes back dirty pages and empties the page cache; false where that is not allowed.
bool DropCaches() {
  ::sync();
  const int fd = ::open("/proc/sys/vm/drop_caches", O_WRONLY);
  if (fd < 0) return false;
  const bool ok = ::write(fd, "3", 1) == 1;
  ::close(fd);
  return ok;
}

uint64_t FileBytes(const std::vector<std::string>& files) {
  uint64_t total = 0;
  for (const std::string& f : files) total += std::filesystem::file_size(f);
  return total;
}

// Incompressible-looking bytes, as trained weights are (zeros could flatter the disk).
void FillRandom(char* p, uint64_t n, uint64_t seed) {
  uint64_t x = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (uint64_t k = 0; k + 8 <= n; k += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(p + k, &x, 8);
  }
}

// `count` buffers of mixed sizes summing to `total`: a few large, many middling, some tiny.
std::vector<std::vector<char>> MakeState(uint64_t total, int count, int seed) {
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
    FillRandom(buffers.back().data(), n, seed * 1000 + i);
  }
  return buffers;
}

// An aligned, pre-faulted 16 MiB block for the O_DIRECT references, on transparent huge
// pages as the library's own I/O buffers: a direct request is cut at every discontiguity
// of physical memory (max_segments), so a reference on 4 KiB pages would be a weaker one.
struct AlignedBlock {
  AlignedBlock() : data(static_cast<char*>(std::aligned_alloc(2 << 20, kBlock))) {
    ::madvise(data, kBlock, MADV_HUGEPAGE);
    FillRandom(data, kBlock, 7);
  }
  ~AlignedBlock() { std::free(data); }
  char* data;
};

// The plain O_DIRECT reader: each file in turn, 16 MiB at a time, into one buffer.
bool ReadDirect(const std::vector<std::string>& files, AlignedBlock& block) {
  for (const std::string& f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY | O_DIRECT);
    if (fd < 0) return false;
    for (ssize_t r; (r = ::read(fd, block.data, kBlock)) != 0;) {
      if (r < 0) {
        ::close(fd);
        return false;
      }
    }
    ::close(fd);
  }
  return true;
}

// The landing reader: each file in turn, 16 MiB at a time, into consecutive memory from
// `dest` (aligned), so every byte lands in its own page as a restore's does.
bool ReadDirectLanded(const std::vector<std::string>& files, char* dest, uint64_t room) {
  for (const std::string& f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY | O_DIRECT);
    if (fd < 0) return false;
    for (ssize_t r; room > 0 && (r = ::read(fd, dest, std::min(kBlock, room))) != 0;) {
      if (r < 0) {
        ::close(fd);
        return false;
      }
      dest += r;
      room -= static_cast<uint64_t>(r);
    }
    ::close(fd);
  }
  return room > 0;  // else the files did not fit: no figure
}

// The plain O_DIRECT writer: each file in turn, `blocks` x 16 MiB, then fsync.
bool WriteDirect(const std::vector<std::string>& files, uint64_t blocks, AlignedBlock& block) {
  for (const std::string& f : files) {
    const int fd = ::open(f.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
    if (fd < 0) return false;
    bool ok = true;
    for (uint64_t i = 0; ok && i < blocks; ++i) {
      ok = ::write(fd, block.data, kBlock) == static_cast<ssize_t>(kBlock);
    }
    ok = ok && ::fsync(fd) == 0;
    ::close(fd);
    if (!ok) return false;
  }
  return true;
}

struct Rank {
  std::vector<std::vector<char>> state;
  std::unique_ptr<Checkpointer> ckpt;
  // --explain: the same directory and buffers, restored another way.
  std::map<std::string, std::unique_ptr<Checkpointer>> variants;
  // --explain: checkpointers that save and restore in directories of their own, by name:
  // "in place" (the state with io_in_place: another layout, each buffer at its memory's
  // phase) and "huge pages" (a copy of the state on transparent huge pages, page-aligned).
  std::map<std::string, std::unique_ptr<Checkpointer>> own;
  std::unique_ptr<char, decltype(&std::free)> huge{nullptr, &std::free};
  uint64_t huge_bytes = 0;
};

// GiB/s samples by name ("save", "dd write", …); stall and memcpy in seconds.
using Samples = std::map<std::string, std::vector<double>>;

struct Config {
  uint64_t size = 0;
  int ranks = 1;
  std::string dir;
  std::vector<Rank> rank;
  std::unique_ptr<testing::ThreadGroup> group;  // ranks > 1
  LocalCollective local;                        // ranks == 1
  std::vector<char> copy_target;                // the stall's memcpy reference, the landing
                                                // reader's destination (4 KiB pages)
  int64_t step = 0;
  bool cold = true;
  Samples samples;
};

void OnEveryRank(Config& c, const std::function<void(int)>& fn) {
  if (c.ranks == 1) {
    fn(0);
  } else {
    c.group->RunOnAllRanks(fn);
  }
}

// This process's anonymous memory on transparent huge pages, in MiB (-1: unknown).
long AnonHugeMiB() {
  std::FILE* in = std::fopen("/proc/self/smaps_rollup", "r");
  if (in == nullptr) return -1;
  char line[256];
  long kib = -1;
  while (std::fgets(line, sizeof(line), in) != nullptr) {
    if (std::sscanf(line, "AnonHugePages: %ld kB", &kib) == 1) break;
  }
  std::fclose(in);
  return kib < 0 ? -1 : kib / 1024;
}

// The directory of an --explain checkpointer that saves on its own ("in place" ->
// "ckpt-in-place").
std::string OwnDir(const std::string& name) {
  std::string dir = "ckpt-" + name;
  std::replace(dir.begin(), dir.end(), ' ', '-');
  return dir;
}

void Setup(const Flags& f, Config& c) {
  std::string tmpl = f.dir + "/baton-bench-ckpt-XXXXXX";
  Check(::mkdtemp(tmpl.data()) != nullptr, "cannot create a directory in " + f.dir);
  c.dir = tmpl;
  if (c.ranks > 1) c.group = std::make_unique<testing::ThreadGroup>(c.ranks);
  c.rank.resize(c.ranks);
  for (int r = 0; r < c.ranks; ++r) {
    c.rank[r].state = MakeState(c.size / c.ranks, f.buffers, r);
  }
  // Pre-faulted; room for the shard files' headers and padding, and for aligning.
  if (c.size <= kStallMaxBytes) c.copy_target.assign(c.size + (64 << 20), 1);
  OnEveryRank(c, [&](int r) {
    Collective* collective = c.ranks == 1 ? &c.local : c.group->rank(r);
    Rank& mine = c.rank[r];
    // sub: the directory under c.dir; data: the buffers' memory (default: the state's).
    auto make = [&](int threads, bool direct, uint64_t unit, int depth, bool in_place = false,
                    const std::string& sub = "ckpt", std::vector<char*> data = {}) {
      if (data.empty()) {
        for (auto& b : mine.state) data.push_back(b.data());
      }
      auto ckpt = Checkpointer::Create({.dir = c.dir + "/" + sub,
                                        .keep_last = 1,
                                        .io_threads = threads,
                                        .io_unit_bytes = unit,
                                        .io_queue_depth = depth,
                                        .direct_io = direct,
                                        .io_in_place = in_place},
                                       collective);
      Check(ckpt.status(), "Checkpointer::Create");
      for (size_t i = 0; i < mine.state.size(); ++i) {
        Check((*ckpt)->RegisterHostBuffer("buffer-" + std::to_string(i), data[i],
                                          mine.state[i].size()),
              "register");
      }
      return std::move(*ckpt);
    };
    mine.ckpt = make(f.io_threads, f.direct, f.io_unit, f.io_depth);
    // The async saves' staging copy, allocated now; the variants only restore (none).
    Check(mine.ckpt->ReserveStaging(), "ReserveStaging");
    if (f.explain) {
      const int t = f.io_threads, d = f.io_depth;
      mine.variants["restore buffered"] = make(t, false, f.io_unit, d);
      mine.variants["restore 1 thread"] = make(1, f.direct, f.io_unit, d);
      mine.variants["restore 2x threads"] = make(std::min(64, 2 * t), f.direct, f.io_unit, d);
      mine.variants["restore 2x unit"] = make(t, f.direct, 2 * f.io_unit, d);
      // Smaller requests, and a quarter of the bytes in flight in them.
      const uint64_t half_unit =
          std::max<uint64_t>(64 << 10, f.io_unit / 2 / (64 << 10) * (64 << 10));
      mine.variants["restore half unit"] = make(t, f.direct, half_unit, d);
      mine.variants["restore half threads+unit"] = make(std::max(1, t / 2), f.direct, half_unit, d);
      mine.variants["restore depth 1"] = make(t, f.direct, f.io_unit, 1);
      mine.variants["restore 2x depth"] = make(t, f.direct, f.io_unit, std::min(64, 2 * d));
      mine.own["in place"] = make(t, f.direct, f.io_unit, d, /*in_place=*/true, OwnDir("in place"));
      if (c.size <= kStallMaxBytes) {
        // The state again, each buffer page-aligned in memory advised onto huge pages
        // before its first touch (THP's madvise mode), so O_DIRECT reads it in place.
        std::vector<char*> data;
        uint64_t bytes = 0;
        auto pages = [](uint64_t n) { return (n + 4095) / 4096 * 4096; };
        for (auto& b : mine.state) bytes += pages(b.size());
        mine.huge_bytes = (bytes + (2 << 20) - 1) / (2 << 20) * (2 << 20);
        mine.huge.reset(static_cast<char*>(std::aligned_alloc(2 << 20, mine.huge_bytes)));
        Check(mine.huge != nullptr, "out of memory for the huge-page state");
        ::madvise(mine.huge.get(), mine.huge_bytes, MADV_HUGEPAGE);
        char* at = mine.huge.get();
        for (auto& b : mine.state) {
          std::memcpy(at, b.data(), b.size());
          data.push_back(at);
          at += pages(b.size());
        }
        mine.own["huge pages"] = make(t, f.direct, f.io_unit, d, false, OwnDir("huge pages"), data);
        std::fprintf(
            stderr,
            "rank %d: %lu MiB copy of the state for huge pages (process: %ld MiB on them)\n", r,
            static_cast<unsigned long>(mine.huge_bytes >> 20), AnonHugeMiB());
      }
    }
  });
}

std::vector<std::string> ShardFiles(const Config& c, int64_t step,
                                    const std::string& sub = "ckpt") {
  std::vector<std::string> files;
  for (int r = 0; r < c.ranks; ++r) {
    files.push_back(c.dir + "/" + sub + "/step-" + std::to_string(step) + "/rank-" +
                    std::to_string(r) + ".shard");
  }
  return files;
}

void Sample(Config& c, const std::string& name, uint64_t bytes, double seconds) {
  c.samples[name].push_back(bytes / kGiB / seconds);
}

void MeasureWrites(Config& c, AlignedBlock& block) {
  ::sync();
  const int64_t step = ++c.step;
  const double save_s =
      Seconds([&] { OnEveryRank(c, [&](int r) { Check(c.rank[r].ckpt->Save(step), "Save"); }); });
  OnEveryRank(c, [&](int r) { Check(c.rank[r].ckpt->Wait(), "background pruning"); });
  const std::vector<std::string> shards = ShardFiles(c, step);
  const uint64_t bytes = FileBytes(shards);
  Sample(c, "save", bytes, save_s);
  for (const auto& [name, unused] : c.rank[0].own) {
    ::sync();
    const double s = Seconds([&, name = name] {
      OnEveryRank(c, [&](int r) { Check(c.rank[r].own.at(name)->Save(step), "Save " + name); });
    });
    OnEveryRank(c, [&, name = name](int r) {
      Check(c.rank[r].own.at(name)->Wait(), "background pruning");
    });
    Sample(c, "save " + name, FileBytes(ShardFiles(c, step, OwnDir(name))), s);
  }
  // The references write as many 16 MiB blocks as a shard holds, one file per rank.
  const uint64_t blocks = std::max<uint64_t>(1, bytes / c.ranks / kBlock);
  const uint64_t ref_bytes = blocks * kBlock * c.ranks;
  std::vector<std::string> files;
  std::vector<std::vector<std::string>> dds;
  for (int r = 0; r < c.ranks; ++r) {
    files.push_back(c.dir + "/raw-" + std::to_string(r) + ".bin");
    dds.push_back({"dd", "if=/dev/zero", "of=" + files.back(), "bs=16M",
                   "count=" + std::to_string(blocks), "oflag=direct", "conv=fsync"});
  }
  ::sync();
  Sample(c, "dd write", ref_bytes, Seconds([&] { Check(RunTogether(dds), "dd write failed"); }));
  for (const std::string& file : files) std::filesystem::remove(file);
  ::sync();
  Sample(c, "O_DIRECT write", ref_bytes,
         Seconds([&] { Check(WriteDirect(files, blocks, block), "O_DIRECT write failed"); }));
  for (const std::string& file : files) std::filesystem::remove(file);
}

// The readers of the shard files of `step`, cold, in an order rotated by `rep`, with
// RestoreLatest among them.
void MeasureReads(Config& c, int rep, bool fio, AlignedBlock& block) {
  const int64_t step = c.step;
  const std::vector<std::string> shards = ShardFiles(c, step);
  const uint64_t bytes = FileBytes(shards);
  std::vector<std::pair<std::string, std::function<void()>>> readers;
  double fio_gib_s = 0;
  auto restore_with = [&](const std::string& variant) {
    OnEveryRank(c, [&](int r) {
      Checkpointer& ckpt = variant.empty()                     ? *c.rank[r].ckpt
                           : c.rank[r].variants.count(variant) ? *c.rank[r].variants.at(variant)
                                                               : *c.rank[r].own.at(variant);
      auto restored = ckpt.RestoreLatest();
      Check(restored.ok() && restored->has_value() && (*restored)->step == step,
            "RestoreLatest did not bring back step " + std::to_string(step));
    });
  };
  readers.emplace_back("restore", [&] { restore_with(""); });
  for (const auto& [variant, ckpt] : c.rank[0].variants) {
    readers.emplace_back(variant, [&, name = variant] { restore_with(name); });
  }
  // Their own files, as large as the others to within 4 KiB per buffer.
  for (const auto& [name, unused] : c.rank[0].own) {
    readers.emplace_back("restore " + name, [&, name = name] { restore_with(name); });
  }
  readers.emplace_back("dd read", [&] {
    std::vector<std::vector<std::string>> dds;
    for (const std::string& s : shards) dds.push_back({"dd", "if=" + s, "of=/dev/null", "bs=16M"});
    Check(RunTogether(dds), "dd read failed");
  });
  if (fio) {
    // fio's own figure (bytes over its I/O time): its start-up is not the disk's.
    readers.emplace_back("fio read", [&] {
      const std::string out = c.dir + "/fio.out";
      std::vector<std::string> args = {"fio",
                                       "--rw=read",
                                       "--bs=16M",
                                       "--direct=1",
                                       "--invalidate=1",
                                       "--ioengine=libaio",
                                       "--iodepth=4",
                                       "--group_reporting",
                                       "--output-format=terse",
                                       "--terse-version=3",
                                       "--output=" + out};
      for (size_t i = 0; i < shards.size(); ++i) {
        args.push_back("--name=r" + std::to_string(i));
        args.push_back("--filename=" + shards[i]);
      }
      Check(RunTogether({args}), "fio failed");
      // Terse v3: ...;read_kb;read_bw;read_iops;read_runtime_ms;... (fields 6 to 9).
      std::FILE* in = std::fopen(out.c_str(), "r");
      Check(in != nullptr, "fio wrote no output");
      char line[8192] = {};
      Check(std::fgets(line, sizeof(line), in) != nullptr, "fio output is empty");
      std::fclose(in);
      std::vector<std::string> fields = SplitFields(line, ';');
      Check(fields.size() > 9, "unreadable fio output");
      const double kib = std::strtod(fields[5].c_str(), nullptr);
      const double ms = std::strtod(fields[8].c_str(), nullptr);
      Check(kib > 0 && ms > 0, "fio read nothing");
      fio_gib_s = kib / (1024.0 * 1024) / (ms / 1000);
    });
  }
  readers.emplace_back("O_DIRECT read",
                       [&] { Check(ReadDirect(shards, block), "O_DIRECT read failed"); });
  if (!c.copy_target.empty()) {
    readers.emplace_back("O_DIRECT landed", [&] {
      char* dest = c.copy_target.data();
      const uint64_t skip = (4096 - reinterpret_cast<uintptr_t>(dest) % 4096) % 4096;
      Check(ReadDirectLanded(shards, dest + skip, c.copy_target.size() - skip),
            "O_DIRECT landing read failed");
    });
  }
  // The writes just before may still be draining below the guest (a virtual disk's host
  // cache): let them, so that whichever reader comes first is not the one that pays.
  ::sync();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  for (size_t i = 0; i < readers.size(); ++i) {
    auto& [name, run] = readers[(i + rep) % readers.size()];
    c.cold &= DropCaches();
    const double cpu = CpuSeconds();
    const double seconds = Seconds(run);
    // The process's own CPU per GiB (nothing else runs in it meanwhile); readers that are
    // other processes (dd, fio) show none.
    if (name.starts_with("restore")) {
      c.samples[name + " cpu"].push_back((CpuSeconds() - cpu) / (bytes / kGiB));
    }
    if (name == "fio read") {
      c.samples[name].push_back(fio_gib_s);
    } else {
      Sample(c, name, bytes, seconds);
    }
  }
}

void MeasureStall(Config& c) {
  if (c.copy_target.empty()) return;
  c.samples["memcpy s"].push_back(Seconds([&] {
    char* dst = c.copy_target.data();
    for (const Rank& r : c.rank) {
      for (const auto& buf : r.state) {
        std::memcpy(dst, buf.data(), buf.size());
        dst += buf.size();
      }
    }
  }));
  ::sync();
  const int64_t step = ++c.step;
  c.samples["stall s"].push_back(Seconds([&] {
    OnEveryRank(c, [&](int r) { Check(c.rank[r].ckpt->SaveAsync(step), "SaveAsync"); });
  }));
  OnEveryRank(c, [&](int r) { Check(c.rank[r].ckpt->Wait(), "async save"); });
}

struct Figures {
  double save = 0, write_ref = 0, restore = 0, read_ref = 0, stall_ms = 0, memcpy_ms = 0;
  double save_ratio = 0, restore_ratio = 0, landing_ref = 0, landing_ratio = 0, restore_cpu = 0;
};

// Throughputs are medians per method; a reference is, in each repetition, the best of its
// methods, and a ratio is the median over repetitions of (library / that repetition's
// reference): the disk drifts between repetitions, less within one.
Figures Summarize(const Config& c) {
  auto samples = [&](const std::string& name) -> const std::vector<double>& {
    static const std::vector<double> kNone;
    auto it = c.samples.find(name);
    return it == c.samples.end() ? kNone : it->second;
  };
  auto paired = [&](const std::string& mine, std::vector<const char*> refs, double* best) {
    std::vector<double> ratios, bests;
    const std::vector<double>& m = samples(mine);
    for (size_t rep = 0; rep < m.size(); ++rep) {
      double ref = 0;
      for (const char* name : refs) {
        if (samples(name).size() > rep) ref = std::max(ref, samples(name)[rep]);
      }
      bests.push_back(ref);
      if (ref > 0) ratios.push_back(m[rep] / ref);
    }
    *best = Median(bests);
    return Median(ratios);
  };
  Figures f;
  f.save = Median(samples("save"));
  f.restore = Median(samples("restore"));
  f.restore_cpu = Median(samples("restore cpu"));
  f.save_ratio = paired("save", {"dd write", "O_DIRECT write"}, &f.write_ref);
  f.restore_ratio = paired("restore", {"dd read", "fio read", "O_DIRECT read"}, &f.read_ref);
  f.landing_ratio = paired("restore", {"O_DIRECT landed"}, &f.landing_ref);
  f.stall_ms = Median(samples("stall s")) * 1e3;
  f.memcpy_ms = Median(samples("memcpy s")) * 1e3;
  return f;
}

void Print(const Config& c, const Figures& f, int reps) {
  std::printf("\n%s in %d rank(s), %d reps%s:\n", FormatBytes(c.size).c_str(), c.ranks, reps,
              c.cold ? "" : " (cache drop not allowed: reads may be warm)");
  for (const auto& [name, v] : c.samples) {
    if (name.ends_with(" s")) continue;
    const bool cpu = name.ends_with(" cpu");
    std::printf(cpu ? "  %-20s %7.3f CPU s/GiB  (" : "  %-20s %7.3f GiB/s      (", name.c_str(),
                Median(v));
    for (size_t i = 0; i < v.size(); ++i) std::printf("%s%.3f", i ? " " : "", v[i]);
    std::printf(")\n");
  }
  std::printf("  Save / best raw write of its repetition          %.3f (target >= 0.9)\n",
              f.save_ratio);
  std::printf("  RestoreLatest / best raw read of its repetition  %.3f (target >= 0.9)\n",
              f.restore_ratio);
  if (f.landing_ratio > 0) {
    std::printf("  RestoreLatest / O_DIRECT read landing in memory  %.3f\n", f.landing_ratio);
  }
  if (f.memcpy_ms > 0) {
    std::printf("  SaveAsync stall %.1f ms / memcpy %.1f ms = %.3f (target <= 1.5)\n", f.stall_ms,
                f.memcpy_ms, f.stall_ms / f.memcpy_ms);
  }
}

// The JSON keys' suffix of a configuration: "" for 2 GiB in 1 rank, else "_8g", "_4r",
// "_8g_4r", "_512m", …
std::string Suffix(const Config& c) {
  std::string s;
  if (c.size != (2ull << 30)) {
    s += c.size % (1ull << 30) == 0 ? "_" + std::to_string(c.size >> 30) + "g"
                                    : "_" + std::to_string(c.size >> 20) + "m";
  }
  if (c.ranks != 1) s += "_" + std::to_string(c.ranks) + "r";
  return s;
}

}  // namespace
}  // namespace baton::checkpoint

int main(int argc, char** argv) {
  using namespace baton::checkpoint;
  Flags flags;
  const char* usage =
      "flags: --dir=PATH --size=BYTES[,BYTES] (each >= 64Mi) --ranks=N[,N] --buffers=N "
      "--reps=N --io-threads=N --io-unit=BYTES --io-depth=N --no-direct --explain\n";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf("baton-bench-checkpoint: checkpoint save and restore vs raw I/O\n%s", usage);
      return 0;
    }
    if (!ParseFlag(argv[i], &flags)) {
      std::fprintf(stderr, "baton-bench-checkpoint: bad flag '%s'\n%s", argv[i], usage);
      return 2;
    }
  }
  const bool fio = HaveFio();
  if (!fio) std::fprintf(stderr, "baton-bench-checkpoint: fio not installed; not a reference\n");
  AlignedBlock block;
  std::string json = "{";
  bool all_cold = true;
  for (uint64_t size : flags.sizes) {
    for (int ranks : flags.ranks) {
      Config c;
      c.size = size;
      c.ranks = ranks;
      Setup(flags, c);
      for (int rep = 0; rep < flags.reps; ++rep) {
        MeasureWrites(c, block);
        MeasureReads(c, rep, fio, block);
        MeasureStall(c);
        std::fprintf(stderr, "%s x %d rank(s), rep %d done\n", baton::FormatBytes(size).c_str(),
                     ranks, rep);
      }
      for (Rank& r : c.rank) {
        r.variants.clear();
        r.own.clear();
        r.ckpt.reset();
      }
      std::error_code ec;
      std::filesystem::remove_all(c.dir, ec);
      const Figures f = Summarize(c);
      Print(c, f, flags.reps);
      all_cold &= c.cold;
      const std::string sfx = Suffix(c);
      char buf[512];
      std::snprintf(buf, sizeof(buf),
                    "%s\"save_vs_raw_write%s\":%.3f,\"restore_vs_strict_raw_read%s\":%.3f,"
                    "\"save_gib_s%s\":%.3f,\"raw_write_gib_s%s\":%.3f,\"restore_gib_s%s\":%.3f,"
                    "\"raw_read_gib_s%s\":%.3f,\"restore_cpu_s_per_gib%s\":%.3f",
                    json.size() > 1 ? "," : "", sfx.c_str(), f.save_ratio, sfx.c_str(),
                    f.restore_ratio, sfx.c_str(), f.save, sfx.c_str(), f.write_ref, sfx.c_str(),
                    f.restore, sfx.c_str(), f.read_ref, sfx.c_str(), f.restore_cpu);
      json += buf;
      if (f.landing_ratio > 0) {
        std::snprintf(buf, sizeof(buf),
                      ",\"restore_vs_landing_read%s\":%.3f,\"landing_read_gib_s%s\":%.3f",
                      sfx.c_str(), f.landing_ratio, sfx.c_str(), f.landing_ref);
        json += buf;
      }
      if (f.memcpy_ms > 0) {
        std::snprintf(buf, sizeof(buf),
                      ",\"async_stall_vs_memcpy%s\":%.3f,\"async_stall_ms%s\":%.1f,"
                      "\"memcpy_ms%s\":%.1f",
                      sfx.c_str(), f.stall_ms / f.memcpy_ms, sfx.c_str(), f.stall_ms, sfx.c_str(),
                      f.memcpy_ms);
        json += buf;
      }
    }
  }
  std::printf("%s,\"buffers\":%d,\"reps\":%d,\"fio\":%s,\"cold_reads\":%s}\n", json.c_str(),
              flags.buffers, flags.reps, fio ? "true" : "false", all_cold ? "true" : "false");
  return 0;
}
