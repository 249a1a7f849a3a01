// A real etcd for tests and benchmarks: N members on loopback (free ports), data dirs on
// tmpfs (/dev/shm: etcd 3.4 has no --unsafe-no-fsync), each member a child process that
// can be killed and started again, torn down with everything at scope exit.
// Thread-compatible.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tests/util/subprocess.h"

namespace baton::testing {

class EtcdCluster {
 public:
  // Starts `members` members and waits until the cluster answers (ok() false with why()
  // when etcd is not installed or did not come up). `tls`: clients must use https and a
  // client certificate from etcd's own CA (scripts/certs.sh in pki_dir(): ca.crt,
  // coordinator.{crt,key}, etcd-m<i>.{crt,key}), as docs/ha.md sets etcd up.
  explicit EtcdCluster(int members = 1, bool tls = false);
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  bool ok() const { return why_.empty(); }
  const std::string& why() const { return why_; }
  const std::string& pki_dir() const { return pki_; }
  // "http://127.0.0.1:P,…" (https with tls; what --ha-etcd takes).
  std::string endpoints() const;
  std::string endpoint(int i) const;
  int size() const { return static_cast<int>(members_.size()); }

  // Member i gets `sig` and is waited for (it stays down until Start).
  void Kill(int i, int sig = 9);
  // Starts member i again on its data dir and ports.
  void Start(int i);
  // True once `etcdctl endpoint health` passes for every running member.
  bool WaitHealthy(std::chrono::milliseconds timeout);
  // The index of the member that is raft leader now; -1 when none answers.
  int Leader();

 private:
  struct Member {
    std::string name;
    int client_port = 0;
    int peer_port = 0;
    std::unique_ptr<Subprocess> process;
  };
  // etcdctl's argv prefix for member i (its TLS flags where needed).
  std::vector<std::string> Etcdctl(int i) const;
  std::string dir_;
  std::string pki_;
  bool tls_ = false;
  std::string why_;
  std::vector<Member> members_;
  int starts_ = 0;
};

}  // namespace baton::testing
