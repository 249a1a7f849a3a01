// A CUDA client for scripts/gpu-check.sh's mps check: run once per client of a private MPS
// control daemon (or without one, for a baseline), it does what its flags say, in this
// order, and prints one JSON line on stdout:
//   --alloc-mib N      cudaMalloc up to N MiB in 256 MiB steps; "alloc_mib" is what it got
//                      before the first failure, "alloc_error" that failure ("" if none)
//   --hold-ms N        keep that memory N ms before freeing it (two clients at once)
//   --spin-ms N        launch a busy kernel (a fixed grid, far more blocks than any GPU holds
//                      at once) again and again for N ms: "blocks_per_s", so that a client
//                      held to 25% of the threads shows about a quarter of a whole GPU's
//   --fault            launch a kernel that writes to an illegal address: "faulted", and
//                      "fault_error" what CUDA said
//   --wait-ready FILE  once the context is up, print "mps_client: ready" on stderr and wait
//                      (30 s at most) for FILE to appear before doing anything
// Always: "device", "sms" (cudaDevAttrMultiProcessorCount as this client sees it),
// "blocks_per_sm" (occupancy of the busy kernel), "mem_total_mib"/"mem_free_mib"
// (cudaMemGetInfo), and last "ok" with "error" (the first failing call and CUDA's message).
// Exit 0 when everything asked went as asked (for --fault: the kernel faulted), 1 when a
// CUDA call failed otherwise, 2 on a bad flag. Every CUDA call is checked.
#include <cuda_runtime.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string json;  // the result line so far

void Put(const std::string& key, const std::string& raw) {
  json += (json.empty() ? "{\"" : ",\"") + key + "\":" + raw;
}
// A JSON string without quotes or backslashes in it (the script reads it with sed).
std::string Str(const std::string& s) {
  std::string out = "\"";
  for (char c : s)
    out += (c == '"' || c == '\\') ? '\'' : (static_cast<unsigned char>(c) < 32 ? ' ' : c);
  return out + "\"";
}
std::string Num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.0f", v);
  return b;
}
std::string Why(const char* what, cudaError_t e) {
  return std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
}
[[noreturn]] void Finish(bool ok, const std::string& error, int code) {
  Put("ok", ok ? "true" : "false");
  Put("error", Str(error));
  std::printf("%s}\n", json.c_str());
  std::fflush(stdout);
  std::exit(code);
}
#define CHECK(call)                                          \
  do {                                                       \
    cudaError_t e_ = (call);                                 \
    if (e_ != cudaSuccess) Finish(false, Why(#call, e_), 1); \
  } while (0)

constexpr char kUsage[] =
    "usage: mps_client [--alloc-mib N [--hold-ms N]] [--spin-ms N] [--fault] [--wait-ready FILE]";
constexpr int kThreads = 256;
constexpr int kGrid = 8192;    // ~8 waves of a whole H100 (132 SMs x 8 blocks)
constexpr int kIters = 65536;  // dependent FMAs per thread: a few ms per launch, whole GPU

__global__ void Spin(float* out, int iters, float seed) {
  float x = seed + threadIdx.x * 1e-6f;
  for (int i = 0; i < iters; ++i) x = fmaf(x, 0.999999f, 1e-7f);
  if (x == -seed) out[blockIdx.x] = x;  // never true; keeps the loop
}

__global__ void Fault(int* p) { p[threadIdx.x] = 1; }

long Arg(int& i, int argc, char** argv) {
  if (i + 1 >= argc) Finish(false, std::string(argv[i]) + " needs a value", 2);
  char* end = nullptr;
  long v = std::strtol(argv[++i], &end, 10);
  if (*end != '\0' || v < 0)
    Finish(false, std::string(argv[i - 1]) + ": not a count: " + argv[i], 2);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  long alloc_mib = -1, hold_ms = 0, spin_ms = -1;
  bool fault = false;
  std::string ready;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--alloc-mib") {
      alloc_mib = Arg(i, argc, argv);
    } else if (a == "--hold-ms") {
      hold_ms = Arg(i, argc, argv);
    } else if (a == "--spin-ms") {
      spin_ms = Arg(i, argc, argv);
    } else if (a == "--fault") {
      fault = true;
    } else if (a == "--wait-ready" && i + 1 < argc) {
      ready = argv[++i];
    } else {
      Finish(false, std::string(kUsage) + " (got " + a + ")", 2);
    }
  }

  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(nullptr));  // the context: under MPS, the connection to the server
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  Put("device", Str(prop.name));
  int sms = 0, per_sm = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Spin, kThreads, 0));
  Put("sms", std::to_string(sms));
  Put("blocks_per_sm", std::to_string(per_sm));
  size_t free_b = 0, total_b = 0;
  CHECK(cudaMemGetInfo(&free_b, &total_b));
  Put("mem_total_mib", std::to_string(total_b >> 20));
  Put("mem_free_mib", std::to_string(free_b >> 20));
  float* out = nullptr;
  CHECK(cudaMalloc(&out, kGrid * sizeof(float)));
  if (spin_ms >= 0) {  // a first launch (module load) before the clock starts
    Spin<<<1, kThreads>>>(out, 1, 1.0f);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
  }

  if (!ready.empty()) {
    std::fprintf(stderr, "mps_client: ready\n");
    std::fflush(stderr);
    struct stat st;
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (::stat(ready.c_str(), &st) != 0) {
      if (std::chrono::steady_clock::now() > until)
        Finish(false, "no " + ready + " within 30 s", 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  if (alloc_mib >= 0) {
    constexpr size_t kStep = size_t{256} << 20;
    std::vector<void*> blocks;
    std::string error;
    for (long got = 0; got + 256 <= alloc_mib; got += 256) {
      void* p = nullptr;
      cudaError_t e = cudaMalloc(&p, kStep);
      if (e != cudaSuccess) {
        error = Why("cudaMalloc", e);
        (void)cudaGetLastError();  // an allocation failure is not sticky
        break;
      }
      blocks.push_back(p);
    }
    Put("asked_mib", std::to_string(alloc_mib));
    Put("alloc_mib", std::to_string(blocks.size() * 256));
    Put("alloc_error", Str(error));
    if (hold_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
    for (void* p : blocks) CHECK(cudaFree(p));
  }

  if (spin_ms >= 0) {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    long launches = 0;
    double ms = 0;
    do {
      Spin<<<kGrid, kThreads>>>(out, kIters, 1.0f + launches);
      cudaError_t e = cudaGetLastError();
      if (e == cudaSuccess) e = cudaDeviceSynchronize();
      ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      if (e != cudaSuccess) {
        Put("launches", std::to_string(launches));
        Put("spin_ms", Num(ms));
        Finish(false, Why("spin kernel", e), 1);
      }
      ++launches;
    } while (ms < spin_ms);
    Put("grid", std::to_string(kGrid));
    Put("launches", std::to_string(launches));
    Put("spin_ms", Num(ms));
    Put("blocks_per_s", Num(launches * double{kGrid} * 1000.0 / ms));
  }

  if (fault) {
    Fault<<<1, 32>>>(reinterpret_cast<int*>(std::uintptr_t{0x100}));
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    Put("faulted", e != cudaSuccess ? "true" : "false");
    Put("fault_error", Str(e != cudaSuccess ? Why("fault kernel", e) : ""));
    if (e == cudaSuccess) Finish(false, "the illegal write did not fault", 1);
    Finish(true, "", 0);  // the context is gone: nothing more to free
  }

  CHECK(cudaFree(out));
  Finish(true, "", 0);
}
