// The progress file (checkpoint/progress.h): written by rank 0 of a training program,
// read by the node agent. Any bytes: a parse either fails with InvalidArgument or
// yields a Progress that EncodeProgress writes and ParseProgress reads back unchanged.
#include <cstddef>
#include <cstdint>
#include <string>

#include "checkpoint/progress.h"
#include "tests/fuzz/fuzz_check.h"

using baton::checkpoint::EncodeProgress;
using baton::checkpoint::ParseProgress;
using baton::checkpoint::Progress;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string json(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<Progress> p = ParseProgress(json);
  if (!p.ok()) {
    FUZZ_CHECK(p.status().code() == absl::StatusCode::kInvalidArgument, p.status().ToString());
    return 0;
  }
  const std::string encoded = EncodeProgress(*p);
  absl::StatusOr<Progress> again = ParseProgress(encoded);
  FUZZ_CHECK(again.ok(), "EncodeProgress wrote what ParseProgress refuses: " + encoded);
  FUZZ_CHECK(*again == *p, "round trip changed the progress: " + encoded);
  FUZZ_CHECK(EncodeProgress(*again) == encoded, "encoding is not canonical: " + encoded);
  return 0;
}
