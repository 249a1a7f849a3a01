// nccl_allreduce_check: one rank of an NCCL all-reduce across the job's GPUs, for
// scripts/gpu-check.sh. The ranks find each other as train_mlp_direct's do (RANK,
// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; rank 0's ncclUniqueId goes over TCP,
// examples/train_mlp/tcp_collective.h), each takes GPU LOCAL_RANK % visible devices, and:
//  - the sums are checked: float buffers of several lengths (odd ones among them) where
//    rank r's element i is (r + 1) * (i % 251 + 1), so every sum is exact; every element
//    of every rank's result is compared with it, before and after the timed runs;
//  - `--iters` all-reduces of `--bytes` are timed after 5 warm-ups, as nccl-tests times
//    them: algbw = bytes / time, busbw = algbw * 2 (n - 1) / n (GB/s, 1e9 bytes).
// Rank 0 prints one JSON line: {"ranks":2,"devices":1,"nccl_version":"2.28.9",
// "bytes":…,"iters":…,"checked_values":…,"wrong_values":0,"algbw_gb_per_s":…,
// "busbw_gb_per_s":…}. Exit 0 when every value on every rank was right, else 1 (the
// reason on stderr).
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/status.h"
#include "examples/train_mlp/tcp_collective.h"

namespace {

namespace ckpt = baton::checkpoint;

struct Flags {
  size_t bytes = 256u << 20;
  int iters = 20;
};

absl::Status Cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(std::string(what) + ": " + cudaGetErrorString(e));
}

absl::Status Nccl(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return absl::OkStatus();
  std::string last = ncclGetLastError(nullptr);
  return absl::InternalError(std::string(what) + ": " + ncclGetErrorString(r) +
                             (last.empty() ? "" : " (" + last + ")"));
}

float Value(int rank, size_t i) { return static_cast<float>((rank + 1) * (i % 251 + 1)); }

class Check {
 public:
  Check(ncclComm_t comm, cudaStream_t stream, int rank, int world)
      : comm_(comm), stream_(stream), rank_(rank), world_(world) {}
  ~Check() {
    if (send_) cudaFree(send_);
    if (recv_) cudaFree(recv_);
  }

  absl::Status Allocate(size_t count) {
    BATON_RETURN_IF_ERROR(Cuda(cudaMalloc(&send_, count * sizeof(float)), "cudaMalloc"));
    BATON_RETURN_IF_ERROR(Cuda(cudaMalloc(&recv_, count * sizeof(float)), "cudaMalloc"));
    host_.resize(count);
    return absl::OkStatus();
  }

  // Fills the first `count` elements, all-reduces them once unless `reduce` is false (the
  // timed runs did), and counts the wrong sums.
  absl::Status Run(size_t count, bool reduce) {
    if (reduce) {
      for (size_t i = 0; i < count; ++i) host_[i] = Value(rank_, i);
      BATON_RETURN_IF_ERROR(
          Cuda(cudaMemcpy(send_, host_.data(), count * sizeof(float), cudaMemcpyHostToDevice),
               "cudaMemcpy"));
      BATON_RETURN_IF_ERROR(Cuda(cudaMemset(recv_, 0xff, count * sizeof(float)), "cudaMemset"));
      BATON_RETURN_IF_ERROR(Nccl(
          ncclAllReduce(send_, recv_, count, ncclFloat, ncclSum, comm_, stream_), "ncclAllReduce"));
      BATON_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"));
    }
    BATON_RETURN_IF_ERROR(
        Cuda(cudaMemcpy(host_.data(), recv_, count * sizeof(float), cudaMemcpyDeviceToHost),
             "cudaMemcpy"));
    const float ranks_sum = static_cast<float>(world_ * (world_ + 1) / 2);
    for (size_t i = 0; i < count; ++i) {
      if (host_[i] != ranks_sum * static_cast<float>(i % 251 + 1)) ++wrong_;
    }
    checked_ += count;
    return absl::OkStatus();
  }

  // Mean seconds per all-reduce of `count` floats, after 5 warm-ups.
  absl::StatusOr<double> Time(size_t count, int iters) {
    for (size_t i = 0; i < count; ++i) host_[i] = Value(rank_, i);
    BATON_RETURN_IF_ERROR(
        Cuda(cudaMemcpy(send_, host_.data(), count * sizeof(float), cudaMemcpyHostToDevice),
             "cudaMemcpy"));
    cudaEvent_t start, stop;
    BATON_RETURN_IF_ERROR(Cuda(cudaEventCreate(&start), "cudaEventCreate"));
    BATON_RETURN_IF_ERROR(Cuda(cudaEventCreate(&stop), "cudaEventCreate"));
    absl::Status s;
    for (int i = 0; i < 5 + iters && s.ok(); ++i) {
      if (i == 5) s = Cuda(cudaEventRecord(start, stream_), "cudaEventRecord");
      if (s.ok()) {
        s = Nccl(ncclAllReduce(send_, recv_, count, ncclFloat, ncclSum, comm_, stream_),
                 "ncclAllReduce");
      }
    }
    if (s.ok()) s = Cuda(cudaEventRecord(stop, stream_), "cudaEventRecord");
    if (s.ok()) s = Cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    if (s.ok()) s = Cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    if (!s.ok()) return s;
    return ms / 1e3 / iters;
  }

  size_t checked() const { return checked_; }
  size_t wrong() const { return wrong_; }

 private:
  ncclComm_t comm_;
  cudaStream_t stream_;
  const int rank_, world_;
  float* send_ = nullptr;
  float* recv_ = nullptr;
  std::vector<float> host_;
  size_t checked_ = 0, wrong_ = 0;
};

absl::StatusOr<ncclComm_t> InitComm(ckpt::Collective& c, int local_rank, int* devices) {
  BATON_RETURN_IF_ERROR(Cuda(cudaGetDeviceCount(devices), "cudaGetDeviceCount"));
  if (*devices == 0) return absl::FailedPreconditionError("no CUDA device");
  BATON_RETURN_IF_ERROR(Cuda(cudaSetDevice(local_rank % *devices), "cudaSetDevice"));
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (c.rank() == 0) BATON_RETURN_IF_ERROR(Nccl(ncclGetUniqueId(&id), "ncclGetUniqueId"));
  BATON_ASSIGN_OR_RETURN(std::string got, c.Broadcast(std::string(id.internal, sizeof id)));
  if (got.size() != sizeof id) return absl::InternalError("a short ncclUniqueId");
  std::memcpy(id.internal, got.data(), sizeof id);
  ncclComm_t comm = nullptr;
  BATON_RETURN_IF_ERROR(Nccl(ncclCommInitRank(&comm, c.size(), id, c.rank()), "ncclCommInitRank"));
  return comm;
}

// The whole check on this rank; rank 0 prints the JSON line.
absl::Status RunCheck(const Flags& f) {
  BATON_ASSIGN_OR_RETURN(auto env, baton::examples::DirectEnvFromEnvironment());
  BATON_ASSIGN_OR_RETURN(auto ranks, baton::examples::TcpRanks::Create(env));
  BATON_ASSIGN_OR_RETURN(auto collective, ranks->NewCollective());
  int devices = 0;
  BATON_ASSIGN_OR_RETURN(ncclComm_t comm, InitComm(*collective, env.local_rank, &devices));
  cudaStream_t stream;
  BATON_RETURN_IF_ERROR(Cuda(cudaStreamCreate(&stream), "cudaStreamCreate"));
  const size_t count = std::max<size_t>(f.bytes / sizeof(float), 1);
  absl::Status s;
  double seconds = 0;
  Check check(comm, stream, env.rank, env.world);
  {
    s = check.Allocate(count);
    for (size_t n : {size_t{1}, size_t{1031}, (size_t{1} << 20) + 7, count}) {
      if (s.ok()) s = check.Run(std::min(n, count), /*reduce=*/true);
    }
    if (s.ok()) {
      auto t = check.Time(count, f.iters);
      s = t.status();
      if (t.ok()) seconds = *t;
    }
    if (s.ok()) s = check.Run(count, /*reduce=*/false);  // the timed runs' result
  }
  ncclCommDestroy(comm);
  cudaStreamDestroy(stream);
  BATON_RETURN_IF_ERROR(s);
  // The slowest rank's time; every rank's wrong values.
  char mine[64];
  std::snprintf(mine, sizeof mine, "%.9e %zu", seconds, check.wrong());
  BATON_ASSIGN_OR_RETURN(auto all, collective->AllGather(mine));
  double slowest = 0;
  size_t wrong = 0;
  for (const std::string& a : all) {
    double t = 0;
    size_t w = 0;
    if (std::sscanf(a.c_str(), "%lf %zu", &t, &w) != 2) return absl::DataLossError("a bad reply");
    slowest = std::max(slowest, t);
    wrong += w;
  }
  if (env.rank == 0) {
    int v = 0;
    ncclGetVersion(&v);
    double algbw = static_cast<double>(count * sizeof(float)) / slowest / 1e9;
    double busbw = algbw * 2.0 * (env.world - 1) / env.world;
    std::printf(
        "{\"ranks\":%d,\"devices\":%d,\"nccl_version\":\"%d.%d.%d\",\"bytes\":%zu,"
        "\"iters\":%d,\"checked_values\":%zu,\"wrong_values\":%zu,\"algbw_gb_per_s\":%.2f,"
        "\"busbw_gb_per_s\":%.2f}\n",
        env.world, devices, v / 10000, v / 100 % 100, v % 100, count * sizeof(float), f.iters,
        check.checked() * env.world, wrong, algbw, busbw);
  }
  if (wrong > 0) {
    return absl::DataLossError(std::to_string(wrong) + " of the summed values are wrong");
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--bytes" && i + 1 < argc) {
      f.bytes = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--iters" && i + 1 < argc) {
      f.iters = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: nccl_allreduce_check [--bytes N] [--iters N]\n");
      return 2;
    }
  }
  absl::Status s = RunCheck(f);
  if (!s.ok()) {
    std::fprintf(stderr, "nccl_allreduce_check rank %s: %s\n",
                 std::getenv("RANK") ? std::getenv("RANK") : "0", s.ToString().c_str());
    return 1;
  }
  return 0;
}
