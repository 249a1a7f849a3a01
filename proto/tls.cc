#include "proto/tls.h"

#include <grpcpp/security/server_credentials.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fstream>
#include <optional>
#include <sstream>

#include "common/net.h"

namespace baton {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;

Bio MemBio(std::string_view pem) {
  return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

std::string OpenSslError() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "not PEM";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

absl::StatusOr<std::string> ReadPem(const char* flag, const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError(std::string(flag) + " is not set");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(std::string(flag) + " " + path +
                                      ": cannot read it (scripts/certs.sh makes the cluster CA "
                                      "and certificates; --insecure is for loopback only)");
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (text.size() > (1 << 20)) {
    return absl::InvalidArgumentError(std::string(flag) + " " + path + ": larger than 1 MiB");
  }
  return text;
}

// Every certificate in `pem`, at least one.
absl::Status CheckCertificates(const char* flag, const std::string& path, std::string_view pem) {
  Bio bio = MemBio(pem);
  int count = 0;
  for (;;) {
    X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!cert) break;
    ++count;
  }
  ERR_clear_error();
  if (count == 0) {
    return absl::InvalidArgumentError(std::string(flag) + " " + path +
                                      ": holds no PEM certificate");
  }
  return absl::OkStatus();
}

absl::Status CheckKeyMatches(const TlsOptions& o, std::string_view cert_pem,
                             std::string_view key_pem) {
  Bio cb = MemBio(cert_pem), kb = MemBio(key_pem);
  X509Ptr cert(PEM_read_bio_X509(cb.get(), nullptr, nullptr, nullptr));
  KeyPtr key(PEM_read_bio_PrivateKey(kb.get(), nullptr, nullptr, nullptr));
  if (!key) {
    return absl::InvalidArgumentError("--tls-key " + o.key_file + ": not a PEM private key (" +
                                      OpenSslError() + ")");
  }
  if (!cert || X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError("--tls-key " + o.key_file +
                                      " does not belong to --tls-cert " + o.cert_file);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TlsMaterial> LoadTls(const TlsOptions& options, bool need_cert) {
  TlsMaterial m;
  m.insecure = options.insecure;
  if (options.insecure) return m;
  auto ca = ReadPem("--tls-ca", options.ca_file);
  if (!ca.ok()) return ca.status();
  if (auto s = CheckCertificates("--tls-ca", options.ca_file, *ca); !s.ok()) return s;
  m.ca = std::move(*ca);
  if (options.cert_file.empty() && options.key_file.empty() && !need_cert) return m;
  auto cert = ReadPem("--tls-cert", options.cert_file);
  if (!cert.ok()) return cert.status();
  if (auto s = CheckCertificates("--tls-cert", options.cert_file, *cert); !s.ok()) return s;
  auto key = ReadPem("--tls-key", options.key_file);
  if (!key.ok()) return key.status();
  if (auto s = CheckKeyMatches(options, *cert, *key); !s.ok()) return s;
  m.cert = std::move(*cert);
  m.key = std::move(*key);
  return m;
}

absl::Status CheckInsecureAllowed(std::string_view what, std::string_view address) {
  auto hp = SplitHostPort(address);
  if (!hp.ok()) return hp.status();
  if (!IsLoopback(hp->first)) {
    return absl::FailedPreconditionError(
        "--insecure (plaintext) is refused for " + std::string(what) + " " + std::string(address) +
        ": plaintext is allowed on loopback only; use TLS (--tls-ca/--tls-cert/--tls-key, "
        "scripts/certs.sh)");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(
    const TlsMaterial& tls, std::string_view listen) {
  if (tls.insecure) {
    if (auto s = CheckInsecureAllowed("--listen", listen); !s.ok()) return s;
    return grpc::InsecureServerCredentials();
  }
  if (tls.cert.empty()) return absl::InvalidArgumentError("a TLS server needs --tls-cert");
  grpc::SslServerCredentialsOptions opts(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  opts.pem_root_certs = tls.ca;
  opts.pem_key_cert_pairs.push_back({tls.key, tls.cert});
  return grpc::SslServerCredentials(opts);
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentials(
    const TlsMaterial& tls, std::string_view target) {
  if (tls.insecure) {
    if (auto s = CheckInsecureAllowed("the connection to", target); !s.ok()) return s;
    return grpc::InsecureChannelCredentials();
  }
  grpc::SslCredentialsOptions opts;
  opts.pem_root_certs = tls.ca;
  opts.pem_private_key = tls.key;
  opts.pem_cert_chain = tls.cert;
  return grpc::SslCredentials(opts);
}

void VerifyServerAs(const std::string& name, grpc::ChannelArguments* args) {
  args->SetSslTargetNameOverride(name);
}

Peer PeerFromPem(std::string_view pem) {
  Peer peer;
  Bio bio = MemBio(pem);
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) {
    ERR_clear_error();
    return peer;
  }
  X509_NAME* subject = X509_get_subject_name(cert.get());
  auto field = [&](int nid) -> std::optional<std::string> {
    // Exactly one entry: a subject with two O= or CN= entries names nobody.
    int at = X509_NAME_get_index_by_NID(subject, nid, -1);
    if (at < 0 || X509_NAME_get_index_by_NID(subject, nid, at) >= 0) return std::nullopt;
    ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, at));
    unsigned char* utf8 = nullptr;
    int len = ASN1_STRING_to_UTF8(&utf8, data);
    if (len < 0) return std::nullopt;
    std::string out(reinterpret_cast<char*>(utf8), static_cast<size_t>(len));
    OPENSSL_free(utf8);
    return out;
  };
  auto org = field(NID_organizationName);
  auto cn = field(NID_commonName);
  if (!org || !cn || cn->empty()) {
    peer.kind = Peer::Kind::kOther;
    return peer;
  }
  peer.name = *cn;
  if (*org == kCoordinatorOrganization) {
    peer.kind = Peer::Kind::kCoordinator;
  } else if (*org == kNodeOrganization) {
    peer.kind = Peer::Kind::kNode;
  } else {
    peer.kind = Peer::Kind::kOther;
  }
  return peer;
}

Peer PeerOf(const grpc::ServerContextBase& ctx) {
  std::shared_ptr<const grpc::AuthContext> auth = ctx.auth_context();
  if (!auth || !auth->IsPeerAuthenticated()) return {};
  // gRPC verified the chain against our CA during the handshake (REQUEST_..._AND_VERIFY).
  auto pems = auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
  if (pems.empty()) return {};
  return PeerFromPem(std::string_view(pems.front().data(), pems.front().size()));
}

}  // namespace baton
