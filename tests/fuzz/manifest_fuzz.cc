// The checkpoint MANIFEST (checkpoint/manifest.h), read at every restore from a shared
// filesystem. Each input is parsed twice: as given (the trailer and checksum checks), and
// re-signed with a correct xxh3 trailer (replacing its last line if that is one), so that
// the body parser sees every mutation instead of stopping at the checksum. A parse either
// fails or yields a Manifest that EncodeManifest writes and ParseManifest reads back equal.
#include <cstddef>
#include <cstdint>
#include <string>

#include "checkpoint/hash.h"
#include "checkpoint/manifest.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using baton::checkpoint::EncodeManifest;
using baton::checkpoint::HexU64;
using baton::checkpoint::kMaxManifestBytes;
using baton::checkpoint::Manifest;
using baton::checkpoint::ParseManifest;
using baton::checkpoint::Xxh3;

void Check(const std::string& text) {
  absl::StatusOr<Manifest> m = ParseManifest(text);
  if (!m.ok()) {
    const absl::StatusCode code = m.status().code();
    FUZZ_CHECK(code == absl::StatusCode::kDataLoss || code == absl::StatusCode::kFailedPrecondition,
               m.status().ToString());
    return;
  }
  FUZZ_CHECK(m->shards.size() == static_cast<size_t>(m->world_size), "shards != world_size");
  const std::string encoded = EncodeManifest(*m);
  FUZZ_CHECK(encoded.size() <= kMaxManifestBytes, "re-encoding grew past the limit");
  absl::StatusOr<Manifest> again = ParseManifest(encoded);
  FUZZ_CHECK(again.ok(), "EncodeManifest wrote what ParseManifest refuses: " +
                             again.status().ToString() + "\n" + encoded);
  FUZZ_CHECK(*again == *m, "round trip changed the manifest:\n" + encoded);
  FUZZ_CHECK(EncodeManifest(*again) == encoded, "encoding is not canonical:\n" + encoded);
}

// The input with its last line replaced by (or, if it is not a trailer, followed by) the
// xxh3 trailer its body deserves.
std::string Resigned(const std::string& input) {
  std::string body = input;
  const size_t end = body.size() > 1 && body.back() == '\n' ? body.size() - 1 : body.size();
  const size_t last = body.rfind('\n', end == 0 ? 0 : end - 1);
  const size_t start = last == std::string::npos ? 0 : last + 1;
  if (body.compare(start, 5, "xxh3 ") == 0) body.resize(start);
  if (!body.empty() && body.back() != '\n') body += '\n';
  return body + "xxh3 " + HexU64(Xxh3(body.data(), body.size())) + "\n";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  Check(input);
  Check(Resigned(input));
  return 0;
}
