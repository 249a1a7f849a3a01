// TLS for every baton channel, under one cluster CA (scripts/certs.sh makes it): loading
// and checking the PEM files, server and channel credentials, and who the peer of a call
// proved to be with its certificate. Daemons' certificates name their role in the
// subject's organization (O=baton-coordinator, O=baton-node with CN=<node>); people and
// mpirun connect without one (they prove themselves otherwise, or need no identity).
// Plaintext exists only for development on loopback (--insecure). Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace baton {

inline constexpr char kCoordinatorOrganization[] = "baton-coordinator";
inline constexpr char kNodeOrganization[] = "baton-node";

struct TlsOptions {
  std::string ca_file;    // the cluster CA bundle (PEM); trusted for peers of both sides
  std::string cert_file;  // this process's certificate chain (PEM); "" : none (clients)
  std::string key_file;   // its private key (PEM)
  bool insecure = false;  // plaintext, for development: refused unless on loopback
};

// The files' contents, checked: the CA and certificate parse, the key matches.
struct TlsMaterial {
  bool insecure = false;
  std::string ca;
  std::string cert;
  std::string key;
};

// InvalidArgument naming the flag and file when one is missing or does not check.
// `need_cert`: servers must have a certificate; clients may go without.
absl::StatusOr<TlsMaterial> LoadTls(const TlsOptions& options, bool need_cert);

// OK when plaintext may be used with `address` (a host:port on loopback); else
// FailedPrecondition saying why, naming `what` ("--listen", "the coordinator", …).
absl::Status CheckInsecureAllowed(std::string_view what, std::string_view address);

// TLS that asks every client for a certificate and verifies it against the CA when one
// is offered (clients without one get through the handshake; calls that need a daemon's
// identity check PeerOf). Plaintext when `tls.insecure` and `listen` is loopback.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(const TlsMaterial& tls,
                                                                           std::string_view listen);

// TLS verifying the server against the CA (and presenting our certificate when we have
// one). Plaintext when `tls.insecure` and `target` is loopback.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentials(
    const TlsMaterial& tls, std::string_view target);

// Verify the server's certificate against `name` (a DNS SAN) instead of the dialled
// host: how the coordinator checks that the agent at a node's address is that node.
void VerifyServerAs(const std::string& name, grpc::ChannelArguments* args);

// Who a call's peer proved to be with a certificate the CA signed.
struct Peer {
  enum class Kind { kNone, kCoordinator, kNode, kOther };
  Kind kind = Kind::kNone;  // kNone: no verified certificate (or plaintext)
  std::string name;         // the certificate's CN (the node's name for kNode)
};
Peer PeerOf(const grpc::ServerContextBase& ctx);
// The same, from a PEM certificate (exposed for tests).
Peer PeerFromPem(std::string_view pem);

}  // namespace baton
