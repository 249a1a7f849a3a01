// proto/json.h against protobuf's own printer: the same text, byte for byte, for every
// message of the public API filled at random, for every ASCII character and the line
// separators in strings, for awkward doubles and floats, and for enum numbers this build
// does not know; maps of several entries read back as the same message.
#include <google/protobuf/timestamp.pb.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>

#include "proto/api.pb.h"
#include "proto/json.h"

namespace baton {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

std::string Theirs(const Message& m) {
  std::string json;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(m, &json).ok());
  return json;
}

// Every field set (or not) at random, `max_map` entries at most per map.
class Filler {
 public:
  Filler(uint32_t seed, int max_map) : rng_(seed), max_map_(max_map) {}

  void Fill(Message* m, int depth) {
    const Descriptor* d = m->GetDescriptor();
    for (int i = 0; i < d->field_count(); ++i) {
      const FieldDescriptor* f = d->field(i);
      if (Coin(3)) continue;  // a third of the fields stay unset
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && depth >= 3) continue;
      if (f->is_map()) {
        const int n = Int(0, max_map_);
        for (int k = 0; k < n; ++k) {
          Message* entry = m->GetReflection()->AddMessage(m, f);
          const FieldDescriptor* key = entry->GetDescriptor()->map_key();
          if (key->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {  // distinct keys
            entry->GetReflection()->SetString(entry, key, std::to_string(k) + String());
          } else {
            Set(entry, key, depth + 1);
          }
          Set(entry, entry->GetDescriptor()->map_value(), depth + 1);
        }
      } else if (f->is_repeated()) {
        for (int k = Int(0, 3); k > 0; --k) Add(m, f, depth + 1);
      } else {
        Set(m, f, depth + 1);
      }
    }
  }

 private:
  bool Coin(int one_in) { return Int(1, one_in) == 1; }
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  int64_t I64() {
    static constexpr int64_t kSome[] = {0, 1, -1, 42, 1ll << 53, INT64_MAX, INT64_MIN};
    return Coin(2) ? kSome[Int(0, 6)] : static_cast<int64_t>(rng_());
  }
  double Double() {
    static constexpr double kSome[] = {
        0.0, -0.0, 0.1, 1.0 / 3, 1e21, 1e-7, 123456789.125, 2.5e-300, 1.7976931348623157e308};
    return Coin(2) ? kSome[Int(0, 8)] : std::uniform_real_distribution<double>(-1e6, 1e6)(rng_);
  }
  std::string String() {
    static const char* kSome[] = {"",
                                  "a",
                                  "alice",
                                  "<img src=x onerror=alert(1)>",
                                  "é ü 中",
                                  "tab\there",
                                  "quote\"back\\slash",
                                  "line\u2028sep"};
    return kSome[Int(0, 7)];
  }

  struct Setter;
  // A random value for `f`, given to `set`.
  void Value(const FieldDescriptor* f, int depth, Setter set) {
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        set.i32(static_cast<int32_t>(I64()));
        break;
      case FieldDescriptor::CPPTYPE_UINT32:
        set.u32(static_cast<uint32_t>(I64()));
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        set.i64(I64());
        break;
      case FieldDescriptor::CPPTYPE_UINT64:
        set.u64(static_cast<uint64_t>(I64()));
        break;
      case FieldDescriptor::CPPTYPE_DOUBLE:
        set.d(Double());
        break;
      case FieldDescriptor::CPPTYPE_FLOAT:
        set.f(static_cast<float>(Double()));
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        set.b(Coin(2));
        break;
      case FieldDescriptor::CPPTYPE_ENUM: {
        const auto* e = f->enum_type();
        set.e(e->value(Int(0, e->value_count() - 1))->number());
        break;
      }
      case FieldDescriptor::CPPTYPE_STRING: {
        std::string s = String();
        if (f->type() == FieldDescriptor::TYPE_BYTES) s += std::string("\0\xff\x80", 3);
        set.s(std::move(s));
        break;
      }
      case FieldDescriptor::CPPTYPE_MESSAGE:
        Fill(set.m(), depth);
        break;
    }
  }

  void Set(Message* m, const FieldDescriptor* f, int depth) {
    Value(f, depth, Setter{m, f, m->GetReflection(), false});
  }

  void Add(Message* m, const FieldDescriptor* f, int depth) {
    Value(f, depth, Setter{m, f, m->GetReflection(), true});
  }

  struct Setter {
    Message* msg;
    const FieldDescriptor* fd;
    const google::protobuf::Reflection* r;
    bool add;
    void i32(int32_t v) { add ? r->AddInt32(msg, fd, v) : r->SetInt32(msg, fd, v); }
    void u32(uint32_t v) { add ? r->AddUInt32(msg, fd, v) : r->SetUInt32(msg, fd, v); }
    void i64(int64_t v) { add ? r->AddInt64(msg, fd, v) : r->SetInt64(msg, fd, v); }
    void u64(uint64_t v) { add ? r->AddUInt64(msg, fd, v) : r->SetUInt64(msg, fd, v); }
    void d(double v) { add ? r->AddDouble(msg, fd, v) : r->SetDouble(msg, fd, v); }
    void f(float v) { add ? r->AddFloat(msg, fd, v) : r->SetFloat(msg, fd, v); }
    void b(bool v) { add ? r->AddBool(msg, fd, v) : r->SetBool(msg, fd, v); }
    void e(int v) { add ? r->AddEnumValue(msg, fd, v) : r->SetEnumValue(msg, fd, v); }
    void s(std::string v) {
      add ? r->AddString(msg, fd, std::move(v)) : r->SetString(msg, fd, std::move(v));
    }
    Message* m() { return add ? r->AddMessage(msg, fd) : r->MutableMessage(msg, fd); }
  };

  std::mt19937_64 rng_;
  int max_map_;
};

// Every message type of api.proto.
std::vector<const Descriptor*> ApiMessages() {
  std::vector<const Descriptor*> out;
  const auto* file = v1::Job::descriptor()->file();
  for (int i = 0; i < file->message_type_count(); ++i) out.push_back(file->message_type(i));
  return out;
}

TEST(ProtoJson, EveryApiMessageFilledAtRandomPrintsAsProtobufDoes) {
  auto* factory = google::protobuf::MessageFactory::generated_factory();
  int compared = 0;
  for (const Descriptor* d : ApiMessages()) {
    for (uint32_t seed = 0; seed < 20; ++seed) {
      std::unique_ptr<Message> m(factory->GetPrototype(d)->New());
      Filler(seed * 7919 + d->index(), /*max_map=*/1).Fill(m.get(), 0);
      ASSERT_EQ(ProtoJson(*m), Theirs(*m)) << d->full_name() << " seed " << seed;
      ++compared;
    }
  }
  EXPECT_GT(compared, 500);
}

TEST(ProtoJson, MapsOfSeveralEntriesReadBackAsTheSameMessage) {
  auto* factory = google::protobuf::MessageFactory::generated_factory();
  for (const Descriptor* d :
       {v1::Job::descriptor(), v1::Node::descriptor(), v1::ListResponse::descriptor()}) {
    for (uint32_t seed = 0; seed < 20; ++seed) {
      std::unique_ptr<Message> m(factory->GetPrototype(d)->New());
      Filler(seed, /*max_map=*/6).Fill(m.get(), 0);
      std::unique_ptr<Message> back(m->New());
      const std::string json = ProtoJson(*m);
      auto parsed = google::protobuf::util::JsonStringToMessage(json, back.get());
      ASSERT_TRUE(parsed.ok()) << parsed.ToString() << "\n" << json;
      std::string diff;
      google::protobuf::util::MessageDifferencer differ;
      differ.ReportDifferencesToString(&diff);
      // A -0.0 reads back as 0, which proto3 then holds as unset: equal in value.
      differ.set_message_field_comparison(google::protobuf::util::MessageDifferencer::EQUIVALENT);
      EXPECT_TRUE(differ.Compare(*m, *back)) << d->full_name() << " seed " << seed << "\n" << diff;
    }
  }
}

TEST(ProtoJson, StringsEscapeEveryCharacterAsProtobufDoes) {
  std::string all;
  for (int c = 1; c < 0x80; ++c) all.push_back(static_cast<char>(c));
  all += "é中😀\u2028\u2029";
  v1::JobSpec spec;
  spec.set_name(all);
  spec.add_command(all);
  (*spec.mutable_env())[all] = all;
  EXPECT_EQ(ProtoJson(spec), Theirs(spec));
}

TEST(ProtoJson, DoublesFloatsAndUnknownEnumsPrintAsProtobufDoes) {
  for (double v :
       {0.1, 1.0 / 3, 1e21, 1e-7, 5e-324, 123456789.125, -0.0, 1e15, 1e16, 2.0 / 3e9,
        std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
        -std::numeric_limits<double>::infinity()}) {
    v1::TenantShare share;
    share.set_weight(v);
    EXPECT_EQ(ProtoJson(share), Theirs(share)) << v;
  }
  v1::Job job;
  job.set_state(static_cast<v1::JobState>(977));  // from a newer coordinator
  EXPECT_EQ(ProtoJson(job), Theirs(job));
  EXPECT_NE(ProtoJson(job).find("977"), std::string::npos);
}

TEST(ProtoJson, WellKnownTypesGoToProtobufsOwnPrinter) {
  google::protobuf::Timestamp at;
  at.set_seconds(1796601600);
  at.set_nanos(250000000);
  EXPECT_EQ(ProtoJson(at), Theirs(at));
  EXPECT_EQ(ProtoJson(at), "\"2026-12-07T00:00:00.250Z\"");
}

}  // namespace
}  // namespace baton
