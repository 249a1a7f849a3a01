// The restore read path at its edges (issue 17): O_DIRECT reads (several in flight per
// thread, Linux AIO on the real filesystem) straight into a buffer where its memory has the
// phase its file offset has (page-aligned memory, or any with io_in_place), through a
// bounce buffer otherwise (the header, padding, the unaligned edges of buffers, small
// buffers, other memory), buffered reads where the filesystem has no O_DIRECT. Every shape
// round-trips exactly, on the fault-injecting Env (which refuses unaligned direct reads as the
// kernel does) and on the real filesystem.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/checkpoint/fault_env.h"
#include "tests/checkpoint/test_state.h"
#include "tests/checkpoint/test_util.h"

namespace baton::checkpoint {
namespace {

using testing::FaultInjectionEnv;
using testing::ScratchDir;

// Memory we control the alignment of: `size` bytes at `misalign` past a page boundary.
class Region {
 public:
  Region(size_t size, size_t misalign)
      : base_(static_cast<char*>(
            std::aligned_alloc(kDirectIoAlignment, RoundUp(size + misalign + 1)))),
        data_(base_ + misalign),
        size_(size) {}
  ~Region() { std::free(base_); }
  char* data() const { return data_; }
  size_t size() const { return size_; }
  void Fill(uint64_t seed) { testing::FillPattern(data_, size_, seed); }
  bool Matches(uint64_t seed) const { return testing::MatchesPattern(data_, size_, seed); }
  void Clear() { std::memset(data_, 0, size_); }

 private:
  static size_t RoundUp(size_t n) {
    return (n + kDirectIoAlignment - 1) / kDirectIoAlignment * kDirectIoAlignment;
  }
  char* const base_;
  char* const data_;
  const size_t size_;
};

// A shard file that forwards every read to `base`; the watchers below override what they see.
// NewReadQueue is ReadableFile's own (each read through ReadAt) unless a watcher overrides it.
class ForwardingFile : public ReadableFile {
 public:
  explicit ForwardingFile(std::unique_ptr<ReadableFile> base) : base_(std::move(base)) {}
  absl::Status ReadAt(uint64_t offset, void* data, size_t n) override {
    return base_->ReadAt(offset, data, n);
  }
  absl::StatusOr<uint64_t> Size() override { return base_->Size(); }
  bool direct() const override { return base_->direct(); }

 protected:
  ReadableFile& base() { return *base_; }

 private:
  std::unique_ptr<ReadableFile> base_;
};

// Counts the direct reads whose destination lies inside a watched range (reads that went
// straight into a registered buffer, not through a bounce buffer).
class WatchingEnv : public EnvWrapper {
 public:
  explicit WatchingEnv(Env* target) : EnvWrapper(target) {}
  void Watch(const char* begin, size_t n) { begin_ = begin, end_ = begin + n; }
  int in_place_reads() const { return in_place_; }
  int direct_reads() const { return direct_; }

  absl::StatusOr<std::unique_ptr<ReadableFile>> NewReadableFile(
      const std::string& path, const ReadableFileOptions& options) override {
    auto file = EnvWrapper::NewReadableFile(path, options);
    if (!file.ok()) return file;
    return std::unique_ptr<ReadableFile>(new File(this, std::move(*file)));
  }

 private:
  class File : public ForwardingFile {
   public:
    File(WatchingEnv* env, std::unique_ptr<ReadableFile> base)
        : ForwardingFile(std::move(base)), env_(env) {}
    absl::Status ReadAt(uint64_t offset, void* data, size_t n) override {
      if (direct()) {
        std::lock_guard<std::mutex> lock(env_->mu_);
        ++env_->direct_;
        const char* p = static_cast<const char*>(data);
        if (p >= env_->begin_ && p + n <= env_->end_) ++env_->in_place_;
      }
      return ForwardingFile::ReadAt(offset, data, n);
    }

   private:
    WatchingEnv* const env_;
  };

  std::mutex mu_;
  const char* begin_ = nullptr;
  const char* end_ = nullptr;
  int in_place_ = 0, direct_ = 0;
};

// `file` wrapped in the watcher F(env, file) when it is a shard's; other files as they are.
template <class F, class Base, class E>
absl::StatusOr<std::unique_ptr<Base>> WatchShard(E* env, const std::string& path,
                                                 absl::StatusOr<std::unique_ptr<Base>> file) {
  if (!file.ok() || !path.ends_with(".shard")) return file;
  return std::unique_ptr<Base>(new F(env, std::move(*file)));
}

// Counts the shard writes under way at once. Each write waits (up to 2 s) until `want`
// are under way, or have been once, so every writer the save runs is seen together.
class ConcurrentWritesEnv : public EnvWrapper {
 public:
  ConcurrentWritesEnv(Env* target, int want) : EnvWrapper(target), want_(want) {}
  int most_at_once() const { return most_; }

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path, const WritableFileOptions& options) override {
    return WatchShard<File>(this, path, EnvWrapper::NewWritableFile(path, options));
  }

 private:
  class File : public WritableFile {
   public:
    File(ConcurrentWritesEnv* env, std::unique_ptr<WritableFile> base)
        : env_(env), base_(std::move(base)) {}
    absl::Status WriteAt(uint64_t offset, const void* data, size_t n) override {
      {
        std::unique_lock<std::mutex> lock(env_->mu_);
        env_->most_ = std::max(env_->most_, ++env_->inside_);
        env_->cv_.notify_all();
        env_->cv_.wait_for(lock, std::chrono::seconds(2),
                           [&] { return env_->most_ >= env_->want_; });
      }
      absl::Status status = base_->WriteAt(offset, data, n);
      std::lock_guard<std::mutex> lock(env_->mu_);
      --env_->inside_;
      return status;
    }
    absl::Status Sync() override { return base_->Sync(); }
    absl::Status Close() override { return base_->Close(); }
    bool direct() const override { return base_->direct(); }

   private:
    ConcurrentWritesEnv* const env_;
    std::unique_ptr<WritableFile> base_;
  };

  const int want_;
  std::mutex mu_;
  std::condition_variable cv_;
  int inside_ = 0, most_ = 0;
};

struct Shape {
  std::string name;
  std::vector<size_t> sizes;
  size_t misalign = 0;  // of every buffer's memory
};

std::vector<Shape> Shapes() {
  std::vector<size_t> tiny;
  for (size_t i = 0; i < 300; ++i) tiny.push_back(1 + i % 40);
  return {
      {"one byte (a shard smaller than one I/O unit)", {1}},
      {"odd sizes", {1, 4095, 4096, 4097, 65535, 65537, 3 * 65536 + 5}},
      {"odd sizes, unaligned memory", {1, 4095, 4097, 65537, 3 * 65536 + 5}, 1},
      {"300 tiny buffers", tiny},
      {"one huge aligned buffer", {(4u << 20) + 123}},
      {"one huge buffer off by 8 bytes", {(4u << 20) + 123}, 8},
      {"large buffers off by 16 bytes, as malloc gives", {(1u << 20) + 5, 3u << 20, 70000}, 16},
      {"empty and huge together", {0, (2u << 20) + 1, 0, 17}},
  };
}

void RoundTrip(Env* env, const std::string& dir, const Shape& shape, uint64_t unit, int depth,
               bool in_place) {
  SCOPED_TRACE(shape.name + ", unit " + std::to_string(unit) + ", depth " + std::to_string(depth) +
               (in_place ? ", in place" : ""));
  std::vector<std::unique_ptr<Region>> regions;
  for (size_t n : shape.sizes) regions.push_back(std::make_unique<Region>(n, shape.misalign));
  LocalCollective local;
  auto make = [&](int64_t attempt) {
    Options o;
    o.dir = dir;
    o.env = env;
    o.attempt = attempt;
    o.io_threads = 3;
    o.io_unit_bytes = unit;
    o.io_queue_depth = depth;
    o.direct_io = true;
    o.io_in_place = in_place;
    auto ckpt = Checkpointer::Create(std::move(o), &local);
    EXPECT_TRUE(ckpt.ok()) << ckpt.status();
    for (size_t i = 0; i < regions.size(); ++i) {
      EXPECT_TRUE(
          (*ckpt)
              ->RegisterHostBuffer("b" + std::to_string(i), regions[i]->data(), regions[i]->size())
              .ok());
    }
    return std::move(*ckpt);
  };
  for (size_t i = 0; i < regions.size(); ++i) regions[i]->Fill(100 + i);
  ASSERT_TRUE(make(0)->Save(5).ok());
  for (auto& r : regions) r->Clear();
  auto restored = make(0)->RestoreLatest();
  ASSERT_TRUE(restored.ok()) << restored.status();
  ASSERT_TRUE(restored->has_value());
  for (size_t i = 0; i < regions.size(); ++i) {
    EXPECT_TRUE(regions[i]->Matches(100 + i)) << "buffer " << i << " of " << regions[i]->size();
  }
}

TEST(ReadPath, EveryShapeRoundTripsOnTheFaultEnvWhichRefusesUnalignedDirectReads) {
  for (const Shape& shape : Shapes()) {
    for (uint64_t unit : {uint64_t{64} << 10, uint64_t{1} << 20}) {
      for (bool in_place : {false, true}) {
        FaultInjectionEnv env;
        ASSERT_TRUE(env.CreateDir("/ckpt").ok());
        RoundTrip(&env, "/ckpt", shape, unit, /*depth=*/2, in_place);
      }
    }
  }
}

// With one read in flight per thread, the default two, and more reads in flight than
// the shard has units.
TEST(ReadPath, EveryShapeRoundTripsOnTheRealFilesystem) {
  for (const Shape& shape : Shapes()) {
    for (int depth : {1, 2, 16}) {
      ScratchDir dir;
      RoundTrip(DefaultEnv(), dir.Sub("ckpt"), shape, 64 << 10, depth, /*in_place=*/depth == 2);
    }
  }
}

// Which path each unit takes. A buffer's bytes are stored at its memory's phase (its
// address modulo 4 KiB). Page-aligned memory is read in place; with io_in_place, so is
// memory of any phase the file has. Memory of another phase than the memory saved from
// goes through the bounce buffer. A corrupted shard is still refused.
TEST(ReadPath, UnitsAreReadInPlaceWhereTheMemorysPhaseMatchesTheFile) {
  struct Case {
    size_t saved_misalign, restored_misalign;
    bool io_in_place;
    bool in_place;  // expected
  };
  for (const Case& c : {Case{0, 0, false, true}, Case{0, 0, true, true}, Case{8, 8, false, false},
                        Case{8, 8, true, true}, Case{4000, 4000, true, true},
                        Case{8, 24, true, false}, Case{0, 8, true, false}}) {
    SCOPED_TRACE("saved at " + std::to_string(c.saved_misalign) + ", restored at " +
                 std::to_string(c.restored_misalign) + (c.io_in_place ? ", io_in_place" : ""));
    FaultInjectionEnv fault;
    ASSERT_TRUE(fault.CreateDir("/ckpt").ok());
    WatchingEnv env(&fault);
    LocalCollective local;
    auto make = [&](Region& big) {
      Options o;
      o.dir = "/ckpt";
      o.env = &env;
      o.io_unit_bytes = 256 << 10;
      o.io_in_place = c.io_in_place;
      auto ckpt = Checkpointer::Create(std::move(o), &local);
      EXPECT_TRUE(ckpt.ok());
      EXPECT_TRUE((*ckpt)->RegisterHostBuffer("big", big.data(), big.size()).ok());
      return std::move(*ckpt);
    };
    {
      Region saved(4 << 20, c.saved_misalign);
      saved.Fill(9);
      ASSERT_TRUE(make(saved)->Save(1).ok());
    }
    // Stored at the memory's phase (format 2) only with io_in_place; else format 1.
    auto shard = ReadSmallFile(&fault, "/ckpt/step-1/rank-0.shard", 8 << 20);
    ASSERT_TRUE(shard.ok()) << shard.status();
    EXPECT_EQ((*shard)[8], c.io_in_place && c.saved_misalign != 0 ? 2 : 1) << "shard format";
    Region big(4 << 20, c.restored_misalign);
    env.Watch(big.data(), big.size());
    auto ckpt = make(big);
    auto restored = ckpt->RestoreLatest();
    ASSERT_TRUE(restored.ok()) << restored.status();
    EXPECT_TRUE(big.Matches(9));
    EXPECT_GT(env.direct_reads(), 0);
    if (c.in_place) {
      // 4 MiB in units of 256 KiB: at least the 15 units wholly inside the buffer land in
      // place (with the aligned part of the first); the header and the buffer's unaligned
      // edges go through the bounce buffer.
      EXPECT_GE(env.in_place_reads(), 15);
    } else {
      EXPECT_EQ(env.in_place_reads(), 0);
    }
    // A flipped byte in the middle of the buffer's data fails the restore.
    ASSERT_TRUE(fault.OverwriteByte("/ckpt/step-1/rank-0.shard", 1 << 20, 'x').ok());
    big.Clear();
    auto damaged = ckpt->RestoreLatest();
    EXPECT_FALSE(damaged.ok() && damaged->has_value()) << "a damaged shard restored";
  }
}

// The real filesystem's queue (Linux AIO on O_DIRECT): reads in flight together land where
// each asked, whatever order they finish in, and one the kernel ends short (the file was
// truncated after it was checked) is DataLoss naming the truncation, never partial data.
TEST(ReadPath, AioReadsLandWhereAskedAndAShortOneIsDataLoss) {
  ScratchDir dir;
  const std::string path = dir.Sub("file");
  constexpr size_t kPiece = 256 << 10;
  Region image(4 * kPiece, 0);
  image.Fill(3);
  {
    auto out = DefaultEnv()->NewWritableFile(path, {});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_TRUE((*out)->WriteAt(0, image.data(), image.size()).ok());
    ASSERT_TRUE((*out)->Close().ok());
  }
  auto file = DefaultEnv()->NewReadableFile(path, {.direct_io = true});
  ASSERT_TRUE(file.ok()) << file.status();
  if (!(*file)->direct()) GTEST_SKIP() << "no O_DIRECT on " << dir.path() << " (tmpfs?)";
  auto queue = (*file)->NewReadQueue(4);
  std::vector<std::unique_ptr<Region>> to;
  for (int i = 0; i < 4; ++i) to.push_back(std::make_unique<Region>(kPiece, 0));
  for (uint64_t i = 0; i < 4; ++i) {  // piece 3 - i into buffer i, tagged 10 + i
    ASSERT_TRUE(queue->Submit((3 - i) * kPiece, to[i]->data(), kPiece, 10 + i).ok());
  }
  std::set<uint64_t> tags;
  for (int i = 0; i < 4; ++i) {
    ReadQueue::Done done = queue->Next();
    ASSERT_TRUE(done.status.ok()) << done.status;
    tags.insert(done.tag);
  }
  EXPECT_EQ(tags, (std::set<uint64_t>{10, 11, 12, 13}));
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(std::memcmp(to[i]->data(), image.data() + (3 - i) * kPiece, kPiece), 0) << i;
  }

  ASSERT_EQ(::truncate(path.c_str(), 2 * kPiece + 4096), 0);
  ASSERT_TRUE(queue->Submit(2 * kPiece, to[0]->data(), kPiece, 7).ok());
  ReadQueue::Done short_read = queue->Next();
  EXPECT_EQ(short_read.tag, 7u);
  EXPECT_EQ(short_read.status.code(), absl::StatusCode::kDataLoss) << short_read.status;
  EXPECT_THAT(std::string(short_read.status.message()), ::testing::HasSubstr("truncated"));
}

// Watches a restore's read queues: at every Submit, how many bytes of the watched buffer
// already hold what they will hold after the restore, against that count when the last
// Next() returned. Equal counts mean the lane copied nothing out between a read arriving
// and the next read going out.
class SubmitOrderEnv : public EnvWrapper {
 public:
  SubmitOrderEnv(Env* target, const char* data, const std::vector<char>& expected)
      : EnvWrapper(target), data_(data), expected_(expected) {}
  int submits() const { return submits_; }
  int submits_after_a_copy() const { return after_copy_; }

  absl::StatusOr<std::unique_ptr<ReadableFile>> NewReadableFile(
      const std::string& path, const ReadableFileOptions& options) override {
    return WatchShard<File>(this, path, EnvWrapper::NewReadableFile(path, options));
  }

 private:
  size_t Landed() const {
    size_t n = 0;
    for (size_t i = 0; i < expected_.size(); ++i) n += data_[i] == expected_[i];
    return n;
  }

  class Queue : public ReadQueue {
   public:
    Queue(SubmitOrderEnv* env, std::unique_ptr<ReadQueue> base)
        : env_(env), base_(std::move(base)) {}
    absl::Status Submit(uint64_t offset, void* data, size_t n, uint64_t tag) override {
      std::lock_guard<std::mutex> lock(env_->mu_);
      ++env_->submits_;
      if (env_->landed_at_next_ >= 0 &&
          static_cast<std::ptrdiff_t>(env_->Landed()) != env_->landed_at_next_) {
        ++env_->after_copy_;
      }
      return base_->Submit(offset, data, n, tag);
    }
    Done Next() override {
      Done done = base_->Next();
      std::lock_guard<std::mutex> lock(env_->mu_);
      env_->landed_at_next_ = static_cast<std::ptrdiff_t>(env_->Landed());
      return done;
    }

   private:
    SubmitOrderEnv* const env_;
    std::unique_ptr<ReadQueue> base_;
  };

  class File : public ForwardingFile {
   public:
    File(SubmitOrderEnv* env, std::unique_ptr<ReadableFile> base)
        : ForwardingFile(std::move(base)), env_(env) {}
    std::unique_ptr<ReadQueue> NewReadQueue(int depth) override {
      return std::make_unique<Queue>(env_, base().NewReadQueue(depth));
    }

   private:
    SubmitOrderEnv* const env_;
  };

  const char* const data_;
  const std::vector<char>& expected_;
  std::mutex mu_;
  int submits_ = 0, after_copy_ = 0;
  std::ptrdiff_t landed_at_next_ = -1;
};

// Saves `big` (filled from `seed`) at step 1 through `env` with one I/O thread, 64 KiB
// units and `depth`, clears it, restores it and checks that every byte came back.
void SaveClearRestore(Env* env, Region& big, uint64_t seed, int depth) {
  LocalCollective local;
  auto ckpt = Checkpointer::Create({.dir = "/ckpt",
                                    .io_threads = 1,
                                    .io_unit_bytes = 64 << 10,
                                    .io_queue_depth = depth,
                                    .attempt = 0,
                                    .env = env},
                                   &local);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  ASSERT_TRUE((*ckpt)->RegisterHostBuffer("big", big.data(), big.size()).ok());
  ASSERT_TRUE((*ckpt)->Save(1).ok());
  big.Clear();
  auto restored = (*ckpt)->RestoreLatest();
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_TRUE(big.Matches(seed));
}

// When a unit's reads have all arrived, its lane sends the next unit's reads before it
// hashes the unit and copies it out, so the disk keeps io_queue_depth reads of the lane
// while the CPU works. Every byte goes through bounce buffers here (the buffer starts one
// byte past a page), so a copy between a read's arrival and the next Submit would show.
TEST(ReadPath, TheNextUnitIsReadBeforeTheLastOneIsHashedAndCopiedOut) {
  FaultInjectionEnv fault;
  ASSERT_TRUE(fault.CreateDir("/ckpt").ok());
  Region big(1 << 20, 1);
  big.Fill(9);
  std::vector<char> expected(big.data(), big.data() + big.size());
  SubmitOrderEnv env(&fault, big.data(), expected);
  SaveClearRestore(&env, big, 9, /*depth=*/2);
  EXPECT_GE(env.submits(), 16);  // 1 MiB and a header in 64 KiB units
  EXPECT_EQ(env.submits_after_a_copy(), 0);
}

// A save keeps as many units in flight as a restore does while it prepares the next:
// io_threads x (io_queue_depth + 1) writers (writes are synchronous), here 1 x (3 + 1),
// and never more.
TEST(ReadPath, ASaveWritesThreadsTimesDepthPlusOneUnitsAtOnce) {
  FaultInjectionEnv fault;
  ASSERT_TRUE(fault.CreateDir("/ckpt").ok());
  ConcurrentWritesEnv env(&fault, /*want=*/4);
  Region big(1 << 20, 0);
  big.Fill(7);
  SaveClearRestore(&env, big, 7, /*depth=*/3);
  EXPECT_EQ(env.most_at_once(), 4);
}

}  // namespace
}  // namespace baton::checkpoint
