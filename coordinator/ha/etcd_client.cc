#include "coordinator/ha/etcd_client.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "common/net.h"
#include "proto/rpc_util.h"
#include "proto/tls.h"

namespace baton::ha {
namespace {

struct ParsedEndpoint {
  bool plaintext = false;
  std::string address;  // host:port
};

absl::StatusOr<ParsedEndpoint> ParseEndpoint(const std::string& url) {
  ParsedEndpoint p;
  std::string rest = url;
  if (absl::StartsWith(url, "http://")) {
    p.plaintext = true;
    rest = url.substr(7);
  } else if (absl::StartsWith(url, "https://")) {
    rest = url.substr(8);
  } else if (url.find("://") != std::string::npos) {
    return absl::InvalidArgumentError("etcd endpoint '" + url +
                                      "': the scheme must be http:// or https://");
  }
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (auto hp = SplitHostPort(rest); !hp.ok()) {
    return absl::InvalidArgumentError("etcd endpoint '" + url +
                                      "': " + std::string(hp.status().message()));
  }
  p.address = rest;
  return p;
}

// Errors that say "not this endpoint, not now": the next call tries another member.
bool EndpointFault(absl::StatusCode code) {
  return code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kDeadlineExceeded ||
         code == absl::StatusCode::kCancelled || code == absl::StatusCode::kUnknown;
}

}  // namespace

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(end.back() + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

etcdserverpb::Compare CreateRevisionIs(const std::string& key, int64_t revision) {
  etcdserverpb::Compare c;
  c.set_result(etcdserverpb::Compare::EQUAL);
  c.set_target(etcdserverpb::Compare::CREATE);
  c.set_key(key);
  c.set_create_revision(revision);
  return c;
}

absl::Status CheckEtcdOptions(const EtcdOptions& options) {
  if (options.endpoints.empty()) return absl::InvalidArgumentError("no etcd endpoint given");
  bool any_tls = false;
  for (const auto& url : options.endpoints) {
    auto p = ParseEndpoint(url);
    if (!p.ok()) return p.status();
    if (p->plaintext) {
      if (auto s = CheckInsecureAllowed("etcd endpoint " + url, p->address); !s.ok()) {
        return absl::InvalidArgumentError(std::string(s.message()) +
                                          " (use https:// with --ha-etcd-ca/-cert/-key)");
      }
    } else {
      any_tls = true;
    }
  }
  if (any_tls &&
      (options.ca_file.empty() || options.cert_file.empty() || options.key_file.empty())) {
    return absl::InvalidArgumentError(
        "an https:// etcd endpoint needs --ha-etcd-ca, --ha-etcd-cert and --ha-etcd-key (etcd's "
        "own CA and this coordinator's client certificate for it)");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<EtcdClient>> EtcdClient::Create(const EtcdOptions& options) {
  if (auto s = CheckEtcdOptions(options); !s.ok()) return s;
  std::unique_ptr<EtcdClient> c(new EtcdClient());
  c->endpoints_ = options.endpoints;
  c->timeout_ = options.timeout;
  std::optional<TlsMaterial> tls;
  for (const auto& url : options.endpoints) {
    auto p = ParseEndpoint(url);
    TlsMaterial material;
    if (p->plaintext) {
      material.insecure = true;
    } else {
      if (!tls) {
        TlsOptions o{options.ca_file, options.cert_file, options.key_file, false};
        auto loaded = LoadTls(o, /*need_cert=*/true);
        if (!loaded.ok()) {
          return absl::InvalidArgumentError("etcd TLS: " + std::string(loaded.status().message()));
        }
        tls = *loaded;
      }
      material = *tls;
    }
    auto creds = ChannelCredentials(material, p->address);
    if (!creds.ok()) return creds.status();
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 5000);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 2000);
    args.SetMaxReceiveMessageSize(64 << 20);
    auto ch = grpc::CreateCustomChannel(p->address, *creds, args);
    Endpoint e;
    e.url = url;
    e.kv = etcdserverpb::KV::NewStub(ch);
    e.lease = etcdserverpb::Lease::NewStub(ch);
    e.maintenance = etcdserverpb::Maintenance::NewStub(ch);
    c->channels_.push_back(std::move(e));
  }
  return c;
}

std::unique_ptr<grpc::ClientContext> EtcdClient::Context() const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + timeout_));
  // etcd refuses at once, rather than waiting, when the member has no raft leader.
  ctx->AddMetadata("hasleader", "true");
  return ctx;
}

template <typename Fn>
absl::Status EtcdClient::Call(Fn&& call) {
  size_t i = current_.load() % channels_.size();
  auto ctx = Context();
  grpc::Status g = call(channels_[i], ctx.get());
  if (g.ok()) return absl::OkStatus();
  absl::Status s = FromGrpc(g);
  if (EndpointFault(s.code())) {
    size_t expected = i;
    current_.compare_exchange_strong(expected, (i + 1) % channels_.size());
    return absl::UnavailableError("etcd " + channels_[i].url + ": " + std::string(s.message()));
  }
  return absl::Status(s.code(), "etcd " + channels_[i].url + ": " + std::string(s.message()));
}

absl::StatusOr<etcdserverpb::TxnResponse> EtcdClient::Txn(const etcdserverpb::TxnRequest& req) {
  etcdserverpb::TxnResponse resp;
  absl::Status s =
      Call([&](Endpoint& e, grpc::ClientContext* ctx) { return e.kv->Txn(ctx, req, &resp); });
  if (!s.ok()) return s;
  return resp;
}

absl::StatusOr<etcdserverpb::RangeResponse> EtcdClient::Range(
    const etcdserverpb::RangeRequest& req) {
  etcdserverpb::RangeResponse resp;
  absl::Status s =
      Call([&](Endpoint& e, grpc::ClientContext* ctx) { return e.kv->Range(ctx, req, &resp); });
  if (!s.ok()) return s;
  return resp;
}

absl::StatusOr<etcdserverpb::PutResponse> EtcdClient::Put(const std::string& key,
                                                          const std::string& value, int64_t lease) {
  etcdserverpb::PutRequest req;
  req.set_key(key);
  req.set_value(value);
  req.set_lease(lease);
  etcdserverpb::PutResponse resp;
  absl::Status s =
      Call([&](Endpoint& e, grpc::ClientContext* ctx) { return e.kv->Put(ctx, req, &resp); });
  if (!s.ok()) return s;
  return resp;
}

absl::StatusOr<etcdserverpb::DeleteRangeResponse> EtcdClient::DeleteRange(
    const std::string& key, const std::string& range_end) {
  etcdserverpb::DeleteRangeRequest req;
  req.set_key(key);
  req.set_range_end(range_end);
  etcdserverpb::DeleteRangeResponse resp;
  absl::Status s = Call(
      [&](Endpoint& e, grpc::ClientContext* ctx) { return e.kv->DeleteRange(ctx, req, &resp); });
  if (!s.ok()) return s;
  return resp;
}

absl::StatusOr<etcdserverpb::LeaseGrantResponse> EtcdClient::LeaseGrant(absl::Duration ttl) {
  etcdserverpb::LeaseGrantRequest req;
  req.set_ttl(std::max<int64_t>(1, absl::ToInt64Seconds(absl::Ceil(ttl, absl::Seconds(1)))));
  etcdserverpb::LeaseGrantResponse resp;
  absl::Status s = Call(
      [&](Endpoint& e, grpc::ClientContext* ctx) { return e.lease->LeaseGrant(ctx, req, &resp); });
  if (!s.ok()) return s;
  if (!resp.error().empty()) return absl::UnavailableError("etcd lease grant: " + resp.error());
  return resp;
}

absl::StatusOr<int64_t> EtcdClient::LeaseKeepAlive(int64_t lease) {
  int64_t ttl = 0;
  absl::Status s = Call([&](Endpoint& e, grpc::ClientContext* ctx) {
    auto stream = e.lease->LeaseKeepAlive(ctx);
    etcdserverpb::LeaseKeepAliveRequest req;
    req.set_id(lease);
    etcdserverpb::LeaseKeepAliveResponse resp;
    if (!stream->Write(req) || !stream->Read(&resp)) {
      ctx->TryCancel();
      grpc::Status f = stream->Finish();
      return f.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "keep-alive stream closed") : f;
    }
    ttl = resp.ttl();
    stream->WritesDone();
    return stream->Finish();
  });
  if (!s.ok()) return s;
  return ttl;
}

absl::Status EtcdClient::LeaseRevoke(int64_t lease) {
  etcdserverpb::LeaseRevokeRequest req;
  req.set_id(lease);
  etcdserverpb::LeaseRevokeResponse resp;
  return Call(
      [&](Endpoint& e, grpc::ClientContext* ctx) { return e.lease->LeaseRevoke(ctx, req, &resp); });
}

absl::Status EtcdClient::Compact(int64_t revision) {
  etcdserverpb::CompactionRequest req;
  req.set_revision(revision);
  etcdserverpb::CompactionResponse resp;
  return Call(
      [&](Endpoint& e, grpc::ClientContext* ctx) { return e.kv->Compact(ctx, req, &resp); });
}

absl::StatusOr<etcdserverpb::StatusResponse> EtcdClient::MemberStatus(size_t endpoint) {
  if (endpoint >= channels_.size()) return absl::InvalidArgumentError("no such etcd endpoint");
  etcdserverpb::StatusRequest req;
  etcdserverpb::StatusResponse resp;
  auto ctx = Context();
  grpc::Status g = channels_[endpoint].maintenance->Status(ctx.get(), req, &resp);
  if (!g.ok()) {
    return absl::UnavailableError("etcd " + channels_[endpoint].url + ": " + g.error_message());
  }
  return resp;
}

}  // namespace baton::ha
