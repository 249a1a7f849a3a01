#include "checkpoint/shard_io.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "checkpoint/hash.h"
#include "checkpoint/parallel.h"
#include "checkpoint/shard.h"
#include "checkpoint/stream_copy.h"
#include "common/status.h"

namespace baton::checkpoint {
namespace {

alignas(kDirectIoAlignment) const char kZeros[kChecksumChunkBytes] = {};

bool Aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kDirectIoAlignment == 0; }

// A run of the file image inside one unit; data == nullptr marks bytes no region covers.
// aligned_region: the region it is part of starts on a page boundary.
template <typename Ptr>
struct Piece {
  uint64_t offset;
  Ptr data;
  uint64_t size;
  bool aligned_region = false;
};

template <typename Ptr, typename Region>
std::vector<Piece<Ptr>> PiecesOf(const std::vector<Region>& regions, uint64_t start, uint64_t end) {
  std::vector<Piece<Ptr>> pieces;
  auto it = std::upper_bound(regions.begin(), regions.end(), start,
                             [](uint64_t pos, const Region& r) { return pos < r.offset + r.size; });
  uint64_t pos = start;
  for (; pos < end && it != regions.end(); ++it) {
    if (it->size == 0) continue;
    if (it->offset > pos) {
      const uint64_t gap_end = std::min(it->offset, end);
      pieces.push_back({pos, nullptr, gap_end - pos});
      pos = gap_end;
      if (pos == end) break;
    }
    const uint64_t piece_end = std::min(it->offset + it->size, end);
    pieces.push_back(
        {pos, static_cast<Ptr>(it->data) + (pos - it->offset), piece_end - pos, Aligned(it->data)});
    pos = piece_end;
  }
  if (pos < end) pieces.push_back({pos, nullptr, end - pos});
  return pieces;
}

// Turns the bytes of one unit, fed in order, into per-chunk digests.
class ChunkHasher {
 public:
  ChunkHasher(uint64_t* digests, uint64_t unit_start)
      : out_(digests + unit_start / kChecksumChunkBytes) {}
  void Update(const char* data, uint64_t n) {
    while (n > 0) {
      const uint64_t take = std::min(n, kChecksumChunkBytes - filled_);
      stream_.Update(data ? data : kZeros, take);
      if (data) data += take;
      n -= take;
      filled_ += take;
      if (filled_ == kChecksumChunkBytes) Finish();
    }
  }
  void Finish() {
    if (filled_ == 0) return;
    *out_++ = stream_.Digest();
    stream_.Reset();
    filled_ = 0;
  }

 private:
  Xxh3Stream stream_;
  uint64_t* out_;
  uint64_t filled_ = 0;
};

// Memory for O_DIRECT bounce buffers, on transparent huge pages where the kernel allows
// (madvise mode included). A block-layer request holds at most max_segments runs of
// physically contiguous memory (254 on virtio), so a direct read into 4 KiB pages went
// out in requests of at most ~1 MiB and restores ran at half the disk's speed; 2 MiB
// pages make an 8 MiB unit a few requests. nullptr when out of memory.
char* AllocateIoBuffer(uint64_t bytes) {
  constexpr uint64_t kHuge = 2 << 20;
  if (bytes < kHuge) return static_cast<char*>(std::aligned_alloc(kDirectIoAlignment, bytes));
  const uint64_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
  void* p = std::aligned_alloc(kHuge, rounded);
  if (p != nullptr) ::madvise(p, rounded, MADV_HUGEPAGE);  // advice: ignored where THP is off
  return static_cast<char*>(p);
}

// Aligned scratch buffers for O_DIRECT writes, one per busy thread, reused across units.
class BouncePool {
 public:
  explicit BouncePool(uint64_t bytes) : bytes_(bytes) {}
  ~BouncePool() {
    for (char* p : free_) std::free(p);
  }
  char* Acquire() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) return AllocateIoBuffer(bytes_);
    char* p = free_.back();
    free_.pop_back();
    return p;
  }
  void Release(char* p) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(p);
  }

 private:
  const uint64_t bytes_;
  std::mutex mu_;
  std::vector<char*> free_;
};

absl::Status WriteZeros(WritableFile* file, uint64_t offset, uint64_t n) {
  while (n > 0) {
    const uint64_t take = std::min<uint64_t>(n, sizeof(kZeros));
    BATON_RETURN_IF_ERROR(file->WriteAt(offset, kZeros, take));
    offset += take;
    n -= take;
  }
  return absl::OkStatus();
}

// An O_DIRECT call moves 4 KiB-aligned runs between 4 KiB-aligned file offsets and
// memory. A unit's plan keeps the aligned middle of each large piece in place and takes
// the rest (the header, padding, unaligned edges of buffers, small buffers, memory whose
// phase does not match its offset) through a unit-sized bounce buffer, each byte at its
// place in the unit.
constexpr uint64_t kMinInPlaceBytes = kChecksumChunkBytes;
constexpr int kMaxInPlacePerUnit = 8;
constexpr int kMaxCallsPerUnit = 2 * kMaxInPlacePerUnit + 1;  // bounce runs between them
static_assert(kShardAlignment == kDirectIoAlignment, "units plan O_DIRECT runs by shard pages");

template <typename Ptr>
struct UnitPlan {
  // One I/O call; data nullptr: the bounce buffer at the run's place in the unit.
  struct Run {
    uint64_t offset;
    uint64_t size;
    Ptr data;
  };
  // The unit's bytes in file order: data is their buffer (nullptr: bytes no buffer
  // covers), in_place whether the I/O moves them there directly (else via the bounce).
  struct Span {
    uint64_t offset;
    uint64_t size;
    Ptr data;
    bool in_place;
  };
  std::vector<Run> runs;
  std::vector<Span> spans;
  bool bounce = false;  // whether any run uses the bounce buffer
};

// Plans the I/O of the unit [start, end) (both aligned) over `pieces`; any_phase: any
// piece may go in place, not only those of page-aligned regions (IoOptions::in_place).
template <typename Ptr>
void PlanUnit(uint64_t start, uint64_t end, const std::vector<Piece<Ptr>>& pieces, bool any_phase,
              UnitPlan<Ptr>* plan) {
  plan->runs.clear();
  plan->spans.clear();
  plan->bounce = false;
  uint64_t run = start;  // the bounce run not yet planned starts here
  auto bounce_run = [&](uint64_t to) {
    if (to > run) plan->runs.push_back({run, to - run, nullptr}), plan->bounce = true;
  };
  auto bounced = [&](uint64_t offset, uint64_t size, Ptr data) {
    if (size > 0) plan->spans.push_back({offset, size, data, false});
  };
  int in_place = 0;
  for (const auto& p : pieces) {
    const uint64_t a = ShardAlignUp(p.offset), b = ShardAlignDown(p.offset + p.size);
    if (p.data == nullptr || (!any_phase && !p.aligned_region) || in_place == kMaxInPlacePerUnit ||
        b <= a || b - a < std::min(kMinInPlaceBytes, end - start) ||
        !Aligned(p.data + (a - p.offset))) {
      bounced(p.offset, p.size, p.data);
      continue;
    }
    ++in_place;
    bounced(p.offset, a - p.offset, p.data);
    bounce_run(a);
    plan->runs.push_back({a, b - a, p.data + (a - p.offset)});
    plan->spans.push_back({a, b - a, p.data + (a - p.offset), true});
    bounced(b, p.offset + p.size - b, p.data + (b - p.offset));
    run = b;
  }
  bounce_run(end);
}

struct WriteJob {
  WritableFile* file;
  uint64_t file_bytes;
  uint64_t unit_bytes;
  const std::vector<WriteSegment>* segments;
  uint64_t* digests;
  BouncePool* bounce;
  bool in_place;
};

// Hashes a unit's spans in file order: in-place ones where they lie, the others a block at
// a time in the bounce buffer, moving each block between it and its buffer while the block
// is still in the cache: a save (const data) gathers it in first, a restore scatters it
// out after.
template <typename Ptr>
void HashUnit(const UnitPlan<Ptr>& plan, char* bounce, uint64_t start, ChunkHasher& hasher) {
  constexpr bool kGather = std::is_const_v<std::remove_pointer_t<Ptr>>;
  constexpr uint64_t kBlock = 256 << 10;
  for (const auto& sp : plan.spans) {
    if (sp.in_place) {
      hasher.Update(sp.data, sp.size);
      continue;
    }
    for (uint64_t done = 0; done < sp.size;) {
      const uint64_t n = std::min(kBlock, sp.size - done);
      char* block = bounce + (sp.offset - start) + done;
      if constexpr (kGather) {
        sp.data ? std::memcpy(block, sp.data + done, n) : std::memset(block, 0, n);
      }
      hasher.Update(block, n);
      if constexpr (!kGather) {
        if (sp.data) CopyStreaming(sp.data + done, block, n);
      }
      done += n;
    }
  }
  hasher.Finish();
}

absl::Status WriteUnit(const WriteJob& job, uint64_t unit) {
  const uint64_t start = unit * job.unit_bytes;
  const uint64_t end = std::min(start + job.unit_bytes, job.file_bytes);
  auto pieces = PiecesOf<const char*>(*job.segments, start, end);
  ChunkHasher hasher(job.digests, start);
  if (!job.file->direct()) {
    for (const auto& p : pieces) {
      hasher.Update(p.data, p.size);
      BATON_RETURN_IF_ERROR(p.data ? job.file->WriteAt(p.offset, p.data, p.size)
                                   : WriteZeros(job.file, p.offset, p.size));
    }
    hasher.Finish();
    return absl::OkStatus();
  }
  UnitPlan<const char*> plan;
  PlanUnit(start, end, pieces, job.in_place, &plan);
  char* buf = nullptr;
  if (plan.bounce) {
    buf = job.bounce->Acquire();
    if (buf == nullptr) return absl::ResourceExhaustedError("out of memory for an I/O buffer");
  }
  HashUnit(plan, buf, start, hasher);
  absl::Status status;
  for (const auto& r : plan.runs) {
    status = job.file->WriteAt(r.offset, r.data ? r.data : buf + (r.offset - start), r.size);
    if (!status.ok()) break;
  }
  if (buf != nullptr) job.bounce->Release(buf);
  return status;
}

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

struct ReadJob {
  ReadableFile* file;
  uint64_t file_bytes;
  uint64_t unit_bytes;
  const std::vector<ReadTarget>* targets;
  uint64_t* digests;
  bool in_place;
  std::atomic<bool> stop{false};  // a lane failed: the others stop submitting
};

// A unit read from a buffered file: straight into the buffers it covers (the kernel copies
// out of the page cache), the bytes no buffer covers into scratch, all hashed.
absl::Status ReadBuffered(ReadJob& job, uint64_t unit) {
  const uint64_t start = unit * job.unit_bytes;
  const uint64_t end = std::min(start + job.unit_bytes, job.file_bytes);
  ChunkHasher hasher(job.digests, start);
  std::string scratch;
  for (const auto& p : PiecesOf<char*>(*job.targets, start, end)) {
    char* dst = p.data;
    if (dst == nullptr) {
      scratch.resize(p.size);
      dst = scratch.data();
    }
    BATON_RETURN_IF_ERROR(job.file->ReadAt(p.offset, dst, p.size));
    hasher.Update(dst, p.size);
  }
  hasher.Finish();
  return absl::OkStatus();
}

// One lane of an O_DIRECT read: units lane, lane + lanes, … with `depth` of them in flight,
// each as the few reads its plan gives. Each unit is hashed (and its bounced bytes copied
// out) once all its reads arrived. The lane has one slot more than `depth`, so the next
// unit's reads go out before that hash starts: the disk keeps `depth` reads of the lane
// while it hashes, not depth - 1.
absl::Status ReadLane(ReadJob& job, size_t lane, size_t lanes, int depth) {
  struct Slot {
    uint64_t start = 0;  // the unit in flight, as a file offset
    int pending = 0;     // its reads not yet arrived
    UnitPlan<char*> plan;
    std::unique_ptr<char, decltype(&std::free)> bounce{nullptr, &std::free};
  };
  const uint64_t units = CeilDiv(job.file_bytes, job.unit_bytes);
  std::vector<Slot> slots(static_cast<size_t>(depth) + 1);
  size_t spare = slots.size() - 1;  // the slot neither in flight nor being hashed
  // After the slots: destroyed first, it waits for every read in flight into them.
  std::unique_ptr<ReadQueue> queue = job.file->NewReadQueue(depth * kMaxCallsPerUnit);
  uint64_t next = lane;
  int in_flight = 0;
  auto submit = [&](size_t k) -> absl::Status {
    Slot& slot = slots[k];
    slot.start = next * job.unit_bytes;
    const uint64_t end = std::min(slot.start + job.unit_bytes, job.file_bytes);
    const auto pieces = PiecesOf<char*>(*job.targets, slot.start, end);
    PlanUnit(slot.start, end, pieces, job.in_place, &slot.plan);
    if (slot.plan.bounce && !slot.bounce) {
      slot.bounce.reset(AllocateIoBuffer(job.unit_bytes));
      if (!slot.bounce) return absl::ResourceExhaustedError("out of memory for an I/O buffer");
    }
    next += lanes;
    for (size_t i = 0; i < slot.plan.runs.size(); ++i) {
      const auto& r = slot.plan.runs[i];
      char* dst = r.data ? r.data : slot.bounce.get() + (r.offset - slot.start);
      BATON_RETURN_IF_ERROR(queue->Submit(r.offset, dst, r.size, (i << 8) | k));
      ++slot.pending;
      ++in_flight;
    }
    return absl::OkStatus();
  };
  absl::Status status;
  for (size_t k = 0; k + 1 < slots.size() && next < units && status.ok(); ++k) status = submit(k);
  while (in_flight > 0 && status.ok()) {
    ReadQueue::Done done = queue->Next();
    --in_flight;
    status = done.status;
    if (!status.ok() || job.stop.load(std::memory_order_relaxed)) break;
    const size_t k = done.tag & 0xff;
    Slot& slot = slots[k];
    if (--slot.pending > 0) continue;
    if (next < units) {
      status = submit(spare);
      if (!status.ok()) break;
    }
    ChunkHasher hasher(job.digests, slot.start);
    HashUnit(slot.plan, slot.bounce.get(), slot.start, hasher);
    spare = k;
  }
  if (!status.ok()) job.stop.store(true);
  return status;
}

uint64_t CombineDigests(const std::vector<uint64_t>& digests) {
  return Xxh3(digests.data(), digests.size() * sizeof(uint64_t));
}

absl::Status CheckIoOptions(const IoOptions& o) {
  if (o.unit_bytes == 0 || o.unit_bytes % kChecksumChunkBytes != 0) {
    return absl::InvalidArgumentError("I/O unit of " + std::to_string(o.unit_bytes) +
                                      " bytes is not a positive multiple of " +
                                      std::to_string(kChecksumChunkBytes));
  }
  if (o.threads < 1 || o.queue_depth < 1) {
    return absl::InvalidArgumentError("I/O needs at least one thread and one read in flight");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ShardInfo> WriteShardFile(Env* env, const std::string& path, uint64_t file_bytes,
                                         const std::vector<WriteSegment>& segments,
                                         const IoOptions& options) {
  BATON_RETURN_IF_ERROR(CheckIoOptions(options));
  if (file_bytes % kShardAlignment != 0) {
    return absl::InvalidArgumentError("shard size " + std::to_string(file_bytes) +
                                      " is not a multiple of 4 KiB");
  }
  WritableFileOptions file_options{options.direct_io, file_bytes};
  BATON_ASSIGN_OR_RETURN(auto file, env->NewWritableFile(path, file_options));
  std::vector<uint64_t> digests(CeilDiv(file_bytes, kChecksumChunkBytes));
  BouncePool bounce(options.unit_bytes);
  WriteJob job{file.get(),     file_bytes, options.unit_bytes, &segments,
               digests.data(), &bounce,    options.in_place};
  BATON_RETURN_IF_ERROR(ParallelFor(CeilDiv(file_bytes, options.unit_bytes), SaveThreads(options),
                                    [&](size_t unit) { return WriteUnit(job, unit); }));
  if (options.sync) BATON_RETURN_IF_ERROR(file->Sync());
  BATON_RETURN_IF_ERROR(file->Close());
  return ShardInfo{file_bytes, CombineDigests(digests)};
}

absl::Status ReadShardFile(Env* env, const std::string& path, const ShardInfo& expected,
                           const std::vector<ReadTarget>& targets, const IoOptions& options) {
  BATON_RETURN_IF_ERROR(CheckIoOptions(options));
  BATON_ASSIGN_OR_RETURN(auto file, env->NewReadableFile(path, {options.direct_io}));
  BATON_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  if (size != expected.size) {
    return absl::DataLossError(path + " has " + std::to_string(size) +
                               " bytes but the manifest records " + std::to_string(expected.size) +
                               " (truncated or replaced)");
  }
  if (file->direct() && size % kDirectIoAlignment != 0) {
    return absl::DataLossError(path + " has " + std::to_string(size) +
                               " bytes, not a multiple of 4 KiB (damaged)");
  }
  std::vector<uint64_t> digests(CeilDiv(size, kChecksumChunkBytes));
  ReadJob job{file.get(), size, options.unit_bytes, &targets, digests.data(), options.in_place};
  const size_t units = CeilDiv(size, options.unit_bytes);
  if (file->direct()) {
    const size_t lanes = std::min<size_t>(units, static_cast<size_t>(options.threads));
    BATON_RETURN_IF_ERROR(ParallelFor(lanes, options.threads, [&](size_t lane) {
      return ReadLane(job, lane, lanes, options.queue_depth);
    }));
  } else {
    BATON_RETURN_IF_ERROR(
        ParallelFor(units, options.threads, [&](size_t unit) { return ReadBuffered(job, unit); }));
  }
  const uint64_t actual = CombineDigests(digests);
  if (actual != expected.xxh3) {
    return absl::DataLossError(path + " checksum mismatch: the manifest records " +
                               HexU64(expected.xxh3) + ", the data hashes to " + HexU64(actual) +
                               " (damaged)");
  }
  return absl::OkStatus();
}

uint64_t ShardChecksum(const void* data, uint64_t size) {
  std::vector<uint64_t> digests(CeilDiv(size, kChecksumChunkBytes));
  const char* p = static_cast<const char*>(data);
  for (size_t i = 0; i < digests.size(); ++i) {
    const uint64_t off = i * kChecksumChunkBytes;
    digests[i] = Xxh3(p + off, std::min(kChecksumChunkBytes, size - off));
  }
  return CombineDigests(digests);
}

}  // namespace baton::checkpoint
