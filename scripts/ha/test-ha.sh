#!/usr/bin/env bash
# test-ha.sh GATEWAY — a real Home Assistant (pinned below, from PyPI) against
# the shipped broker configuration and ACL and the static gatewayd: see
# ha_acceptance.py for the checks. The venv is cached outside the tree
# (~700 MB, ~4 min to build once; a warm run starts HA in seconds).
#
# Cache: ${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/ha/venv (+ .stamp)
set -euo pipefail
GATEWAY="${1:?usage: scripts/ha/test-ha.sh GATEWAY}"
cd "$(dirname "$0")/../.."
HA_VERSION=2024.3.3
PYTHON=/usr/bin/python3        # Debian's; 3.11 is the newest HA 2024.3 supports
CACHE="${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/ha"
VENV="$CACHE/venv"
# Besides what requirements.py reads from HA's manifests (what HA would pip at
# its first start): josepy<2 — josepy 2.x removed ComparableX509, which HA's
# cloud integration imports, and nothing in HA 2024.3.3 pins it.
EXTRAS=('josepy<2')
STAMP="homeassistant==$HA_VERSION ${EXTRAS[*]} $($PYTHON --version 2>&1) $(sha256sum scripts/ha/requirements.py | cut -c1-16)"

say() { echo "test-ha: $*" >&2; }

for p in python3-venv mosquitto openssl; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -c >/dev/null '^install ok installed' && continue
    [ "$(id -u)" = 0 ] || { say "need root to apt-get install $p"; exit 1; }
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$p" >/dev/null
done

if [ "$(cat "$VENV/.stamp" 2>/dev/null)" != "$STAMP" ]; then
    say "building the Home Assistant $HA_VERSION venv in $VENV (once)"
    rm -rf "$VENV"
    mkdir -p "$CACHE"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install -q -U pip wheel
    "$VENV/bin/pip" install -q "homeassistant==$HA_VERSION"
    "$VENV/bin/python" scripts/ha/requirements.py > "$CACHE/requirements.txt"
    "$VENV/bin/pip" install -q -c "$VENV/lib/python3.11/site-packages/homeassistant/package_constraints.txt" \
        -r "$CACHE/requirements.txt" "${EXTRAS[@]}"
    echo "$STAMP" > "$VENV/.stamp"
fi
say "Home Assistant $("$VENV/bin/python" -c 'import homeassistant.const as c; print(c.__version__)') from $VENV"
exec timeout --kill-after=30 900 "$VENV/bin/python" scripts/ha/ha_acceptance.py \
    --gateway "$GATEWAY" --venv "$VENV" --repo .
