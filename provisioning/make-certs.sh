#!/usr/bin/env bash
# make-certs.sh DIR NAME...: a small CA in DIR (made once) and a client or
# server certificate for each NAME (CN = NAME; SAN DNS:NAME). Keys are 0600.
# The door's certificate CN is its device id: the broker ACL below keys on it.
set -euo pipefail
dir=$1; shift
mkdir -p "$dir"; cd "$dir"
if [ ! -f ca.key ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
    -subj /CN=doorgateway-ca -keyout ca.key -out ca.crt 2>/dev/null
  chmod 600 ca.key
fi
for name in "$@"; do
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$name" \
    -keyout "$name.key" -out "$name.csr" 2>/dev/null
  printf 'subjectAltName=DNS:%s\nextendedKeyUsage=clientAuth,serverAuth\n' "$name" > "$name.ext"
  openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 825 \
    -extfile "$name.ext" -out "$name.crt" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
  chmod 600 "$name.key"
  echo "$dir/$name.crt $dir/$name.key"
done
