// train_mlp: data-parallel training of a small MLP on a deterministic synthetic dataset,
// the example researchers copy. Every rank holds the whole model and trains on its slice
// of each global batch; gradients are summed across ranks (NCCL when GPUs are visible,
// else on the CPUs) in a fixed order, so a run's weights do not depend on where it was
// evicted.
// Parameters, optimizer state, RNG state and the data cursor are checkpointed with
// libbaton_checkpoint every --save-every steps and when baton evicts the job (SIGUSR1):
// all ranks stop at the same step, save, exit 0; the next attempt resumes there.
//
//   mpirun -np 4 train_mlp --steps 200 --save-every 20 --checkpoint-dir /shared/ckpt/run1
//
// train_mlp_direct is the same program without MPI (ranks.h): it reads the torchrun-style
// variables baton's direct mode sets (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
// MASTER_PORT) and its ranks talk over TCP; the same flags give the same weights.
//
// Output (rank 0): "restored step N" or "starting fresh", then "step N loss X" per step,
// and at the end "final weights hash H" (the same for any run with the same flags and
// number of ranks). --reducer nccl|host forces the gradient path (default auto: NCCL
// where a GPU answers); with 2 ranks both give the same hash.
// Test knobs: --ignore-sigusr1 (a job that never honours an eviction: it is killed at the
// deadline and resumes from its last periodic checkpoint) and --slow-save-ms N (every
// shard fsync takes N ms more, as on a slow shared filesystem: an eviction's save then
// outlasts a short grace). The WITNESS file gets "alive" lines about once a second too,
// so that a rank left running where it should not be shows up in it.
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/preemption.h"
#include "examples/train_mlp/allreduce.h"
#include "examples/train_mlp/ranks.h"
#include "examples/train_mlp/slow_env.h"

namespace {

namespace ckpt = baton::checkpoint;

struct Flags {
  int64_t steps = 100;
  int64_t save_every = 10;
  int64_t global_batch = 64;
  int hidden = 32;
  double lr = 0.01;
  uint64_t seed = 7;
  int64_t step_ms = 0;           // sleep per step, to make a run long enough to evict
  std::string checkpoint_dir;    // "" : BATON_CHECKPOINT_DIR
  bool ignore_sigusr1 = false;   // never checkpoint on eviction (tests: killed at the deadline)
  int64_t slow_save_ms = 0;      // extra ms per shard fsync (tests: saves outlast the grace)
  std::string reducer = "auto";  // auto, nccl or host (allreduce.h)
};

constexpr int kInputs = 16;
constexpr int64_t kDatasetSize = 1 << 16;

// The model and everything training needs to resume bit-exactly.
struct Model {
  int hidden = 0;
  std::vector<double> params;  // W1 (hidden x inputs), b1 (hidden), w2 (hidden), b2 (1)
  std::vector<double> m, v;    // Adam moments
  struct Counters {
    int64_t step = 0;    // steps done
    int64_t cursor = 0;  // next sample of the dataset
    int64_t adam_t = 0;
  } counters;
  std::array<char, 8192> rng_state{};  // this rank's input-noise generator, as text
  std::mt19937_64 rng;

  size_t W1() const { return 0; }
  size_t B1() const { return static_cast<size_t>(hidden) * kInputs; }
  size_t W2() const { return B1() + hidden; }
  size_t B2() const { return W2() + hidden; }
};

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

double Uniform(uint64_t seed, uint64_t i) {  // in [-1, 1)
  return static_cast<double>(SplitMix(seed * 1000003 + i) >> 11) / (1ull << 52) - 1.0;
}

// Sample i of the synthetic dataset and its target.
void Sample(uint64_t seed, int64_t i, double* x, double* y) {
  double t = 0;
  for (int k = 0; k < kInputs; ++k) {
    x[k] = Uniform(seed, static_cast<uint64_t>(i) * kInputs + k);
    t += std::sin(x[k] * (k + 1)) / (k + 1);
  }
  *y = t;
}

void Init(Model& m, const Flags& f, int rank) {
  m.hidden = f.hidden;
  m.params.assign(m.B2() + 1, 0.0);
  double scale = 1.0 / std::sqrt(kInputs);
  for (size_t i = 0; i < m.B1(); ++i) m.params[i] = Uniform(f.seed + 1, i) * scale;
  for (int j = 0; j < m.hidden; ++j)
    m.params[m.W2() + j] = Uniform(f.seed + 2, j) / std::sqrt(m.hidden);
  m.m.assign(m.params.size(), 0.0);
  m.v.assign(m.params.size(), 0.0);
  m.rng.seed(f.seed * 7919 + rank);
}

// Forward and backward over this rank's slice; adds to `grad`, returns the summed loss.
double Accumulate(Model& m, const Flags& f, int64_t first, int64_t count,
                  std::vector<double>& grad) {
  std::normal_distribution<double> noise(0.0, 0.01);
  std::vector<double> x(kInputs), h(m.hidden);
  double loss = 0;
  for (int64_t s = 0; s < count; ++s) {
    double y;
    Sample(f.seed, (first + s) % kDatasetSize, x.data(), &y);
    for (auto& xi : x) xi += noise(m.rng);  // augmentation: why the RNG state is saved
    double out = m.params[m.B2()];
    for (int j = 0; j < m.hidden; ++j) {
      double a = m.params[m.B1() + j];
      for (int k = 0; k < kInputs; ++k) a += m.params[m.W1() + j * kInputs + k] * x[k];
      h[j] = std::tanh(a);
      out += m.params[m.W2() + j] * h[j];
    }
    double err = out - y;
    loss += err * err;
    double d_out = 2 * err;
    grad[m.B2()] += d_out;
    for (int j = 0; j < m.hidden; ++j) {
      grad[m.W2() + j] += d_out * h[j];
      double d_a = d_out * m.params[m.W2() + j] * (1 - h[j] * h[j]);
      grad[m.B1() + j] += d_a;
      for (int k = 0; k < kInputs; ++k) grad[m.W1() + j * kInputs + k] += d_a * x[k];
    }
  }
  return loss;
}

void AdamStep(Model& m, const std::vector<double>& g, double lr) {
  constexpr double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  int64_t t = ++m.counters.adam_t;
  double c1 = 1 - std::pow(b1, t), c2 = 1 - std::pow(b2, t);
  for (size_t i = 0; i < m.params.size(); ++i) {
    m.m[i] = b1 * m.m[i] + (1 - b1) * g[i];
    m.v[i] = b2 * m.v[i] + (1 - b2) * g[i] * g[i];
    m.params[i] -= lr * (m.m[i] / c1) / (std::sqrt(m.v[i] / c2) + eps);
  }
}

void SaveRng(Model& m) {
  std::ostringstream os;
  os << m.rng;
  std::string s = os.str();
  m.rng_state.fill(0);
  std::memcpy(m.rng_state.data(), s.data(), std::min(s.size(), m.rng_state.size() - 1));
}

void LoadRng(Model& m) {
  std::istringstream is(std::string(m.rng_state.data()));
  is >> m.rng;
}

uint64_t WeightsHash(const std::vector<double>& p) {  // FNV-1a over the bytes
  uint64_t h = 1469598103934665603ull;
  const auto* b = reinterpret_cast<const unsigned char*>(p.data());
  for (size_t i = 0; i < p.size() * sizeof(double); ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

// Wall-clock unix ms (all nodes of the namespace cluster share the clock).
int64_t UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Appends "<event> attempt A rank R time T" under flock: a record of when each attempt
// ran that the launcher does not control (tests check no two attempts overlapped).
void Witness(const std::string& dir, const char* event, int rank) {
  if (dir.empty()) return;
  mkdir(dir.c_str(), 0755);  // the first attempt may get here before the checkpointer
  std::string path = dir + "/WITNESS";
  FILE* f = std::fopen(path.c_str(), "a");
  if (!f) return;
  flock(fileno(f), LOCK_EX);
  const char* attempt = std::getenv("BATON_ATTEMPT");
  std::fprintf(f, "%s attempt %s rank %d time %lld\n", event, attempt ? attempt : "0", rank,
               static_cast<long long>(UnixMs()));
  std::fflush(f);
  fsync(fileno(f));
  flock(fileno(f), LOCK_UN);
  std::fclose(f);
}

[[noreturn]] void Die(baton::examples::Ranks& ranks, const std::string& what,
                      const absl::Status& s) {
  std::fprintf(stderr, "train_mlp rank %d: %s: %s\n", ranks.rank(), what.c_str(),
               s.ToString().c_str());
  ranks.Abort(1);
  std::exit(1);  // not reached: Abort ends the process
}

bool ParseFlags(int argc, char** argv, Flags* f) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--ignore-sigusr1") {
      f->ignore_sigusr1 = true;
      continue;
    }
    auto next = [&](auto* out) {
      if (i + 1 >= argc) return false;
      std::istringstream is(argv[++i]);
      is >> *out;
      return !is.fail();
    };
    bool ok = a == "--steps"            ? next(&f->steps)
              : a == "--save-every"     ? next(&f->save_every)
              : a == "--batch"          ? next(&f->global_batch)
              : a == "--hidden"         ? next(&f->hidden)
              : a == "--lr"             ? next(&f->lr)
              : a == "--seed"           ? next(&f->seed)
              : a == "--step-ms"        ? next(&f->step_ms)
              : a == "--checkpoint-dir" ? next(&f->checkpoint_dir)
              : a == "--slow-save-ms"   ? next(&f->slow_save_ms)
              : a == "--reducer"        ? next(&f->reducer)
                                        : false;
    if (!ok) {
      std::fprintf(stderr, "train_mlp: bad or unknown flag '%s'\n", a.c_str());
      return false;
    }
  }
  if (f->reducer != "auto" && f->reducer != "nccl" && f->reducer != "host") {
    std::fprintf(stderr, "train_mlp: --reducer is auto, nccl or host, not '%s'\n",
                 f->reducer.c_str());
    return false;
  }
  return f->steps > 0 && f->save_every > 0 && f->global_batch > 0 && f->hidden > 0;
}

ReducerKind KindOf(const std::string& reducer) {
  return reducer == "nccl"   ? ReducerKind::kNccl
         : reducer == "host" ? ReducerKind::kHost
                             : ReducerKind::kAuto;
}

}  // namespace

int main(int argc, char** argv) {
  auto ranks_or = baton::examples::Ranks::Init(&argc, &argv);
  if (!ranks_or.ok()) {
    std::fprintf(stderr, "train_mlp: %s\n", ranks_or.status().ToString().c_str());
    return 1;
  }
  baton::examples::Ranks& ranks = **ranks_or;
  const int rank = ranks.rank(), world = ranks.world();
  Flags f;
  if (!ParseFlags(argc, argv, &f)) {
    ranks.Finalize();
    return 2;
  }
  if (f.checkpoint_dir.empty() && std::getenv("BATON_CHECKPOINT_DIR")) {
    f.checkpoint_dir = std::getenv("BATON_CHECKPOINT_DIR");
  }
  Witness(f.checkpoint_dir, "start", rank);

  Model model;
  Init(model, f, rank);
  auto ckpt_comm = ranks.NewCollective();    // used by async saves' thread
  auto stop_comm = ranks.NewCollective();    // used by ShouldStop on this thread
  auto reduce_comm = ranks.NewCollective();  // the gradients' (or NCCL's bootstrap)
  if (!ckpt_comm.ok()) Die(ranks, "collective", ckpt_comm.status());
  if (!stop_comm.ok()) Die(ranks, "collective", stop_comm.status());
  if (!reduce_comm.ok()) Die(ranks, "collective", reduce_comm.status());
  auto watcher = ckpt::PreemptionWatcher::Create();
  if (!watcher.ok()) Die(ranks, "preemption watcher", watcher.status());
  if (f.ignore_sigusr1) signal(SIGUSR1, SIG_IGN);  // after the watcher: it never hears it
  baton::examples::SlowSyncEnv slow_env(ckpt::DefaultEnv(), f.slow_save_ms);
  ckpt::Options opts;
  opts.dir = f.checkpoint_dir;
  if (f.slow_save_ms > 0) opts.env = &slow_env;
  auto cp = ckpt::Checkpointer::Create(opts, ckpt_comm->get());
  if (!cp.ok()) Die(ranks, "checkpointer", cp.status());
  auto& c = **cp;
  auto reg = [&](const char* name, void* p, size_t n) {
    if (auto s = c.RegisterHostBuffer(name, p, n); !s.ok()) Die(ranks, name, s);
  };
  reg("params", model.params.data(), model.params.size() * sizeof(double));
  reg("adam_m", model.m.data(), model.m.size() * sizeof(double));
  reg("adam_v", model.v.data(), model.v.size() * sizeof(double));
  reg("counters", &model.counters, sizeof(model.counters));
  reg("rng", model.rng_state.data(), model.rng_state.size());

  auto restored = c.RestoreLatest();
  if (!restored.ok()) Die(ranks, "restore", restored.status());
  if (*restored) {
    LoadRng(model);
    if (rank == 0) std::printf("restored step %lld\n", static_cast<long long>((*restored)->step));
  } else if (rank == 0) {
    std::printf("starting fresh\n");
  }
  std::fflush(stdout);

  auto reducer = NewGradientReducer(KindOf(f.reducer), reduce_comm->get(), ranks.local_rank(),
                                    ranks.transport());
  if (!reducer.ok()) Die(ranks, "gradient reducer", reducer.status());
  if (rank == 0) std::printf("gradients all-reduced with %s\n", (*reducer)->name());
  int64_t per_rank = f.global_batch / world;
  std::vector<double> grad(model.params.size());
  auto last_alive = std::chrono::steady_clock::now();
  while (model.counters.step < f.steps) {
    if (std::chrono::steady_clock::now() - last_alive >= std::chrono::seconds(1)) {
      Witness(f.checkpoint_dir, "alive", rank);
      last_alive = std::chrono::steady_clock::now();
    }
    auto stop = (*watcher)->ShouldStop(**stop_comm);
    if (!stop.ok()) Die(ranks, "should-stop", stop.status());
    if (*stop && (*watcher)->Superseded()) {
      // Relaunched elsewhere while this attempt ran on (a node cut off, an agent gone):
      // the checkpoint directory is the new attempt's, so no save; just go.
      c.Wait().IgnoreError();
      if (rank == 0) {
        std::printf("superseded by attempt %lld: exiting without saving\n",
                    static_cast<long long>((*watcher)->superseded_by()));
      }
      Witness(f.checkpoint_dir, "superseded", rank);
      ranks.Finalize();
      return 0;
    }
    if (*stop) {
      const int64_t agreed_ms = UnixMs();
      // When this rank heard the signal: the grace left counts from it.
      auto left = (*watcher)->RemainingMs();
      auto grace = (*watcher)->grace_seconds();
      const int64_t signal_ms = left && grace ? agreed_ms - (*grace * 1000 - *left) : agreed_ms;
      if (auto s = c.Wait(); !s.ok()) Die(ranks, "wait", s);
      SaveRng(model);
      if (c.last_committed_step() != model.counters.step) {
        if (auto s = c.Save(model.counters.step); !s.ok()) Die(ranks, "save on eviction", s);
      }
      if (rank == 0) {
        // The eviction's timeline for benchmarks (unix ms): signal heard, stop agreed by
        // every rank, checkpoint committed.
        std::printf("evicted: saved step %lld (signal %lld agreed %lld saved %lld)\n",
                    static_cast<long long>(model.counters.step), static_cast<long long>(signal_ms),
                    static_cast<long long>(agreed_ms), static_cast<long long>(UnixMs()));
      }
      Witness(f.checkpoint_dir, "end", rank);
      ranks.Finalize();
      return 0;
    }
    std::fill(grad.begin(), grad.end(), 0.0);
    int64_t first = model.counters.cursor + rank * per_rank;
    double loss = Accumulate(model, f, first, per_rank, grad);
    grad.push_back(loss);
    if (auto s = (*reducer)->SumAcrossRanks(grad); !s.ok()) Die(ranks, "all-reduce", s);
    loss = grad.back() / (per_rank * world);
    grad.pop_back();
    for (auto& g : grad) g /= per_rank * world;
    AdamStep(model, grad, f.lr);
    model.counters.cursor = (model.counters.cursor + per_rank * world) % kDatasetSize;
    ++model.counters.step;
    if (rank == 0)
      std::printf("step %lld loss %.9f\n", static_cast<long long>(model.counters.step), loss);
    std::fflush(stdout);
    if (model.counters.step % f.save_every == 0) {
      SaveRng(model);
      if (auto s = c.SaveAsync(model.counters.step); !s.ok()) Die(ranks, "save", s);
    }
    if (f.step_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(f.step_ms));
  }
  if (auto s = c.Wait(); !s.ok()) Die(ranks, "wait", s);
  if (rank == 0) {
    std::printf("final weights hash %016llx\n",
                static_cast<unsigned long long>(WeightsHash(model.params)));
  }
  Witness(f.checkpoint_dir, "end", rank);
  ranks.Finalize();
  return 0;
}
