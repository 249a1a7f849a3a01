// A listing's pages (job_listing.h) across jobs in memory and finished jobs in a store,
// without the JobManager: a map plays the store.
#include "coordinator/job_listing.h"

#include <map>
#include <random>

#include "coordinator/job_state.h"
#include "gtest/gtest.h"

// Its own namespace: the unity build puts several tests' helpers in one unit.
namespace baton::job_listing_test {
namespace {

const Caller kAlice{.user = "alice", .uid = 1001};

v1::Job MakeJob(uint64_t id, v1::JobState state, const std::string& cls = "training",
                int64_t submitted_ms = 0, const std::string& tenant = "vision") {
  v1::Job job;
  job.set_id(id);
  job.set_user("alice");
  job.set_state(state);
  job.set_submitted_ms(submitted_ms ? submitted_ms : 1000 + static_cast<int64_t>(id));
  job.mutable_spec()->set_priority_class(cls);
  job.mutable_spec()->set_tenant(tenant);
  (*job.mutable_spec()->mutable_env())["SECRET"] = "s3cret";
  return job;
}

// Finished jobs as the store keeps them: by id.
struct FakeStore {
  std::map<uint64_t, v1::Job> finished;
  int scans = 0;
  JobListing::Scan scan() {
    return [this](uint64_t after_id, const std::function<bool(v1::Job)>& fn) {
      ++scans;
      for (auto it = finished.upper_bound(after_id); it != finished.end(); ++it) {
        if (!fn(it->second)) break;
      }
      return absl::OkStatus();
    };
  }
};

// One page: `memory` considered, then the store read.
absl::StatusOr<v1::ListResponse> OnePage(const v1::ListRequest& req,
                                         const std::vector<v1::Job>& memory, FakeStore& store,
                                         const Caller& caller = kAlice) {
  absl::StatusOr<JobListing> l =
      JobListing::Start(req, std::make_shared<const Policy>(Policy::Default()));
  if (!l.ok()) return l.status();
  for (const v1::Job& job : memory) l->Consider(job);
  l->Take();
  absl::Status s = l->ReadStore(store.scan());
  if (!s.ok()) return s;
  return l->Page(caller);
}

// Every page of `req`, followed by its tokens: the ids in listing order.
std::vector<uint64_t> AllPages(v1::ListRequest req, const std::vector<v1::Job>& memory,
                               FakeStore& store) {
  std::vector<uint64_t> ids;
  for (int pages = 0; pages < 10'000; ++pages) {
    absl::StatusOr<v1::ListResponse> page = OnePage(req, memory, store);
    EXPECT_TRUE(page.ok()) << page.status();
    if (!page.ok()) break;
    if (req.limit() > 0) {
      EXPECT_LE(page->jobs_size(), static_cast<int>(req.limit()));
    }
    for (const auto& job : page->jobs()) ids.push_back(job.id());
    if (page->next_page_token().empty()) break;
    EXPECT_GT(page->jobs_size(), 0) << "a token after an empty page";
    req.set_page_token(page->next_page_token());
  }
  return ids;
}

TEST(JobListing, RunningWorkThenTheQueueInItsOrderThenFinishedJobsById) {
  FakeStore store;
  store.finished[3] = MakeJob(3, v1::JOB_STATE_SUCCEEDED);
  store.finished[1] = MakeJob(1, v1::JOB_STATE_FAILED);
  std::vector<v1::Job> memory = {
      MakeJob(10, v1::JOB_STATE_PENDING, "training", 500),
      MakeJob(11, v1::JOB_STATE_PENDING, "inference", 900),  // a higher class: served first
      MakeJob(12, v1::JOB_STATE_RUNNING, "experiment"),
      MakeJob(13, v1::JOB_STATE_COOLDOWN, "training", 400),
      MakeJob(2, v1::JOB_STATE_CANCELLED),  // finished, not yet stored
  };
  v1::ListRequest req;
  req.set_all(true);
  EXPECT_EQ(AllPages(req, memory, store), (std::vector<uint64_t>{12, 11, 13, 10, 1, 2, 3}));
  req.set_limit(2);
  EXPECT_EQ(AllPages(req, memory, store), (std::vector<uint64_t>{12, 11, 13, 10, 1, 2, 3}));
}

TEST(JobListing, WithoutAllOnlyUnfinishedJobsAndTheStoreIsNotRead) {
  FakeStore store;
  store.finished[1] = MakeJob(1, v1::JOB_STATE_SUCCEEDED);
  std::vector<v1::Job> memory = {MakeJob(5, v1::JOB_STATE_RUNNING),
                                 MakeJob(6, v1::JOB_STATE_SUCCEEDED)};
  EXPECT_EQ(AllPages(v1::ListRequest(), memory, store), std::vector<uint64_t>{5});
  EXPECT_EQ(store.scans, 0);

  v1::ListRequest failed;  // a finished state asked for: history is read
  failed.add_states(v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(AllPages(failed, memory, store), (std::vector<uint64_t>{1, 6}));
  EXPECT_EQ(store.scans, 1);
}

TEST(JobListing, FiltersByTenantAndStateAndShowsOthersJobsRedacted) {
  FakeStore store;
  store.finished[1] = MakeJob(1, v1::JOB_STATE_SUCCEEDED, "training", 0, "nlp");
  store.finished[2] = MakeJob(2, v1::JOB_STATE_SUCCEEDED, "training", 0, "vision");
  std::vector<v1::Job> memory = {MakeJob(5, v1::JOB_STATE_RUNNING, "training", 0, "nlp"),
                                 MakeJob(6, v1::JOB_STATE_PENDING, "training", 0, "nlp")};
  v1::ListRequest req;
  req.set_all(true);
  req.set_tenant("nlp");
  EXPECT_EQ(AllPages(req, memory, store), (std::vector<uint64_t>{5, 6, 1}));
  req.add_states(v1::JOB_STATE_PENDING);
  EXPECT_EQ(AllPages(req, memory, store), std::vector<uint64_t>{6});

  absl::StatusOr<v1::ListResponse> mine = OnePage(req, memory, store);
  ASSERT_TRUE(mine.ok());
  EXPECT_EQ(mine->jobs(0).spec().env().at("SECRET"), "s3cret") << "the owner sees the env";
  absl::StatusOr<v1::ListResponse> theirs = OnePage(req, memory, store, {.user = "mallory"});
  ASSERT_TRUE(theirs.ok());
  EXPECT_NE(theirs->jobs(0).spec().env().at("SECRET"), "s3cret") << "others see it redacted";
}

TEST(JobListing, APageTokenItDidNotGiveIsRefusedByName) {
  FakeStore store;
  for (const char* bad : {"x", "p1.0.0.0", "p2.0.0.0.1", "p1.a.0.0.1", "p1.0.0.0.1.2"}) {
    v1::ListRequest req;
    req.set_page_token(bad);
    absl::StatusOr<v1::ListResponse> page = OnePage(req, {}, store);
    ASSERT_FALSE(page.ok()) << bad;
    EXPECT_EQ(page.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(page.status().message().find("page_token"), std::string::npos);
  }
  JobListing::Position p{1, -300, 1234, 42};
  EXPECT_EQ(*JobListing::DecodeToken(JobListing::EncodeToken(p)), p);
}

// History split between memory and the store as a busy coordinator has it (finished jobs
// both stored and still in memory, others only in one of them), paged at every size:
// each job comes exactly once, in the listing's order.
TEST(JobListing, EveryPageSizeListsEachJobOnceInOrder) {
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    std::mt19937 rng(seed);
    FakeStore store;
    std::vector<v1::Job> memory;
    std::vector<std::pair<JobListing::Position, uint64_t>> expected;
    const char* classes[] = {"inference", "training", "experiment"};
    const v1::JobState live[] = {v1::JOB_STATE_PENDING, v1::JOB_STATE_RUNNING,
                                 v1::JOB_STATE_COOLDOWN, v1::JOB_STATE_PREEMPTING};
    const int64_t values[] = {900, 300, 100};
    for (uint64_t id = 1; id <= 40; ++id) {
      int kind = static_cast<int>(rng() % 4);
      if (kind == 0) {
        int c = static_cast<int>(rng() % 3);
        v1::JobState s = live[rng() % 4];
        int64_t submitted = 1000 + static_cast<int64_t>(rng() % 20);
        memory.push_back(MakeJob(id, s, classes[c], submitted));
        bool queued = s == v1::JOB_STATE_PENDING || s == v1::JOB_STATE_COOLDOWN;
        expected.push_back({{queued ? 1 : 0, -values[c], submitted, id}, id});
        continue;
      }
      v1::Job done = MakeJob(id, v1::JOB_STATE_SUCCEEDED);
      if (kind != 1) store.finished[id] = done;  // stored
      if (kind != 2) memory.push_back(done);     // still in memory (kind 3: both)
      expected.push_back({{2, 0, 0, id}, id});
    }
    std::sort(expected.begin(), expected.end());
    std::vector<uint64_t> want;
    for (const auto& [at, id] : expected) want.push_back(id);
    for (uint32_t limit = 1; limit <= 7; ++limit) {
      v1::ListRequest req;
      req.set_all(true);
      req.set_limit(limit);
      EXPECT_EQ(AllPages(req, memory, store), want) << "seed " << seed << " limit " << limit;
    }
  }
}

}  // namespace
}  // namespace baton::job_listing_test
