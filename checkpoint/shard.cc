#include "checkpoint/shard.h"

#include <bit>
#include <cstring>
#include <string>

#include "checkpoint/hash.h"
#include "checkpoint/manifest.h"
#include "common/status.h"

namespace baton::checkpoint {
namespace {

static_assert(std::endian::native == std::endian::little,
              "shard headers are little-endian and written with memcpy");

constexpr char kMagic[8] = {'B', 'T', 'N', 'S', 'H', 'A', 'R', 'D'};
constexpr uint64_t kFixedBytes = 48;       // magic .. file_bytes
constexpr uint64_t kEntryFixedBytes = 24;  // name_len, reserved, offset, size
constexpr uint64_t kMaxHeaderBytes = 64 << 20;

template <typename T>
void Put(std::string* out, T value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(value));
}

// Reads fields front to back and remembers whether it ran off the end.
class Cursor {
 public:
  explicit Cursor(const std::string& bytes) : bytes_(bytes) {}
  template <typename T>
  T Get() {
    T value{};
    if (pos_ + sizeof(T) > bytes_.size()) {
      overrun_ = true;
      return value;
    }
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  std::string GetBytes(uint64_t n) {
    if (n > bytes_.size() - pos_) {
      overrun_ = true;
      return {};
    }
    std::string s = bytes_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  uint64_t pos() const { return pos_; }
  bool overrun() const { return overrun_; }

 private:
  const std::string& bytes_;
  uint64_t pos_ = 0;
  bool overrun_ = false;
};

absl::Status Damaged(const std::string& what) {
  return absl::DataLossError("shard header: " + what);
}

// Version 1: every offset aligned. Version 2: within kShardAlignment of the previous end.
bool Placed(uint32_t version, uint64_t offset, uint64_t end) {
  if (offset < end) return false;
  return version == 1 ? offset % kShardAlignment == 0 : offset - end < kShardAlignment;
}

absl::Status CheckEntries(uint32_t version, const ShardHeader& h) {
  uint64_t end = h.header_bytes;
  for (const BufferEntry& b : h.buffers) {
    if (!Placed(version, b.offset, end) || b.size > h.file_bytes ||
        b.offset > h.file_bytes - b.size) {
      return Damaged("buffer '" + b.name + "' at offset " + std::to_string(b.offset) + " with " +
                     std::to_string(b.size) + " bytes does not fit the layout");
    }
    end = b.offset + b.size;
  }
  if (h.file_bytes % kShardAlignment != 0 || ShardAlignUp(end) != h.file_bytes) {
    return Damaged("file size " + std::to_string(h.file_bytes) + " does not match its buffers");
  }
  return absl::OkStatus();
}

}  // namespace

ShardHeader LayoutShard(int64_t step, int rank, int world_size,
                        const std::vector<BufferShape>& buffers) {
  ShardHeader h;
  h.step = step;
  h.rank = rank;
  h.world_size = world_size;
  uint64_t raw = kFixedBytes + sizeof(uint64_t);  // fixed fields + trailing checksum
  for (const BufferShape& b : buffers) raw += kEntryFixedBytes + b.name.size();
  h.header_bytes = ShardAlignUp(raw);
  uint64_t end = h.header_bytes;
  for (const BufferShape& b : buffers) {
    const uint64_t phase = b.phase % kShardAlignment;
    const uint64_t offset =
        end + (phase + kShardAlignment - end % kShardAlignment) % kShardAlignment;
    h.buffers.push_back(BufferEntry{b.name, offset, b.size});
    end = offset + b.size;
  }
  h.file_bytes = ShardAlignUp(end);
  return h;
}

std::string EncodeShardHeader(const ShardHeader& h) {
  uint32_t version = 1;
  for (const BufferEntry& b : h.buffers) {
    if (b.offset % kShardAlignment != 0) version = kShardFormatVersion;
  }
  std::string out(kMagic, sizeof(kMagic));
  Put<uint32_t>(&out, version);
  Put<uint32_t>(&out, static_cast<uint32_t>(h.rank));
  Put<uint32_t>(&out, static_cast<uint32_t>(h.world_size));
  Put<uint32_t>(&out, static_cast<uint32_t>(h.buffers.size()));
  Put<int64_t>(&out, h.step);
  Put<uint64_t>(&out, h.header_bytes);
  Put<uint64_t>(&out, h.file_bytes);
  for (const BufferEntry& b : h.buffers) {
    Put<uint32_t>(&out, static_cast<uint32_t>(b.name.size()));
    Put<uint32_t>(&out, 0);  // reserved
    Put<uint64_t>(&out, b.offset);
    Put<uint64_t>(&out, b.size);
    out += b.name;
  }
  Put<uint64_t>(&out, Xxh3(out.data(), out.size()));
  out.resize(h.header_bytes, '\0');
  return out;
}

absl::StatusOr<uint64_t> ShardHeaderBytes(const std::string& first_block) {
  if (first_block.size() < kFixedBytes || std::memcmp(first_block.data(), kMagic, 8) != 0) {
    return Damaged("the file does not start with the shard magic 'BTNSHARD'");
  }
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, first_block.data() + 32, sizeof(header_bytes));
  if (header_bytes == 0 || header_bytes % kShardAlignment != 0 || header_bytes > kMaxHeaderBytes) {
    return Damaged("implausible header size " + std::to_string(header_bytes));
  }
  return header_bytes;
}

absl::StatusOr<ShardHeader> ParseShardHeader(const std::string& bytes) {
  BATON_ASSIGN_OR_RETURN(uint64_t header_bytes, ShardHeaderBytes(bytes));
  if (bytes.size() != header_bytes) return Damaged("header region is cut short");
  Cursor c(bytes);
  c.GetBytes(sizeof(kMagic));
  const uint32_t version = c.Get<uint32_t>();
  if (version == 0 || version > kShardFormatVersion) {
    return Damaged("format version " + std::to_string(version) + " is not one this library reads");
  }
  ShardHeader h;
  h.rank = static_cast<int>(c.Get<uint32_t>());
  h.world_size = static_cast<int>(c.Get<uint32_t>());
  const uint32_t count = c.Get<uint32_t>();
  h.step = c.Get<int64_t>();
  h.header_bytes = c.Get<uint64_t>();
  h.file_bytes = c.Get<uint64_t>();
  if (count > kMaxShardBuffers) return Damaged(std::to_string(count) + " buffers is too many");
  for (uint32_t i = 0; i < count && !c.overrun(); ++i) {
    BufferEntry b;
    const uint32_t name_len = c.Get<uint32_t>();
    c.Get<uint32_t>();
    b.offset = c.Get<uint64_t>();
    b.size = c.Get<uint64_t>();
    if (name_len > kMaxBufferNameBytes) return Damaged("a buffer name is too long");
    b.name = c.GetBytes(name_len);
    h.buffers.push_back(std::move(b));
  }
  const uint64_t body = c.pos();
  const uint64_t recorded = c.Get<uint64_t>();
  if (c.overrun()) return Damaged("buffer table runs past the header region");
  if (Xxh3(bytes.data(), body) != recorded) return Damaged("header checksum mismatch");
  BATON_RETURN_IF_ERROR(CheckEntries(version, h));
  return h;
}

}  // namespace baton::checkpoint
