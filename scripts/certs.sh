#!/usr/bin/env bash
# The cluster's TLS material, made with openssl: one CA, a certificate for the
# coordinator and one per node agent. Every baton channel is TLS under this CA; a daemon's
# role is in its certificate's organization and a node's name in its CN (and a DNS SAN).
#   scripts/certs.sh DIR ca                         the CA (DIR/ca.crt, DIR/ca.key)
#   scripts/certs.sh DIR coordinator [SAN...]       DIR/coordinator.{crt,key}
#   scripts/certs.sh DIR node NAME [SAN...]         DIR/node-NAME.{crt,key}
#   scripts/certs.sh DIR etcd NAME [SAN...]         DIR/etcd-NAME.{crt,key}: an etcd member
# HA (docs/ha.md): etcd gets a CA of its own (`certs.sh /etc/baton/etcd ca`), whose
# `coordinator` certificate is the coordinators' client certificate for etcd and whose
# `etcd` certificates are the members'; nothing the cluster CA signed is let in.
# A SAN is IP:10.0.0.1 or DNS:coord.example (the addresses clients dial); the coordinator
# always gets DNS:localhost and IP:127.0.0.1, a node DNS:NAME (the coordinator and mpirun
# verify an agent by its node name). Keys are EC P-256, mode 0600; certificates are
# valid for 825 days. Give ca.crt to every client (BATON_CA), coordinator.* to the
# coordinator, node-NAME.* to that node's agent (--tls-ca/--tls-cert/--tls-key).
set -euo pipefail

usage() {
  echo "usage: $0 DIR ca | DIR coordinator [SAN...] | DIR node NAME [SAN...] | DIR etcd NAME [SAN...]" >&2
  exit 2
}
[ $# -ge 2 ] || usage
DIR=$1
KIND=$2
shift 2
mkdir -p "$DIR"
umask 077
DAYS=825

san_list() {
  local out="" s
  for s in "$@"; do
    case "$s" in
      IP:* | DNS:*) out="$out,$s" ;;
      *) echo "certs.sh: SAN '$s' must be IP:ADDRESS or DNS:NAME" >&2; exit 2 ;;
    esac
  done
  echo "${out#,}"
}

# issue NAME SUBJECT SANS: a key and a certificate signed by the CA.
issue() {
  local name=$1 subject=$2 sans=$3
  [ -f "$DIR/ca.key" ] || { echo "certs.sh: no CA in $DIR (run: $0 $DIR ca)" >&2; exit 1; }
  openssl ecparam -name prime256v1 -genkey -noout -out "$DIR/$name.key" 2>/dev/null
  local ext
  ext=$(mktemp)
  cat >"$ext" <<EOF
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=$sans
EOF
  openssl req -new -key "$DIR/$name.key" -subj "$subject" -out "$DIR/$name.csr" 2>/dev/null
  openssl x509 -req -in "$DIR/$name.csr" -CA "$DIR/ca.crt" -CAkey "$DIR/ca.key" \
    -CAcreateserial -CAserial "$DIR/ca.srl" -days "$DAYS" -sha256 -extfile "$ext" \
    -out "$DIR/$name.crt" 2>/dev/null
  rm -f "$ext" "$DIR/$name.csr"
  chmod 0644 "$DIR/$name.crt"
  echo "$DIR/$name.crt"
}

case "$KIND" in
  ca)
    [ -f "$DIR/ca.key" ] && { echo "certs.sh: $DIR/ca.key exists; not replacing it" >&2; exit 1; }
    openssl ecparam -name prime256v1 -genkey -noout -out "$DIR/ca.key" 2>/dev/null
    openssl req -x509 -new -key "$DIR/ca.key" -sha256 -days 3650 -subj "/O=baton/CN=baton cluster CA" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
      -out "$DIR/ca.crt" 2>/dev/null
    chmod 0644 "$DIR/ca.crt"
    echo "$DIR/ca.crt"
    ;;
  coordinator)
    issue coordinator "/O=baton-coordinator/CN=baton-coordinator" \
      "$(san_list DNS:baton-coordinator DNS:localhost IP:127.0.0.1 "$@")"
    ;;
  node | etcd)
    [ $# -ge 1 ] || usage
    NAME=$1
    shift
    [[ "$NAME" =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$ ]] || { echo "certs.sh: bad $KIND name '$NAME'" >&2; exit 2; }
    if [ "$KIND" = node ]; then
      issue "node-$NAME" "/O=baton-node/CN=$NAME" "$(san_list "DNS:$NAME" "$@")"
    else  # an etcd member: reached on loopback too (etcdctl on its own host)
      issue "etcd-$NAME" "/O=etcd/CN=$NAME" "$(san_list "DNS:$NAME" DNS:localhost IP:127.0.0.1 "$@")"
    fi
    ;;
  *) usage ;;
esac
