// ApplyProgressNote as a sequence table: the notes a job writes (or fails to), one after
// another, against one attempt's report; what each changes and whether it is sent again.
#include "launcher/agent/progress_report.h"

#include "checkpoint/progress.h"
#include "gtest/gtest.h"

// Its own namespace: the unity build puts several tests' helpers in one unit.
namespace baton::progress_report_test {
namespace {

absl::StatusOr<std::string> Note(const std::string& state, int64_t step, int64_t committed,
                                 int64_t time_ms = 1'000) {
  return checkpoint::EncodeProgress({.attempt = 1,
                                     .state = state,
                                     .step = step,
                                     .committed_step = committed,
                                     .time_ms = time_ms});
}

struct Row {
  const char* name;
  absl::StatusOr<std::string> note;
  bool changed;
  // The report after it:
  bool reports_progress;
  int64_t checkpoint_step;
  int64_t checkpoint_time_ms;
  std::optional<int64_t> saving_step;
  std::string message;  // "!" + a prefix: the message starts with it
};

void Check(const std::vector<Row>& rows, v1::AttemptReport report) {
  ProgressNoteState state;
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(ApplyProgressNote(row.note, state, report), row.changed);
    EXPECT_EQ(report.reports_progress(), row.reports_progress);
    EXPECT_EQ(report.checkpoint_step(), row.checkpoint_step);
    EXPECT_EQ(report.checkpoint_time_ms(), row.checkpoint_time_ms);
    EXPECT_EQ(
        report.has_saving_step() ? std::optional<int64_t>(report.saving_step()) : std::nullopt,
        row.saving_step);
    if (!row.message.empty() && row.message[0] == '!') {
      EXPECT_EQ(report.message().rfind(row.message.substr(1), 0), 0u) << report.message();
    } else {
      EXPECT_EQ(report.message(), row.message);
    }
  }
}

v1::AttemptReport Fresh() {
  v1::AttemptReport r;
  r.set_checkpoint_step(-1);
  return r;
}

TEST(ProgressReport, NotesInTurn) {
  const std::string ignored = "!progress note ignored: ";
  Check(
      {{"no note yet", absl::NotFoundError("none"), false, false, -1, 0, {}, ""},
       {"an empty note", std::string(), false, false, -1, 0, {}, ""},
       {"a note that does not parse: said", std::string("{oops"), true, false, -1, 0, {}, ignored},
       {"the same again: said once", std::string("{oops"), false, false, -1, 0, {}, ignored},
       {"a good note clears it", Note("committed", 10, 10, 5'000), true, true, 10, 5'000, {}, ""},
       {"the same note: nothing new",
        Note("committed", 10, 10, 5'000),
        false,
        true,
        10,
        5'000,
        {},
        ""},
       {"a save starts", Note("saving", 20, 10, 6'000), true, true, 10, 5'000, 20, ""},
       {"it goes on", Note("saving", 20, 10, 6'000), false, true, 10, 5'000, 20, ""},
       {"it commits", Note("committed", 20, 20, 7'000), true, true, 20, 7'000, {}, ""},
       {"an older committed step does not go back",
        Note("committed", 15, 15, 8'000),
        false,
        true,
        20,
        7'000,
        {},
        ""},
       {"a save fails", Note("saving", 30, 20, 9'000), true, true, 20, 7'000, 30, ""},
       {"and says so", Note("failed", 30, 20, 9'500), true, true, 20, 7'000, {}, ""},
       {"what follows the first line is not read",
        *Note("committed", 40, 40, 10'000) + "{oops\n",
        true,
        true,
        40,
        10'000,
        {},
        ""},
       {"unreadable later: said",
        absl::PermissionDeniedError("not the job's file"),
        true,
        true,
        40,
        10'000,
        {},
        "!progress note ignored: not the job's file"}},
      Fresh());
}

TEST(ProgressReport, AnotherMessageIsNotOverwrittenNorCleared) {
  v1::AttemptReport r = Fresh();
  r.set_message("rank(s) failed: exit code 3");
  const std::string failed = "rank(s) failed: exit code 3";
  Check({{"a bad note: not said over the failure",
          std::string("{oops"),
          false,
          false,
          -1,
          0,
          {},
          failed},
         {"a good note: the failure stays",
          Note("committed", 5, 5, 1'000),
          true,
          true,
          5,
          1'000,
          {},
          failed}},
        r);
}

}  // namespace
}  // namespace baton::progress_report_test
