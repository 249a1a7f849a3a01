#include "checkpoint/checkpoint.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "checkpoint/checkpoint_internal.h"
#include "checkpoint/fence.h"
#include "checkpoint/job_env.h"
#include "checkpoint/parallel.h"
#include "checkpoint/progress.h"
#include "common/status.h"

namespace baton::checkpoint {
namespace {

constexpr size_t kMaxMetadataKeyBytes = 1024;
constexpr size_t kMaxMetadataValueBytes = 64 << 10;
// Host copies into staging are cut into pieces of this size for the copy threads.
constexpr uint64_t kCopyPieceBytes = 32 << 20;

absl::Status CheckOptions(const Options& o, const Collective* collective) {
  if (collective == nullptr) return absl::InvalidArgumentError("a Collective is required");
  if (o.dir.empty()) {
    return absl::InvalidArgumentError(
        "no checkpoint directory: set Options::dir or BATON_CHECKPOINT_DIR");
  }
  if (o.keep_last < 0) {
    return absl::InvalidArgumentError("keep_last must be >= 0 (0 keeps every checkpoint), got " +
                                      std::to_string(o.keep_last));
  }
  if (o.io_threads < 1 || o.io_threads > 64) {
    return absl::InvalidArgumentError("io_threads must be in 1..64, got " +
                                      std::to_string(o.io_threads));
  }
  if (o.io_queue_depth < 1 || o.io_queue_depth > 64) {
    return absl::InvalidArgumentError("io_queue_depth must be in 1..64, got " +
                                      std::to_string(o.io_queue_depth));
  }
  if (o.io_unit_bytes == 0 || o.io_unit_bytes % kChecksumChunkBytes != 0 ||
      o.io_unit_bytes > (1ull << 30)) {
    return absl::InvalidArgumentError(
        "io_unit_bytes must be a multiple of 64 KiB up to 1 GiB, got " +
        std::to_string(o.io_unit_bytes));
  }
  return absl::OkStatus();
}

}  // namespace

// ---- State ----------------------------------------------------------------------------

void Checkpointer::State::Log(const std::string& message) const {
  const std::string line =
      "baton-checkpoint rank " + std::to_string(collective->rank()) + ": " + message;
  if (options.log) {
    options.log(line);
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

ShardHeader Checkpointer::State::Layout(int64_t step) const {
  std::vector<BufferShape> shapes;
  shapes.reserve(buffers.size());
  for (const RegisteredBuffer& b : buffers) {
    // With io_in_place, host memory is stored at its phase so that O_DIRECT can move its
    // pages in place; otherwise at phase 0 (shard format 1, as older libraries wrote it).
    // Device buffers pass through the page-aligned staging, at their offset.
    const bool phased = options.io_in_place && !b.device;
    const uint64_t phase = phased ? reinterpret_cast<uintptr_t>(b.data) % kShardAlignment : 0;
    shapes.push_back({b.name, b.size, phase});
  }
  return LayoutShard(step, collective->rank(), collective->size(), shapes);
}

void Checkpointer::State::WriteProgress(const std::string& state, int64_t step) const {
  const Progress p{attempt, state, step, committed_step, clock->NowMs()};
  absl::Status s = ReplaceFileContents(env, progress_path, EncodeProgress(p));
  if (!s.ok()) Log("cannot update progress file: " + std::string(s.message()));
}

void Checkpointer::State::JoinBackground() {
  if (async_thread.joinable()) {
    async_thread.join();
    if (!async_result.ok() && async_error.ok()) async_error = async_result;
    async_result = absl::OkStatus();
  }
  if (pruner.joinable()) pruner.join();
}

void Checkpointer::State::StartPrune(int64_t step) {
  // The previous pruner was joined before this save began, or by the save thread itself.
  if (pruner.joinable()) pruner.join();
  pruner = std::thread([this, step] {
    absl::StatusOr<std::vector<int64_t>> removed = dir->Prune(step, options.keep_last);
    if (!removed.ok()) {
      Log("pruning old checkpoints failed (step " + std::to_string(step) +
          " is committed): " + std::string(removed.status().message()));
    }
  });
}

absl::Status Staging::Ensure(uint64_t bytes, DeviceMemory* pinned_by) {
  if (data_ != nullptr && bytes <= bytes_ && pinned_by == pinned_by_) return absl::OkStatus();
  Free();
  if (bytes == 0) return absl::OkStatus();
  if (pinned_by != nullptr) {
    BATON_ASSIGN_OR_RETURN(void* p, pinned_by->AllocatePinned(bytes));
    std::memset(p, 0, bytes);  // fault it in now, not during a save
    data_ = static_cast<char*>(p);
  } else {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) {
      return ErrnoToStatus(errno, "allocate " + std::to_string(bytes) + " bytes of staging");
    }
    data_ = static_cast<char*>(p);
  }
  bytes_ = bytes;
  pinned_by_ = pinned_by;
  return absl::OkStatus();
}

void Staging::Free() {
  if (data_ == nullptr) return;
  if (pinned_by_ != nullptr) {
    pinned_by_->FreePinned(data_);
  } else {
    ::munmap(data_, bytes_);
  }
  data_ = nullptr;
  bytes_ = 0;
}

// ---- Creation and registration ---------------------------------------------------------

Checkpointer::Checkpointer(std::unique_ptr<State> state) : state_(std::move(state)) {}

Checkpointer::~Checkpointer() {
  state_->JoinBackground();
  if (!state_->async_error.ok()) {
    state_->Log("async save failed and nobody called Wait(): " +
                std::string(state_->async_error.message()));
  }
}

absl::StatusOr<std::unique_ptr<Checkpointer>> Checkpointer::Create(Options options,
                                                                   Collective* collective) {
  if (options.dir.empty()) options.dir = CheckpointDirFromEnv();
  while (options.dir.size() > 1 && options.dir.back() == '/') options.dir.pop_back();
  BATON_RETURN_IF_ERROR(CheckOptions(options, collective));
  auto s = std::make_unique<State>();
  s->attempt = options.attempt;
  if (s->attempt < 0) {
    BATON_ASSIGN_OR_RETURN(s->attempt, AttemptFromEnv());
  }
  s->env = options.env != nullptr ? options.env : DefaultEnv();
  s->clock = options.clock != nullptr ? options.clock : RealClock::Get();
  s->collective = collective;
  s->dir = std::make_unique<CheckpointDir>(s->env, options.dir, options.skip_sync_for_testing);
  s->progress_path =
      options.progress_file.empty() ? ProgressFilePath(options.dir) : options.progress_file;
  s->io = IoOptions{.threads = options.io_threads,
                    .unit_bytes = options.io_unit_bytes,
                    .direct_io = options.direct_io,
                    .sync = options.skip_sync_for_testing != SyncPoint::kShardFile,
                    .queue_depth = options.io_queue_depth,
                    .in_place = options.io_in_place};
  s->options = std::move(options);
  if (s->is_root()) {
    BATON_RETURN_IF_ERROR(s->dir->EnsureRoot());
    // A relaunched attempt takes the directory over from any attempt still running
    // elsewhere (FORMAT.md "Fence"). A superseded one is not refused here, so that its
    // ranks stay in step: its saves fail and its watcher stops it.
    if (s->attempt > 0) {
      absl::StatusOr<Fence> fence = RaiseFence(s->env, *s->dir, s->attempt);
      if (IsSuperseded(fence.status())) {
        s->Log(std::string(fence.status().message()));
      } else if (!fence.ok()) {
        return fence.status();
      }
    }
  }
  return std::unique_ptr<Checkpointer>(new Checkpointer(std::move(s)));
}

namespace {

absl::Status CheckNewBuffer(const std::vector<RegisteredBuffer>& buffers, const std::string& name,
                            const void* data, size_t size) {
  if (name.empty() || name.size() > kMaxBufferNameBytes) {
    return absl::InvalidArgumentError("buffer name must have 1.." +
                                      std::to_string(kMaxBufferNameBytes) + " bytes");
  }
  if (data == nullptr && size > 0) {
    return absl::InvalidArgumentError("buffer '" + name + "' has " + std::to_string(size) +
                                      " bytes at a null address");
  }
  if (buffers.size() >= kMaxShardBuffers) {
    return absl::InvalidArgumentError("more than " + std::to_string(kMaxShardBuffers) +
                                      " buffers registered");
  }
  for (const RegisteredBuffer& b : buffers) {
    if (b.name == name) {
      return absl::AlreadyExistsError("buffer '" + name + "' is already registered");
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Checkpointer::RegisterHostBuffer(const std::string& name, void* data, size_t size) {
  BATON_RETURN_IF_ERROR(CheckNewBuffer(state_->buffers, name, data, size));
  state_->buffers.push_back({name, data, size, /*device=*/false});
  return absl::OkStatus();
}

absl::Status Checkpointer::RegisterDeviceBuffer(const std::string& name, void* device_data,
                                                size_t size) {
  if (state_->options.device_memory == nullptr) {
    return absl::FailedPreconditionError(
        "device buffer '" + name +
        "' needs Options::device_memory (NewCudaDeviceMemory from baton_checkpoint_cuda)");
  }
  BATON_RETURN_IF_ERROR(CheckNewBuffer(state_->buffers, name, device_data, size));
  state_->buffers.push_back({name, device_data, size, /*device=*/true});
  return absl::OkStatus();
}

absl::Status Checkpointer::SetMetadata(const std::string& key, const std::string& value) {
  if (key.empty() || key.size() > kMaxMetadataKeyBytes) {
    return absl::InvalidArgumentError("metadata key must have 1..1024 bytes, got " +
                                      std::to_string(key.size()));
  }
  if (value.size() > kMaxMetadataValueBytes) {
    return absl::InvalidArgumentError("metadata value for '" + key + "' has " +
                                      std::to_string(value.size()) + " bytes; at most 65536");
  }
  state_->metadata[key] = value;
  return absl::OkStatus();
}

const std::map<std::string, std::string>& Checkpointer::metadata() const {
  return state_->metadata;
}

int64_t Checkpointer::last_committed_step() const { return state_->committed_step; }
int Checkpointer::rank() const { return state_->collective->rank(); }
int Checkpointer::world_size() const { return state_->collective->size(); }

// ---- Saving --------------------------------------------------------------------------

namespace {

bool HasDeviceBuffers(const std::vector<RegisteredBuffer>& buffers) {
  for (const RegisteredBuffer& b : buffers) {
    if (b.device) return true;
  }
  return false;
}

absl::Status CheckStep(int64_t step) {
  if (step < 0) return absl::InvalidArgumentError("step must be >= 0, got " + std::to_string(step));
  return absl::OkStatus();
}

// Copies the header and every buffer into staging, host buffers by several threads,
// device buffers by asynchronous copies that are complete when this returns.
absl::Status FillStaging(Checkpointer::State& s, const ShardHeader& layout) {
  char* staging = s.staging.data();
  const std::string header = EncodeShardHeader(layout);
  std::memcpy(staging, header.data(), header.size());
  struct Piece {
    char* dst;
    const char* src;
    uint64_t n;
  };
  std::vector<Piece> pieces;
  for (size_t i = 0; i < s.buffers.size(); ++i) {
    const RegisteredBuffer& b = s.buffers[i];
    char* dst = staging + layout.buffers[i].offset;
    if (b.device) {
      absl::Status queued = s.options.device_memory->CopyToHostAsync(dst, b.data, b.size);
      if (!queued.ok()) {
        s.options.device_memory->Synchronize().IgnoreError();  // no copy outlives this call
        return queued;
      }
      continue;
    }
    for (uint64_t off = 0; off < b.size; off += kCopyPieceBytes) {
      pieces.push_back({dst + off, static_cast<const char*>(b.data) + off,
                        std::min(kCopyPieceBytes, b.size - off)});
    }
  }
  BATON_RETURN_IF_ERROR(ParallelFor(pieces.size(), SaveThreads(s.io), [&](size_t i) {
    std::memcpy(pieces[i].dst, pieces[i].src, pieces[i].n);
    return absl::OkStatus();
  }));
  if (HasDeviceBuffers(s.buffers)) return s.options.device_memory->Synchronize();
  return absl::OkStatus();
}

// Copies the state into staging and describes the save as one aligned segment.
absl::StatusOr<SaveRequest> StageSave(Checkpointer::State& s, int64_t step) {
  const ShardHeader layout = s.Layout(step);
  DeviceMemory* pinned_by = HasDeviceBuffers(s.buffers) ? s.options.device_memory : nullptr;
  BATON_RETURN_IF_ERROR(s.staging.Ensure(layout.file_bytes, pinned_by));
  BATON_RETURN_IF_ERROR(FillStaging(s, layout));
  SaveRequest request;
  request.step = step;
  request.file_bytes = layout.file_bytes;
  request.segments.push_back({0, s.staging.data(), layout.file_bytes});
  request.metadata = s.metadata;
  return request;
}

}  // namespace

absl::Status Checkpointer::Save(int64_t step) {
  BATON_RETURN_IF_ERROR(CheckStep(step));
  State& s = *state_;
  s.JoinBackground();
  if (HasDeviceBuffers(s.buffers)) {
    BATON_ASSIGN_OR_RETURN(SaveRequest request, StageSave(s, step));
    return RunSave(s, request);
  }
  // Host buffers are written straight from where they live: no staging copy.
  const ShardHeader layout = s.Layout(step);
  SaveRequest request;
  request.step = step;
  request.file_bytes = layout.file_bytes;
  request.header = EncodeShardHeader(layout);
  request.segments.push_back({0, request.header.data(), request.header.size()});
  for (size_t i = 0; i < s.buffers.size(); ++i) {
    request.segments.push_back({layout.buffers[i].offset, s.buffers[i].data, s.buffers[i].size});
  }
  request.metadata = s.metadata;
  return RunSave(s, request);
}

absl::Status Checkpointer::SaveAsync(int64_t step) {
  BATON_RETURN_IF_ERROR(CheckStep(step));
  State& s = *state_;
  if (!s.collective->SupportsBackgroundThread()) {
    return absl::FailedPreconditionError(
        "SaveAsync needs a collective usable from a background thread (MPI: initialize with "
        "MPI_Init_thread(MPI_THREAD_MULTIPLE)); use Save instead");
  }
  s.JoinBackground();
  BATON_ASSIGN_OR_RETURN(SaveRequest request, StageSave(s, step));
  s.async_thread = std::thread([&s, request = std::move(request)] {
    s.async_result = RunSave(s, request);
    if (!s.async_result.ok()) {
      s.Log("async save of step " + std::to_string(request.step) +
            " failed: " + std::string(s.async_result.message()));
    }
  });
  return absl::OkStatus();
}

absl::Status Checkpointer::Wait() {
  state_->JoinBackground();
  return std::exchange(state_->async_error, absl::OkStatus());
}

absl::Status Checkpointer::ReserveStaging() {
  State& s = *state_;
  s.JoinBackground();
  DeviceMemory* pinned_by = HasDeviceBuffers(s.buffers) ? s.options.device_memory : nullptr;
  return s.staging.Ensure(s.Layout(0).file_bytes, pinned_by);
}

}  // namespace baton::checkpoint
