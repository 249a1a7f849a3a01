// The on-disk formats of FORMAT.md: manifest text, shard header, progress JSON, and the
// worker environment variables. Every damaged input must be rejected with its reason.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "checkpoint/hash.h"
#include "checkpoint/job_env.h"
#include "checkpoint/manifest.h"
#include "checkpoint/progress.h"
#include "checkpoint/shard.h"
#include "checkpoint/stream_copy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace baton::checkpoint {
namespace {

using ::testing::HasSubstr;

Manifest SampleManifest() {
  Manifest m;
  m.step = 120;
  m.attempt = 2;
  m.world_size = 2;
  m.time_ms = 1700000000123;
  m.shards = {{8192, 0x0123456789abcdefull}, {4096, 0xfedcba9876543210ull}};
  m.metadata = {{"lr", "0.001"}, {"note with spaces", "line1\nline2 %20 100%"}, {"empty", ""}};
  return m;
}

TEST(Manifest, RoundTripsEveryFieldAndOddMetadataBytes) {
  const Manifest m = SampleManifest();
  const std::string text = EncodeManifest(m);
  auto parsed = ParseManifest(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, m);
  EXPECT_THAT(text, HasSubstr("step 120\n"));
  EXPECT_THAT(text, HasSubstr("world_size 2\n"));
}

TEST(Manifest, RejectsAnyFlippedByte) {
  const std::string text = EncodeManifest(SampleManifest());
  for (size_t i = 0; i < text.size(); ++i) {
    std::string bad = text;
    bad[i] ^= 0x01;
    EXPECT_FALSE(ParseManifest(bad).ok()) << "flip at byte " << i << " went unnoticed";
  }
}

TEST(Manifest, RejectsEveryTruncation) {
  const std::string text = EncodeManifest(SampleManifest());
  for (size_t n = 0; n < text.size(); ++n) {
    auto parsed = ParseManifest(text.substr(0, n));
    ASSERT_FALSE(parsed.ok()) << "truncation to " << n << " bytes went unnoticed";
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kDataLoss);
  }
}

TEST(Manifest, ChecksumMismatchIsNamed) {
  std::string text = EncodeManifest(SampleManifest());
  text.replace(text.find("step 120"), 8, "step 121");
  EXPECT_THAT(std::string(ParseManifest(text).status().message()), HasSubstr("checksum mismatch"));
}

// Re-signs a hand-edited body so the parser's structural checks are reached.
std::string Signed(const std::string& body) {
  return body + "xxh3 " + HexU64(Xxh3(body.data(), body.size())) + "\n";
}

TEST(Manifest, StructuralErrorsNameTheLine) {
  const std::string head = "baton-checkpoint 1\nstep 5\nattempt 1\ntime_ms 9\n";
  EXPECT_THAT(std::string(ParseManifest(Signed(head + "world_size 2\nshard 0 4096 "
                                                      "0000000000000001\n"))
                              .status()
                              .message()),
              HasSubstr("no entry for shard 1"));
  EXPECT_THAT(std::string(ParseManifest(Signed(head + "world_size 1\nshard 0 4096 "
                                                      "0000000000000001\nbogus 1\n"))
                              .status()
                              .message()),
              HasSubstr("line 7: unknown key 'bogus'"));
  EXPECT_THAT(
      std::string(ParseManifest(Signed(head + "world_size 1\nstep 6\n")).status().message()),
      HasSubstr("'step' appears twice"));
  EXPECT_THAT(std::string(ParseManifest(Signed(head + "world_size -1\n")).status().message()),
              HasSubstr("line 5"));
  EXPECT_THAT(std::string(ParseManifest(Signed("baton-checkpoint 1\nstep 5\n")).status().message()),
              HasSubstr("no 'attempt'"));
}

TEST(Manifest, NewerFormatVersionAsksForANewerLibrary) {
  auto parsed = ParseManifest(Signed("baton-checkpoint 2\nstep 5\n"));
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("newer"));
}

uint32_t VersionOf(const std::string& header) {
  uint32_t v = 0;
  std::memcpy(&v, header.data() + 8, sizeof(v));
  return v;
}

// Rewrites a little-endian u64 or u32 field of an encoded header and signs it again.
template <typename T>
std::string Patched(std::string header, size_t at, T value, size_t body) {
  std::memcpy(header.data() + at, &value, sizeof(value));
  const uint64_t sum = Xxh3(header.data(), body);
  std::memcpy(header.data() + body, &sum, sizeof(sum));
  return header;
}

TEST(ShardHeader, LayoutAlignsEveryBufferAndRoundTrips) {
  const ShardHeader h =
      LayoutShard(/*step=*/7, /*rank=*/1, /*world_size=*/3,
                  {{"empty", 0}, {"one", 1}, {"page", 4096}, {"odd", 5000}, {"last", 3}});
  EXPECT_EQ(h.header_bytes, 4096u);
  for (const BufferEntry& b : h.buffers) EXPECT_EQ(b.offset % kShardAlignment, 0u) << b.name;
  EXPECT_EQ(VersionOf(EncodeShardHeader(h)), 1u);
  EXPECT_EQ(h.buffers[1].offset, 4096u);
  EXPECT_EQ(h.buffers[2].offset, 8192u);
  EXPECT_EQ(h.buffers[3].offset, 12288u);
  EXPECT_EQ(h.buffers[4].offset, 20480u);
  EXPECT_EQ(h.file_bytes, 24576u);
  const std::string bytes = EncodeShardHeader(h);
  ASSERT_EQ(bytes.size(), h.header_bytes);
  auto parsed = ParseShardHeader(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, h);
}

TEST(ShardHeader, EachBufferSitsAtItsMemorysPhaseAfterThePreviousOne) {
  const ShardHeader h = LayoutShard(2, 0, 1,
                                    {{"a", 100000, 16},
                                     {"b", 5, 16},
                                     {"c", 9000, 4095},
                                     {"d", 0, 7},
                                     {"e", 70000, 0},
                                     {"f", 1, 4096 + 3}});
  uint64_t end = h.header_bytes;
  const uint64_t phases[] = {16, 16, 4095, 7, 0, 3};
  for (size_t i = 0; i < h.buffers.size(); ++i) {
    const BufferEntry& b = h.buffers[i];
    EXPECT_EQ(b.offset % kShardAlignment, phases[i]) << b.name;
    EXPECT_GE(b.offset, end) << b.name;
    EXPECT_LT(b.offset - end, kShardAlignment) << b.name;
    end = b.offset + b.size;
  }
  EXPECT_EQ(h.buffers[0].offset, 4096u + 16);
  EXPECT_EQ(h.buffers[1].offset, 4096u + 16 + 100000 + (16 + 4096 - (4096 + 16 + 100000) % 4096));
  EXPECT_EQ(h.file_bytes % kShardAlignment, 0u);
  EXPECT_GE(h.file_bytes, end);
  EXPECT_LT(h.file_bytes - end, kShardAlignment);
  const std::string bytes = EncodeShardHeader(h);
  EXPECT_EQ(VersionOf(bytes), 2u) << "unaligned offsets need format version 2";
  auto parsed = ParseShardHeader(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, h);
  // Aligned memory keeps version 1, which older libraries read.
  EXPECT_EQ(VersionOf(EncodeShardHeader(LayoutShard(2, 0, 1, {{"a", 100000, 0}}))), 1u);
}

TEST(ShardHeader, RejectsOffsetsTheirVersionDoesNotAllow) {
  const ShardHeader h = LayoutShard(2, 0, 1, {{"a", 100000, 16}, {"b", 5, 16}});
  const std::string bytes = EncodeShardHeader(h);
  const size_t body = 48 + 2 * 24 + 2;
  const size_t b_offset = 48 + 24 + 1 + 8;  // entry b: name length, reserved, then offset
  ASSERT_TRUE(ParseShardHeader(bytes).ok());
  // Version 1 promises aligned offsets.
  auto v1 = ParseShardHeader(Patched<uint32_t>(bytes, 8, 1, body));
  EXPECT_THAT(std::string(v1.status().message()), HasSubstr("does not fit the layout"));
  // Version 2 allows less than 4 KiB of padding before a buffer, not more.
  auto gap = ParseShardHeader(
      Patched<uint64_t>(bytes, b_offset, h.buffers[1].offset + kShardAlignment, body));
  EXPECT_THAT(std::string(gap.status().message()), HasSubstr("does not fit the layout"));
  // Nor does it let a buffer start inside the previous one.
  auto overlap =
      ParseShardHeader(Patched<uint64_t>(bytes, b_offset, h.buffers[1].offset - 1 - 4080, body));
  EXPECT_THAT(std::string(overlap.status().message()), HasSubstr("does not fit the layout"));
  // A version this library does not know.
  auto v3 = ParseShardHeader(Patched<uint32_t>(bytes, 8, 3, body));
  EXPECT_THAT(std::string(v3.status().message()), HasSubstr("format version 3"));
}

TEST(ShardHeader, ManyLongNamesSpillIntoMoreHeaderPages) {
  std::vector<BufferShape> shapes;
  for (int i = 0; i < 100; ++i)
    shapes.push_back({std::string(100, 'a' + i % 26) + std::to_string(i), 10});
  const ShardHeader h = LayoutShard(1, 0, 1, shapes);
  EXPECT_EQ(h.header_bytes, 4u * 4096);
  auto parsed = ParseShardHeader(EncodeShardHeader(h));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, h);
}

TEST(ShardHeader, RejectsFlippedBytesAndForeignFiles) {
  const ShardHeader h = LayoutShard(3, 0, 1, {{"w", 100}, {"b", 7}});
  const std::string bytes = EncodeShardHeader(h);
  const size_t used = 48 + 24 * 2 + 2 + 8;  // fixed fields, entries, names, checksum
  for (size_t i = 0; i < used; ++i) {
    std::string bad = bytes;
    bad[i] ^= 0x40;
    EXPECT_FALSE(ParseShardHeader(bad).ok()) << "flip at byte " << i;
  }
  EXPECT_THAT(std::string(ShardHeaderBytes(std::string(4096, 'x')).status().message()),
              HasSubstr("magic"));
}

TEST(Progress, EncodesOneJsonLineAndParsesItBack) {
  const Progress p{/*attempt=*/2, "saving", /*step=*/120, /*committed_step=*/110,
                   /*time_ms=*/1700000000000};
  const std::string json = EncodeProgress(p);
  EXPECT_EQ(json,
            "{\"attempt\":2,\"state\":\"saving\",\"step\":120,\"committed_step\":110,"
            "\"time_ms\":1700000000000}\n");
  auto parsed = ParseProgress(json);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, p);
}

TEST(Progress, ToleratesSpacesAndUnknownKeysButNotMissingOnes) {
  auto parsed = ParseProgress(
      " { \"time_ms\" : 5 , \"extra\": \"x\", \"state\":\"committed\", \"step\": 3,"
      " \"committed_step\": 3, \"attempt\": 1 } ");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->state, "committed");
  EXPECT_THAT(std::string(ParseProgress("{\"attempt\":1}").status().message()),
              HasSubstr("\"step\""));
  EXPECT_THAT(std::string(ParseProgress("{\"attempt\":1,\"state\":\"done\",\"step\":1,"
                                        "\"committed_step\":1,\"time_ms\":1}")
                              .status()
                              .message()),
              HasSubstr("unknown state"));
  EXPECT_FALSE(ParseProgress("{\"attempt\":1").ok());
  EXPECT_FALSE(ParseProgress("").ok());
}

TEST(JobEnv, AttemptMustBeANonNegativeInteger) {
  ::unsetenv("BATON_ATTEMPT");
  EXPECT_EQ(*AttemptFromEnv(), 0);
  ::setenv("BATON_ATTEMPT", "7", 1);
  EXPECT_EQ(*AttemptFromEnv(), 7);
  for (const char* bad : {"", "-1", "7x", "seven", " 7"}) {
    ::setenv("BATON_ATTEMPT", bad, 1);
    auto attempt = AttemptFromEnv();
    ASSERT_FALSE(attempt.ok()) << "'" << bad << "' was accepted";
    EXPECT_THAT(std::string(attempt.status().message()), HasSubstr("BATON_ATTEMPT"));
  }
  ::unsetenv("BATON_ATTEMPT");
}

TEST(JobEnv, GraceSecondsTakesDurations) {
  ::unsetenv("BATON_GRACE_SECONDS");
  EXPECT_FALSE(GraceSecondsFromEnv()->has_value());
  ::setenv("BATON_GRACE_SECONDS", "2m", 1);
  EXPECT_EQ(**GraceSecondsFromEnv(), 120);
  ::setenv("BATON_GRACE_SECONDS", "soon", 1);
  EXPECT_THAT(std::string(GraceSecondsFromEnv().status().message()),
              HasSubstr("BATON_GRACE_SECONDS='soon'"));
  ::unsetenv("BATON_GRACE_SECONDS");
}

TEST(JobEnv, ProgressFileDefaultsIntoTheCheckpointDir) {
  ::unsetenv("BATON_PROGRESS_FILE");
  EXPECT_EQ(ProgressFilePath("/ckpt"), "/ckpt/PROGRESS");
  ::setenv("BATON_PROGRESS_FILE", "/run/baton/job-7.progress", 1);
  EXPECT_EQ(ProgressFilePath("/ckpt"), "/run/baton/job-7.progress");
  ::unsetenv("BATON_PROGRESS_FILE");
}

// Stored checksums are XXH3-64: its value for no input is fixed by its specification, so a
// build that hashed differently could not read older checkpoints.
TEST(Xxh3, IsTheSpecifiedHash) {
  EXPECT_EQ(Xxh3("", 0), 0x2D06800538D394C2ull);
  EXPECT_EQ(HexU64(Xxh3("", 0)), "2d06800538d394c2");
}

// Every vector unit gives every input the baseline's value, one-shot and streamed in
// uneven pieces, at every alignment and across XXH3's size classes (≤16, ≤128, ≤240
// bytes, then stripes and blocks).
TEST(Xxh3, EveryVariantGivesTheBaselinesValue) {
  const std::vector<hash_internal::Xxh3Impl> impls = hash_internal::SupportedXxh3Impls();
  ASSERT_FALSE(impls.empty());
  ASSERT_STREQ(impls.front().name, "baseline");
  std::vector<unsigned char> bytes((1 << 20) + 64);
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (auto& b : bytes) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = static_cast<unsigned char>(x);
  }
  const size_t sizes[] = {0,   1,    3,    16,   17,    128,       129,           240,
                          241, 1023, 1024, 1025, 65536, 65536 + 7, (1 << 20) + 13};
  for (const auto& impl : impls) {
    for (size_t size : sizes) {
      for (size_t skew : {0, 1, 7, 33}) {
        const unsigned char* p = bytes.data() + skew;
        const uint64_t want = impls.front().hash(p, size);
        EXPECT_EQ(impl.hash(p, size), want) << impl.name << " size " << size << " skew " << skew;
        Xxh3Stream stream(impl);
        for (size_t done = 0, piece = 1; done < size; done += piece, piece = piece * 3 + 5) {
          piece = std::min(piece, size - done);
          stream.Update(p + done, piece);
        }
        EXPECT_EQ(stream.Digest(), want)
            << impl.name << " streamed, size " << size << " skew " << skew;
      }
    }
  }
}

// On a CPU with AVX2 (every x86-64 server of the last decade) checkpoints are hashed with
// it, not with SSE2.
TEST(Xxh3, UsesAvx2WhereTheCpuHasIt) {
  const std::vector<hash_internal::Xxh3Impl> impls = hash_internal::SupportedXxh3Impls();
  EXPECT_STREQ(Xxh3Variant(), impls.back().name);
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) {
    EXPECT_STREQ(Xxh3Variant(), "avx2");
  }
#endif
}

// The restore's copy out of its bounce buffers: every byte lands, at every alignment of
// either side and every size around its 16-byte head and 64-byte body, and not one byte
// either side of the destination is touched.
TEST(StreamCopy, CopiesEveryByteAtAnyAlignmentAndNothingAround) {
  constexpr size_t kGuard = 64;
  const size_t sizes[] = {0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 200, 4096 + 13, 65536 + 31};
  std::vector<unsigned char> src(65536 + 256);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
  std::vector<unsigned char> dst(65536 + 256 + 2 * kGuard);
  for (size_t size : sizes) {
    for (size_t dst_skew = 0; dst_skew < 17; ++dst_skew) {
      for (size_t src_skew : {0, 1, 5, 16}) {
        std::fill(dst.begin(), dst.end(), 0xEE);
        unsigned char* to = dst.data() + kGuard + dst_skew;
        CopyStreaming(to, src.data() + src_skew, size);
        SCOPED_TRACE(testing::Message()
                     << "size " << size << " dst skew " << dst_skew << " src skew " << src_skew);
        ASSERT_EQ(std::memcmp(to, src.data() + src_skew, size), 0);
        for (const unsigned char* p = dst.data(); p < to; ++p) ASSERT_EQ(*p, 0xEE);
        for (const unsigned char* p = to + size; p < dst.data() + dst.size(); ++p) {
          ASSERT_EQ(*p, 0xEE);
        }
      }
    }
  }
}

}  // namespace
}  // namespace baton::checkpoint
