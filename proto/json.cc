#include "proto/json.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace baton {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// As protobuf's JsonEscaping: quotes, backslashes and control characters, and also <, >
// and the line separators U+2028/U+2029 (so that the text is safe inside a script).
void AppendString(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t plain = 0;  // start of the run not yet copied
  auto flush = [&](size_t i) { out->append(s.data() + plain, i - plain); };
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    const char* esc = nullptr;
    switch (c) {
      case '"':
        esc = "\\\"";
        break;
      case '\\':
        esc = "\\\\";
        break;
      case '\b':
        esc = "\\b";
        break;
      case '\f':
        esc = "\\f";
        break;
      case '\n':
        esc = "\\n";
        break;
      case '\r':
        esc = "\\r";
        break;
      case '\t':
        esc = "\\t";
        break;
      case '<':
        esc = "\\u003c";
        break;
      case '>':
        esc = "\\u003e";
        break;
      default:
        break;
    }
    if (esc != nullptr) {
      flush(i);
      out->append(esc);
      plain = i + 1;
    } else if (c < 0x20 || c == 0x7f) {
      flush(i);
      out->append("\\u00");
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 15]);
      plain = i + 1;
    } else if (c == 0xe2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
               (static_cast<unsigned char>(s[i + 2]) == 0xa8 ||
                static_cast<unsigned char>(s[i + 2]) == 0xa9)) {
      flush(i);
      out->append(static_cast<unsigned char>(s[i + 2]) == 0xa8 ? "\\u2028" : "\\u2029");
      i += 2;
      plain = i + 1;
    }
  }
  flush(s.size());
  out->push_back('"');
}

// protobuf's SimpleDtoa/SimpleFtoa: the shorter precision when it reads back the same.
template <typename T>
void AppendFloating(T v, std::string* out) {
  if (std::isnan(v)) return out->append("\"NaN\""), void();
  if (std::isinf(v)) return out->append(v > 0 ? "\"Infinity\"" : "\"-Infinity\""), void();
  constexpr bool kDouble = sizeof(T) == sizeof(double);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*g", kDouble ? 15 : 6, static_cast<double>(v));
  const bool exact = kDouble ? std::strtod(buf, nullptr) == static_cast<double>(v)
                             : std::strtof(buf, nullptr) == static_cast<float>(v);
  if (!exact) std::snprintf(buf, sizeof buf, "%.*g", kDouble ? 17 : 9, static_cast<double>(v));
  out->append(buf);
}

// What printing one field takes, from its descriptor, once per type.
struct Table;
struct FieldInfo {
  const FieldDescriptor* f = nullptr;
  std::string key;               // "\"jsonName\":"
  const Table* child = nullptr;  // messages and map entries
};
struct Table {
  const google::protobuf::Descriptor* d = nullptr;
  bool well_known = false;                     // google.protobuf.*: protobuf's printer
  std::vector<FieldInfo> by_number;            // index: field number (dense for our messages)
  absl::flat_hash_map<int, FieldInfo> sparse;  // numbers past kDense
  const FieldInfo* Find(uint32_t number) const {
    if (number < by_number.size()) return by_number[number].f ? &by_number[number] : nullptr;
    auto it = sparse.find(static_cast<int>(number));
    return it == sparse.end() ? nullptr : &it->second;
  }
};
constexpr int kDense = 256;

// Tables for every type reachable from a root, made once and never freed.
const Table* TableFor(const google::protobuf::Descriptor* root) {
  static absl::Mutex mu(absl::kConstInit);
  static auto* tables = new absl::flat_hash_map<const google::protobuf::Descriptor*, Table*>();
  absl::MutexLock lock(&mu);
  std::vector<std::pair<Table*, const google::protobuf::Descriptor*>> unfilled;
  auto get = [&](const google::protobuf::Descriptor* d) {
    Table*& t = (*tables)[d];
    if (t == nullptr) {
      t = new Table;
      t->d = d;
      unfilled.emplace_back(t, d);
    }
    return t;
  };
  Table* out = get(root);
  while (!unfilled.empty()) {
    auto [t, d] = unfilled.back();
    unfilled.pop_back();
    t->well_known = d->file()->package() == "google.protobuf";
    if (t->well_known) continue;
    for (int i = 0; i < d->field_count(); ++i) {
      const FieldDescriptor* f = d->field(i);
      FieldInfo info;
      info.f = f;
      info.key = "\"" + f->json_name() + "\":";
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) info.child = get(f->message_type());
      if (f->number() < kDense) {
        if (t->by_number.size() <= static_cast<size_t>(f->number())) {
          t->by_number.resize(f->number() + 1);
        }
        t->by_number[f->number()] = std::move(info);
      } else {
        t->sparse[f->number()] = std::move(info);
      }
    }
  }
  return out;
}

// The wire format, as far as printing needs it. Bytes a generated serializer wrote; a
// malformed input stops the walk (Reader::ok).
class Reader {
 public:
  Reader(const char* p, const char* end) : p_(p), end_(end) {}
  bool done() const { return p_ >= end_ || !ok_; }
  bool ok() const { return ok_; }
  uint64_t Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && p_ < end_; shift += 7) {
      const auto b = static_cast<uint8_t>(*p_++);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (b < 0x80) return v;
    }
    ok_ = false;
    return 0;
  }
  template <typename T>
  T Fixed() {
    T v{};
    if (end_ - p_ < static_cast<ptrdiff_t>(sizeof v)) return ok_ = false, v;
    std::memcpy(&v, p_, sizeof v);
    p_ += sizeof v;
    return v;
  }
  std::string_view Bytes() {
    const uint64_t n = Varint();
    if (!ok_ || n > static_cast<uint64_t>(end_ - p_)) return ok_ = false, std::string_view();
    std::string_view s(p_, n);
    p_ += n;
    return s;
  }
  void Skip(int wire_type) {
    switch (wire_type) {
      case 0:
        Varint();
        break;
      case 1:
        Fixed<uint64_t>();
        break;
      case 2:
        Bytes();
        break;
      case 5:
        Fixed<uint32_t>();
        break;
      default:
        ok_ = false;  // groups: not in proto3
    }
  }

 private:
  const char* p_;
  const char* end_;
  bool ok_ = true;
};

void WalkMessage(std::string_view bytes, const Table& t, std::string* out);

// One scalar of `f` from `r` (its wire type already read).
void AppendScalar(Reader& r, const FieldDescriptor* f, std::string* out) {
  switch (f->type()) {
    case FieldDescriptor::TYPE_INT32:
      absl::StrAppend(out, static_cast<int32_t>(r.Varint()));
      break;
    case FieldDescriptor::TYPE_UINT32:
      absl::StrAppend(out, static_cast<uint32_t>(r.Varint()));
      break;
    case FieldDescriptor::TYPE_SINT32: {
      const auto v = static_cast<uint32_t>(r.Varint());
      absl::StrAppend(out, static_cast<int32_t>((v >> 1) ^ (~(v & 1) + 1)));
      break;
    }
    case FieldDescriptor::TYPE_FIXED32:
      absl::StrAppend(out, r.Fixed<uint32_t>());
      break;
    case FieldDescriptor::TYPE_SFIXED32:
      absl::StrAppend(out, r.Fixed<int32_t>());
      break;
    case FieldDescriptor::TYPE_INT64:
      absl::StrAppend(out, "\"", static_cast<int64_t>(r.Varint()), "\"");
      break;
    case FieldDescriptor::TYPE_UINT64:
      absl::StrAppend(out, "\"", r.Varint(), "\"");
      break;
    case FieldDescriptor::TYPE_SINT64: {
      const uint64_t v = r.Varint();
      absl::StrAppend(out, "\"", static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1)), "\"");
      break;
    }
    case FieldDescriptor::TYPE_FIXED64:
      absl::StrAppend(out, "\"", r.Fixed<uint64_t>(), "\"");
      break;
    case FieldDescriptor::TYPE_SFIXED64:
      absl::StrAppend(out, "\"", r.Fixed<int64_t>(), "\"");
      break;
    case FieldDescriptor::TYPE_DOUBLE:
      AppendFloating(r.Fixed<double>(), out);
      break;
    case FieldDescriptor::TYPE_FLOAT:
      AppendFloating(r.Fixed<float>(), out);
      break;
    case FieldDescriptor::TYPE_BOOL:
      out->append(r.Varint() != 0 ? "true" : "false");
      break;
    case FieldDescriptor::TYPE_ENUM: {
      const auto v = static_cast<int32_t>(r.Varint());
      const auto* value = f->enum_type()->FindValueByNumber(v);
      if (value != nullptr) {
        AppendString(value->name(), out);
      } else {
        absl::StrAppend(out, v);  // a number this build does not know
      }
      break;
    }
    default:
      break;  // strings, bytes and messages: AppendValue
  }
}

// One value of `info`'s field at `r` (its tag already read).
void AppendValue(Reader& r, const FieldInfo& info, std::string* out) {
  const FieldDescriptor* f = info.f;
  switch (f->type()) {
    case FieldDescriptor::TYPE_STRING:
      AppendString(r.Bytes(), out);
      break;
    case FieldDescriptor::TYPE_BYTES: {
      const std::string_view b = r.Bytes();
      out->push_back('"');
      out->append(absl::Base64Escape(absl::string_view(b.data(), b.size())));
      out->push_back('"');
      break;
    }
    case FieldDescriptor::TYPE_MESSAGE:
      WalkMessage(r.Bytes(), *info.child, out);
      break;
    default:
      AppendScalar(r, f, out);
  }
}

// A map key: always a JSON string.
void AppendKey(Reader& r, const FieldDescriptor* f, std::string* out) {
  if (f->type() == FieldDescriptor::TYPE_STRING) return AppendString(r.Bytes(), out);
  const bool quoted = f->cpp_type() == FieldDescriptor::CPPTYPE_INT64 ||
                      f->cpp_type() == FieldDescriptor::CPPTYPE_UINT64;
  if (!quoted) out->push_back('"');
  AppendScalar(r, f, out);
  if (!quoted) out->push_back('"');
}

// What a field left out of the bytes reads as.
void AppendDefault(const FieldDescriptor* f, bool key, std::string* out) {
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING:
      out->append("\"\"");
      break;
    case FieldDescriptor::CPPTYPE_MESSAGE:
      out->append("{}");
      break;
    case FieldDescriptor::CPPTYPE_BOOL:
      out->append(key ? "\"false\"" : "false");
      break;
    case FieldDescriptor::CPPTYPE_ENUM: {
      const auto* zero = f->enum_type()->FindValueByNumber(0);
      if (zero != nullptr) {
        AppendString(zero->name(), out);
      } else {
        out->append("0");
      }
      break;
    }
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT64:
      out->append("\"0\"");
      break;
    default:
      out->append(key ? "\"0\"" : "0");
  }
}

// A map entry as "key":value; the serializer writes the key, then the value.
void AppendEntry(std::string_view bytes, const Table& entry, std::string* out) {
  const FieldInfo* key = entry.Find(1);
  const FieldInfo* value = entry.Find(2);
  bool have_key = false, have_value = false;
  Reader r(bytes.data(), bytes.data() + bytes.size());
  while (!r.done()) {
    const uint64_t tag = r.Varint();
    const auto number = static_cast<uint32_t>(tag >> 3);
    if (number == 1 && !have_key && !have_value) {
      AppendKey(r, key->f, out);
      out->push_back(':');
      have_key = true;
    } else if (number == 2 && !have_value) {
      if (!have_key) {
        AppendDefault(key->f, /*key=*/true, out);
        out->push_back(':');
        have_key = true;
      }
      AppendValue(r, *value, out);
      have_value = true;
    } else {
      r.Skip(static_cast<int>(tag & 7));
    }
  }
  if (!have_key) {
    AppendDefault(key->f, /*key=*/true, out);
    out->push_back(':');
  }
  if (!have_value) AppendDefault(value->f, /*key=*/false, out);
}

// A message from its wire bytes, fields in the order the serializer wrote them (by
// number); a repeated field's elements are adjacent there, so an array closes when
// another field starts.
void WalkMessage(std::string_view bytes, const Table& t, std::string* out) {
  if (t.well_known) {
    std::unique_ptr<Message> m(
        google::protobuf::MessageFactory::generated_factory()->GetPrototype(t.d)->New());
    std::string json;
    if (m->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      (void)google::protobuf::util::MessageToJsonString(*m, &json);
    }
    out->append(json.empty() ? "{}" : json);
    return;
  }
  out->push_back('{');
  Reader r(bytes.data(), bytes.data() + bytes.size());
  const FieldInfo* open = nullptr;  // the repeated field whose array is open
  bool first = true;
  auto close = [&] {
    if (open != nullptr) out->push_back(open->f->is_map() ? '}' : ']');
    open = nullptr;
  };
  while (!r.done()) {
    const uint64_t tag = r.Varint();
    const int wire_type = static_cast<int>(tag & 7);
    const FieldInfo* info = t.Find(static_cast<uint32_t>(tag >> 3));
    if (info == nullptr) {  // unknown: left out, as protobuf does
      r.Skip(wire_type);
      continue;
    }
    if (!info->f->is_repeated()) {
      close();
      if (!first) out->push_back(',');
      first = false;
      out->append(info->key);
      AppendValue(r, *info, out);
      continue;
    }
    if (open != info) {
      close();
      if (!first) out->push_back(',');
      first = false;
      out->append(info->key);
      out->push_back(info->f->is_map() ? '{' : '[');
      open = info;
    } else {
      out->push_back(',');
    }
    if (info->f->is_map()) {
      AppendEntry(r.Bytes(), *info->child, out);
    } else if (wire_type == 2 && info->f->is_packable()) {  // packed scalars
      std::string_view packed = r.Bytes();
      Reader p(packed.data(), packed.data() + packed.size());
      for (bool one = true; !p.done(); one = false) {
        if (!one) out->push_back(',');
        AppendScalar(p, info->f, out);
      }
    } else {
      AppendValue(r, *info, out);
    }
  }
  close();
  out->push_back('}');
}

}  // namespace

void AppendProtoJson(const Message& msg, std::string* out) {
  const std::string bytes = msg.SerializeAsString();
  WalkMessage(bytes, *TableFor(msg.GetDescriptor()), out);
}

std::string ProtoJson(const Message& msg) {
  std::string out;
  AppendProtoJson(msg, &out);
  return out;
}

}  // namespace baton
