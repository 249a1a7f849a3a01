#include "common/munge.h"

#include <munge.h>

#include <cstdlib>
#include <memory>

namespace baton {
namespace {

struct CtxFree {
  void operator()(munge_ctx_t ctx) const { munge_ctx_destroy(ctx); }
};
using Ctx = std::unique_ptr<std::remove_pointer_t<munge_ctx_t>, CtxFree>;

absl::StatusOr<Ctx> NewCtx(const std::string& socket) {
  Ctx ctx(munge_ctx_create());
  if (!ctx) return absl::ResourceExhaustedError("munge: cannot allocate a context");
  if (munge_ctx_set(ctx.get(), MUNGE_OPT_SOCKET, socket.c_str()) != EMUNGE_SUCCESS) {
    return absl::InvalidArgumentError("munge socket '" + socket +
                                      "': " + munge_ctx_strerror(ctx.get()));
  }
  return ctx;
}

absl::Status Error(munge_err_t err, munge_ctx_t ctx, const std::string& socket) {
  std::string why = munge_ctx_strerror(ctx) ? munge_ctx_strerror(ctx) : munge_strerror(err);
  switch (err) {
    case EMUNGE_SOCKET:
      return absl::UnavailableError("cannot reach munged at " + socket + ": " + why +
                                    " (is munged running? BATON_MUNGE_SOCKET names its socket)");
    case EMUNGE_CRED_EXPIRED:
      return absl::UnauthenticatedError("MUNGE credential expired (" + why + ")");
    case EMUNGE_CRED_REPLAYED:
      return absl::UnauthenticatedError("MUNGE credential replayed: each is good for one call (" +
                                        why + ")");
    case EMUNGE_CRED_REWOUND:
      return absl::UnauthenticatedError("MUNGE credential from the future: clocks disagree (" +
                                        why + ")");
    default:
      return absl::UnauthenticatedError("MUNGE credential refused: " + why);
  }
}

}  // namespace

absl::StatusOr<std::string> MungeEncode(const std::string& socket, std::string_view payload,
                                        int ttl_seconds) {
  auto ctx = NewCtx(socket);
  if (!ctx.ok()) return ctx.status();
  if (ttl_seconds > 0) munge_ctx_set(ctx->get(), MUNGE_OPT_TTL, ttl_seconds);
  char* cred = nullptr;
  munge_err_t err =
      munge_encode(&cred, ctx->get(), payload.data(), static_cast<int>(payload.size()));
  if (err != EMUNGE_SUCCESS) {
    std::free(cred);
    absl::Status s = Error(err, ctx->get(), socket);
    if (err != EMUNGE_SOCKET) return absl::InternalError(std::string(s.message()));
    return s;
  }
  std::string out(cred);
  std::free(cred);
  return out;
}

absl::StatusOr<MungeCredential> MungeDecode(const std::string& socket,
                                            const std::string& credential) {
  if (credential.empty() || credential.size() > 64 * 1024) {
    return absl::UnauthenticatedError("MUNGE credential refused: empty or larger than 64 KiB");
  }
  auto ctx = NewCtx(socket);
  if (!ctx.ok()) return ctx.status();
  void* payload = nullptr;
  int len = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  munge_err_t err = munge_decode(credential.c_str(), ctx->get(), &payload, &len, &uid, &gid);
  std::unique_ptr<void, decltype(&std::free)> owned(payload, &std::free);
  if (err != EMUNGE_SUCCESS) return Error(err, ctx->get(), socket);
  MungeCredential out;
  out.uid = uid;
  out.gid = gid;
  if (payload != nullptr && len > 0) out.payload.assign(static_cast<char*>(payload), len);
  time_t encoded = 0;
  if (munge_ctx_get(ctx->get(), MUNGE_OPT_ENCODE_TIME, &encoded) == EMUNGE_SUCCESS) {
    out.encoded_unix_s = encoded;
  }
  return out;
}

}  // namespace baton
