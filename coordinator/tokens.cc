#include "coordinator/tokens.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <tuple>

namespace baton {
namespace {

constexpr size_t kIdBytes = 8;       // 16 hex digits: finds the record
constexpr size_t kSecretBytes = 32;  // 256 bits
constexpr size_t kMaxTokenLength = 128;

std::string Sha256(std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out, &len, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string Hex(const unsigned char* data, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[data[i] >> 4];
    out += kDigits[data[i] & 15];
  }
  return out;
}

// base64url without padding: the secret travels in HTTP/2 headers and shell variables.
std::string Base64Url(const unsigned char* data, size_t n) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; ++i) {
    acc = (acc << 8) | data[i];
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(acc >> bits) & 63];
    }
  }
  if (bits > 0) out += kAlphabet[(acc << (6 - bits)) & 63];
  return out;
}

bool IsHexId(std::string_view s) {
  return s.size() == 2 * kIdBytes && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isxdigit(c) && !std::isupper(c);
         });
}

absl::Status Refused(const std::string& why) {
  return absl::UnauthenticatedError("service token refused: " + why);
}

}  // namespace

void TokenRegistry::Load(const std::vector<v1::StoredToken>& stored) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  tokens_.clear();
  for (const auto& t : stored) tokens_[t.id()] = t;
}

absl::StatusOr<v1::StoredToken> TokenRegistry::Verify(std::string_view token) const {
  if (token.size() > kMaxTokenLength || token.substr(0, 4) != kTokenPrefix) {
    return Refused("not a baton token (btk_<id>_<secret>)");
  }
  std::string_view rest = token.substr(4);
  size_t sep = rest.find('_');
  if (sep == std::string_view::npos || !IsHexId(rest.substr(0, sep))) {
    return Refused("not a baton token (btk_<id>_<secret>)");
  }
  std::string id(rest.substr(0, sep));
  std::string hash = Sha256(rest.substr(sep + 1));
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = tokens_.find(id);
  // Unknown and wrong secrets read the same to the caller.
  if (it == tokens_.end() || it->second.secret_sha256().size() != hash.size() ||
      CRYPTO_memcmp(it->second.secret_sha256().data(), hash.data(), hash.size()) != 0) {
    return Refused("unknown token or wrong secret");
  }
  const v1::StoredToken& t = it->second;
  if (t.revoked_ms() != 0) {
    return Refused("token " + id + " was revoked by " + t.revoked_by() + " at " +
                   absl::FormatTime(absl::FromUnixMillis(t.revoked_ms()), absl::UTCTimeZone()));
  }
  if (clock_->NowMs() >= t.expires_ms()) {
    return Refused("token " + id + " expired at " +
                   absl::FormatTime(absl::FromUnixMillis(t.expires_ms()), absl::UTCTimeZone()));
  }
  return t;
}

absl::StatusOr<TokenRegistry::Minted> TokenRegistry::Mint(const v1::CreateTokenRequest& req,
                                                          const std::string& created_by) const {
  if (req.ttl_seconds() < 0 || absl::Seconds(req.ttl_seconds()) > kMaxTokenTtl) {
    return absl::InvalidArgumentError("ttl: must be between 1s and 3650d");
  }
  if (req.comment().size() > 1024) return absl::InvalidArgumentError("comment: over 1 KiB");
  absl::Duration ttl = req.ttl_seconds() == 0 ? kDefaultTokenTtl : absl::Seconds(req.ttl_seconds());
  unsigned char id[kIdBytes], secret[kSecretBytes];
  if (RAND_bytes(id, sizeof id) != 1 || RAND_bytes(secret, sizeof secret) != 1) {
    return absl::InternalError("no randomness for a token (OpenSSL RAND_bytes failed)");
  }
  Minted m;
  std::string secret_text = Base64Url(secret, sizeof secret);
  m.record.set_id(Hex(id, sizeof id));
  m.record.set_secret_sha256(Sha256(secret_text));
  m.record.set_user(req.user());
  m.record.set_tenant(req.tenant());
  m.record.set_created_by(created_by);
  absl::Time now = clock_->Now();
  m.record.set_created_ms(absl::ToUnixMillis(now));
  m.record.set_expires_ms(absl::ToUnixMillis(now + ttl));
  m.record.set_comment(req.comment());
  m.token = std::string(kTokenPrefix) + m.record.id() + "_" + secret_text;
  return m;
}

void TokenRegistry::Add(const v1::StoredToken& record) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  tokens_[record.id()] = record;
}

absl::StatusOr<v1::StoredToken> TokenRegistry::Revoke(const std::string& id,
                                                      const std::string& by) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  auto it = tokens_.find(id);
  if (it == tokens_.end()) return absl::NotFoundError("no token with id '" + id + "'");
  if (it->second.revoked_ms() == 0) {
    it->second.set_revoked_ms(clock_->NowMs());
    it->second.set_revoked_by(by);
  }
  return it->second;
}

std::vector<v1::StoredToken> TokenRegistry::List(bool all) const {
  std::vector<v1::StoredToken> out;
  int64_t now = clock_->NowMs();
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    for (const auto& [id, t] : tokens_) {
      if (all || (t.revoked_ms() == 0 && now < t.expires_ms())) out.push_back(t);
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::make_tuple(b.created_ms(), b.id()) < std::make_tuple(a.created_ms(), a.id());
  });
  return out;
}

v1::TokenInfo TokenRegistry::Info(const v1::StoredToken& t) {
  v1::TokenInfo info;
  info.set_id(t.id());
  info.set_user(t.user());
  info.set_tenant(t.tenant());
  info.set_created_by(t.created_by());
  info.set_created_ms(t.created_ms());
  info.set_expires_ms(t.expires_ms());
  info.set_revoked_ms(t.revoked_ms());
  info.set_revoked_by(t.revoked_by());
  info.set_comment(t.comment());
  return info;
}

}  // namespace baton
