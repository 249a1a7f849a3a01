// A coordinator whose disk fills up: its store lives on a small tmpfs, a filler takes the
// rest. It must not crash (nor crash again at every restart): changes already made wait
// until space returns, new work is refused with a clear error while reads are served, and
// once the filler is gone everything pending is written and new work is accepted —
// nothing acknowledged is lost. Needs root (mount); skips otherwise.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <future>

#include "tests/coordinator/harness.h"

namespace baton::testing {
namespace {

// A tmpfs of `mib` MiB mounted at a fresh directory, unmounted at the end.
class SmallDisk {
 public:
  explicit SmallDisk(int mib) : dir_("baton-small-disk") {
    if (geteuid() != 0) {
      why_ = "mounting a small tmpfs needs root";
      return;
    }
    std::string opts = "size=" + std::to_string(mib) + "m,mode=0700";
    if (mount("tmpfs", dir_.path().c_str(), "tmpfs", 0, opts.c_str()) != 0) {
      why_ = std::string("mount tmpfs: ") + strerror(errno);
      return;
    }
    mounted_ = true;
  }
  ~SmallDisk() {
    if (mounted_) umount2(dir_.path().c_str(), MNT_DETACH);
  }
  const std::string& why() const { return why_; }
  std::string Sub(const std::string& name) const { return dir_.Sub(name); }

  // Writes a file until the disk is full; returns its path.
  std::string Fill() {
    std::string path = Sub("filler");
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    std::string block(64 << 10, 'f');
    while (fd >= 0 && write(fd, block.data(), block.size()) > 0) {
    }
    if (fd >= 0) close(fd);
    return path;
  }

 private:
  TempDir dir_;
  std::string why_;
  bool mounted_ = false;
};

TEST(StoreFull, RefusesNewWorkServesReadsAndCatchesUpWhenSpaceReturns) {
  SmallDisk disk(64);
  if (!disk.why().empty()) GTEST_SKIP() << disk.why();
  ASSERT_EQ(mkdir(disk.Sub("coordinator").c_str(), 0700), 0);
  JobManagerOptions options = TestOptions();
  options.policy.admission.submit_rate = 0;  // this test floods on purpose
  options.policy.admission.max_pending_per_tenant = 1'000'000;
  options.min_free_disk_bytes = 16 << 20;  // writes wait below 4 MiB
  auto h = std::make_unique<Harness>(options, disk.Sub("coordinator"));
  absl::StatusOr<uint64_t> before = h->Submit(Spec());
  ASSERT_TRUE(before.ok()) << before.status();

  std::string filler = disk.Fill();
  // The disk is full: the next change waits (it was never acknowledged), and the
  // coordinator refuses new work.
  std::vector<std::future<absl::StatusOr<uint64_t>>> waiting;
  for (int i = 0; i < 2000 && !h->jm().store_full(); ++i) {
    auto done = std::make_shared<std::promise<absl::StatusOr<uint64_t>>>();
    waiting.push_back(done->get_future());
    h->jm().Submit(Alice(), Spec(), [done](absl::StatusOr<uint64_t> id) { done->set_value(id); });
    if (waiting.back().wait_for(std::chrono::milliseconds(100)) == std::future_status::ready) {
      absl::StatusOr<uint64_t> id = waiting.back().get();
      ASSERT_TRUE(id.ok()) << id.status();
      waiting.pop_back();
    }
  }
  ASSERT_TRUE(h->jm().store_full()) << "the disk never filled";
  absl::StatusOr<uint64_t> refused = h->Submit(Spec());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(std::string(refused.status().message()).find("disk is full"), std::string::npos)
      << refused.status();
  ASSERT_TRUE(RetryAfter(refused.status()).has_value());
  EXPECT_EQ(h->State(*before), v1::JOB_STATE_PENDING) << "reads are served";
  v1::ListRequest all;
  EXPECT_TRUE(h->jm().List(Alice(), all).ok());

  ASSERT_EQ(unlink(filler.c_str()), 0);  // an operator frees space
  std::vector<uint64_t> acknowledged = {*before};
  for (auto& f : waiting) {
    ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready)
        << "pending changes are written once space returns";
    absl::StatusOr<uint64_t> id = f.get();
    ASSERT_TRUE(id.ok()) << id.status();
    acknowledged.push_back(*id);
  }
  EXPECT_FALSE(h->jm().store_full());
  absl::StatusOr<uint64_t> after = h->Submit(Spec());
  ASSERT_TRUE(after.ok()) << after.status();
  acknowledged.push_back(*after);

  h->Restart();  // nothing acknowledged was lost
  for (uint64_t id : acknowledged) EXPECT_EQ(h->State(id), v1::JOB_STATE_PENDING) << id;

  // A restart on a full disk: the store opens, reads are served, new work is refused.
  filler = disk.Fill();
  h->Restart();
  EXPECT_EQ(h->State(acknowledged.back()), v1::JOB_STATE_PENDING);
  EXPECT_EQ(h->Submit(Spec()).status().code(), absl::StatusCode::kResourceExhausted);
  ASSERT_EQ(unlink(filler.c_str()), 0);
}

}  // namespace
}  // namespace baton::testing
