// The shard header (checkpoint/shard.h), the first bytes of every rank-<r>.shard read at
// restore. Each input is parsed as given, and repaired into a region that passes the cheap
// gates (magic, the header size field and the region's length, the header checksum), so
// that the buffer-table checks see every mutation. A header that parses must describe
// buffers that fit the layout FORMAT.md promises, and encode back to a header that parses
// equal.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "checkpoint/hash.h"
#include "checkpoint/shard.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using baton::checkpoint::BufferEntry;
using baton::checkpoint::EncodeShardHeader;
using baton::checkpoint::kShardAlignment;
using baton::checkpoint::ParseShardHeader;
using baton::checkpoint::ShardHeader;
using baton::checkpoint::Xxh3;

constexpr size_t kFixedBytes = 48;  // magic .. file_bytes (FORMAT.md)

// Version 1 places every buffer at a multiple of 4 KiB; version 2 within 4 KiB of where
// the one before ends (FORMAT.md).
void CheckLayout(uint32_t version, const ShardHeader& h) {
  FUZZ_CHECK(h.header_bytes % kShardAlignment == 0, "unaligned header size");
  FUZZ_CHECK(h.file_bytes % kShardAlignment == 0, "unaligned file size");
  FUZZ_CHECK(version == 1 || version == 2, "accepted version " + std::to_string(version));
  uint64_t end = h.header_bytes;
  for (const BufferEntry& b : h.buffers) {
    FUZZ_CHECK(b.offset >= end, "buffer " + b.name + " overlaps the one before");
    if (version == 1) {
      FUZZ_CHECK(b.offset % kShardAlignment == 0, "unaligned buffer " + b.name + " in version 1");
    } else {
      FUZZ_CHECK(b.offset - end < kShardAlignment, "padding of 4 KiB or more before " + b.name);
    }
    FUZZ_CHECK(b.size <= h.file_bytes && b.offset <= h.file_bytes - b.size,
               "buffer " + b.name + " ends past the file");
    end = b.offset + b.size;
  }
}

void Check(const std::string& bytes) {
  absl::StatusOr<ShardHeader> h = ParseShardHeader(bytes);
  if (!h.ok()) {
    FUZZ_CHECK(h.status().code() == absl::StatusCode::kDataLoss, h.status().ToString());
    return;
  }
  FUZZ_CHECK(h->header_bytes == bytes.size(), "header size is not the region's");
  uint32_t version = 0;
  std::memcpy(&version, bytes.data() + 8, sizeof(version));
  CheckLayout(version, *h);
  const std::string encoded = EncodeShardHeader(*h);
  FUZZ_CHECK(encoded.size() == h->header_bytes, "encoding is not header_bytes long");
  absl::StatusOr<ShardHeader> again = ParseShardHeader(encoded);
  FUZZ_CHECK(again.ok(),
             "EncodeShardHeader wrote what ParseShardHeader refuses: " + again.status().ToString());
  FUZZ_CHECK(*again == *h, "round trip changed the header");
}

template <typename T>
T Read(const std::string& s, size_t pos) {
  T v{};
  if (pos + sizeof(T) <= s.size()) std::memcpy(&v, s.data() + pos, sizeof(T));
  return v;
}

template <typename T>
void Write(std::string* s, size_t pos, T v) {
  std::memcpy(s->data() + pos, &v, sizeof(T));
}

// The input with the magic set, the buffer table walked as the parser walks it, the
// checksum written after it, zero padding to the next 4 KiB, and the header size field
// naming that length.
std::string Repaired(const std::string& input) {
  std::string bytes = input;
  if (bytes.size() < kFixedBytes) bytes.resize(kFixedBytes, '\0');
  std::memcpy(bytes.data(), "BTNSHARD", 8);
  const uint32_t count = Read<uint32_t>(bytes, 20);
  size_t body = kFixedBytes;
  for (uint32_t i = 0; i < count && body + 24 <= bytes.size(); ++i) {
    body += 24 + uint64_t{Read<uint32_t>(bytes, body)};  // no 32-bit wrap
  }
  if (body > bytes.size()) body = bytes.size();
  const uint64_t header_bytes =
      (body + sizeof(uint64_t) + kShardAlignment - 1) / kShardAlignment * kShardAlignment;
  bytes.resize(header_bytes, '\0');
  Write<uint64_t>(&bytes, 32, header_bytes);
  Write<uint64_t>(&bytes, body, Xxh3(bytes.data(), body));
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  Check(input);
  Check(Repaired(input));
  return 0;
}
