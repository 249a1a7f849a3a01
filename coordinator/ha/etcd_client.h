// A small client of etcd's v3 gRPC API (proto/etcd/, etcd's own protos): the calls the
// HA log and the election make, each with a deadline, over one channel per endpoint.
// A call that fails for want of that endpoint (unavailable, timed out, "no leader")
// moves on to the next endpoint for the following calls: an etcd member that is down or
// cut off from its quorum is left behind. TLS with a client certificate from etcd's own
// CA (docs/ha.md: only coordinators reach etcd); plaintext only where every endpoint is
// loopback. Used by coordinator/ha/. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/etcd/rpc.grpc.pb.h"

namespace baton::ha {

struct EtcdOptions {
  // http://host:port (plaintext: loopback only) or https://host:port; a bare host:port
  // is https.
  std::vector<std::string> endpoints;
  std::string ca_file;    // etcd's CA (PEM): the members' certificates must chain to it
  std::string cert_file;  // this coordinator's client certificate for etcd (PEM)
  std::string key_file;
  absl::Duration timeout = absl::Seconds(2);  // each call's deadline
};

// InvalidArgument naming the bad endpoint (empty list, unknown scheme, no port, http://
// off loopback, TLS files missing or not matching).
absl::Status CheckEtcdOptions(const EtcdOptions& options);

class EtcdClient {
 public:
  static absl::StatusOr<std::unique_ptr<EtcdClient>> Create(const EtcdOptions& options);

  // Every call: Unavailable (retry elsewhere, later) when etcd cannot be reached or has
  // no quorum within the deadline; other codes as etcd returns them.
  absl::StatusOr<etcdserverpb::TxnResponse> Txn(const etcdserverpb::TxnRequest& req);
  absl::StatusOr<etcdserverpb::RangeResponse> Range(const etcdserverpb::RangeRequest& req);
  absl::StatusOr<etcdserverpb::PutResponse> Put(const std::string& key, const std::string& value,
                                                int64_t lease = 0);
  absl::StatusOr<etcdserverpb::DeleteRangeResponse> DeleteRange(const std::string& key,
                                                                const std::string& range_end);
  // A lease of `ttl` (etcd rounds it up to its minimum); its id and granted TTL.
  absl::StatusOr<etcdserverpb::LeaseGrantResponse> LeaseGrant(absl::Duration ttl);
  // One keep-alive: the lease's remaining TTL in seconds, 0 or less when it has expired.
  absl::StatusOr<int64_t> LeaseKeepAlive(int64_t lease);
  absl::Status LeaseRevoke(int64_t lease);
  absl::Status Compact(int64_t revision);
  // One member's status (its own endpoint, not rotated): leader, raft index, db size.
  absl::StatusOr<etcdserverpb::StatusResponse> MemberStatus(size_t endpoint);

  const std::vector<std::string>& endpoints() const { return endpoints_; }

 private:
  struct Endpoint {
    std::string url;
    std::unique_ptr<etcdserverpb::KV::Stub> kv;
    std::unique_ptr<etcdserverpb::Lease::Stub> lease;
    std::unique_ptr<etcdserverpb::Maintenance::Stub> maintenance;
  };
  EtcdClient() = default;
  // Runs `call` against the current endpoint; on a failure that is the endpoint's, the
  // next one serves later calls (this one still fails: the caller decides to retry).
  template <typename Fn>
  absl::Status Call(Fn&& call);
  std::unique_ptr<grpc::ClientContext> Context() const;

  std::vector<std::string> endpoints_;
  std::vector<Endpoint> channels_;
  std::atomic<size_t> current_{0};
  absl::Duration timeout_;
};

// The first key after every key that starts with `prefix` (etcd's range_end for a prefix).
std::string PrefixEnd(const std::string& prefix);
// A Txn compare: `key`'s create revision is `revision` (0: the key does not exist).
etcdserverpb::Compare CreateRevisionIs(const std::string& key, int64_t revision);

}  // namespace baton::ha
