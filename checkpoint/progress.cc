#include "checkpoint/progress.h"

#include <cctype>
#include <charconv>
#include <map>
#include <string>

#include "common/status.h"

namespace baton::checkpoint {
namespace {

// A tiny reader for flat JSON objects of string and integer values.
class FlatJson {
 public:
  explicit FlatJson(const std::string& text) : text_(text) {}

  absl::Status Parse(std::map<std::string, std::string>* strings,
                     std::map<std::string, int64_t>* ints) {
    if (!Consume('{')) return Error("expected '{'");
    if (Consume('}')) return End();
    do {
      std::string key;
      BATON_RETURN_IF_ERROR(ReadString(&key));
      if (!Consume(':')) return Error("expected ':' after \"" + key + "\"");
      SkipSpace();
      if (pos_ < text_.size() && text_[pos_] == '"') {
        BATON_RETURN_IF_ERROR(ReadString(&(*strings)[key]));
      } else {
        BATON_RETURN_IF_ERROR(ReadInt(&(*ints)[key]));
      }
    } while (Consume(','));
    if (!Consume('}')) return Error("expected ',' or '}'");
    return End();
  }

 private:
  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool Consume(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  absl::Status ReadString(std::string* out) {
    if (!Consume('"')) return Error("expected a string");
    const size_t close = text_.find('"', pos_);
    if (close == std::string::npos) return Error("unterminated string");
    *out = text_.substr(pos_, close - pos_);
    if (out->find('\\') != std::string::npos) return Error("escapes are not supported");
    pos_ = close + 1;
    return absl::OkStatus();
  }
  absl::Status ReadInt(int64_t* out) {
    auto [end, ec] = std::from_chars(text_.data() + pos_, text_.data() + text_.size(), *out);
    if (ec != std::errc()) return Error("expected an integer or a string");
    pos_ = end - text_.data();
    return absl::OkStatus();
  }
  absl::Status End() {
    SkipSpace();
    return pos_ == text_.size() ? absl::OkStatus() : Error("trailing characters");
  }
  absl::Status Error(const std::string& what) const {
    return absl::InvalidArgumentError("progress file at byte " + std::to_string(pos_) + ": " +
                                      what);
  }

  const std::string& text_;
  size_t pos_ = 0;
};

}  // namespace

std::string EncodeProgress(const Progress& p) {
  return "{\"attempt\":" + std::to_string(p.attempt) + ",\"state\":\"" + p.state +
         "\",\"step\":" + std::to_string(p.step) +
         ",\"committed_step\":" + std::to_string(p.committed_step) +
         ",\"time_ms\":" + std::to_string(p.time_ms) + "}\n";
}

absl::StatusOr<Progress> ParseProgress(const std::string& json) {
  std::map<std::string, std::string> strings;
  std::map<std::string, int64_t> ints;
  BATON_RETURN_IF_ERROR(FlatJson(json).Parse(&strings, &ints));
  Progress p;
  int64_t* fields[] = {&p.attempt, &p.step, &p.committed_step, &p.time_ms};
  const char* names[] = {"attempt", "step", "committed_step", "time_ms"};
  for (int i = 0; i < 4; ++i) {
    auto it = ints.find(names[i]);
    if (it == ints.end()) {
      return absl::InvalidArgumentError(std::string("progress file has no integer \"") + names[i] +
                                        "\"");
    }
    *fields[i] = it->second;
  }
  auto state = strings.find("state");
  if (state == strings.end()) return absl::InvalidArgumentError("progress file has no \"state\"");
  if (state->second != "saving" && state->second != "committed" && state->second != "failed") {
    return absl::InvalidArgumentError("progress file has unknown state \"" + state->second + "\"");
  }
  p.state = state->second;
  return p;
}

}  // namespace baton::checkpoint
