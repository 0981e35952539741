#!/usr/bin/env bash
# make-certs.sh DIR [--server NAME [--ip ADDRESS]...]... NAME...
#
# A small CA in DIR (made once) and a certificate for each NAME (CN = NAME;
# SAN DNS:NAME; the key 0600):
#   --server NAME   the broker's certificate: extendedKeyUsage serverAuth only,
#                   SAN DNS:NAME plus every --ip that follows it (for doors that
#                   reach the broker by address: `--server broker.lan --ip 192.168.1.10`)
#   NAME            a client (a door, Home Assistant, a phone): clientAuth only,
#                   so no client's certificate can pose as the broker, even to a
#                   client that skips the host-name check (tls.insecure)
# The door's certificate CN is its device id: the broker ACL keys on it.
set -euo pipefail
usage() { echo "usage: make-certs.sh DIR [--server NAME [--ip ADDRESS]...]... NAME..." >&2; exit 64; }
[ $# -ge 2 ] || usage
dir=$1; shift
mkdir -p "$dir"; cd "$dir"
if [ ! -f ca.key ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
    -subj /CN=doorgateway-ca -keyout ca.key -out ca.crt 2>/dev/null
  chmod 600 ca.key
fi

# Parse into "kind name sans" entries first, so every --ip lands on its --server.
kinds=() names=() sans=()
while [ $# -gt 0 ]; do
  case "$1" in
  --server) [ $# -ge 2 ] || usage; kinds+=(server); names+=("$2"); sans+=("DNS:$2"); shift 2 ;;
  --ip)
    [ $# -ge 2 ] && [ ${#kinds[@]} -gt 0 ] && [ "${kinds[-1]}" = server ] ||
      { echo "make-certs.sh: --ip follows the --server it belongs to" >&2; exit 64; }
    case "$2" in *[!0-9a-fA-F.:]* | "") echo "make-certs.sh: --ip $2: not an IPv4 or IPv6 address" >&2; exit 64 ;; esac
    sans[-1]="${sans[-1]},IP:$2"; shift 2 ;;
  -*) usage ;;
  *) kinds+=(client); names+=("$1"); sans+=("DNS:$1"); shift ;;
  esac
done

for i in "${!names[@]}"; do
  name=${names[$i]}
  if [ "${kinds[$i]}" = server ]; then usage_ext=serverAuth; else usage_ext=clientAuth; fi
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$name" \
    -keyout "$name.key" -out "$name.csr" 2>/dev/null
  printf 'subjectAltName=%s\nextendedKeyUsage=%s\n' "${sans[$i]}" "$usage_ext" > "$name.ext"
  openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 825 \
    -extfile "$name.ext" -out "$name.crt" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
  chmod 600 "$name.key"
  echo "$dir/$name.crt $dir/$name.key"
done
