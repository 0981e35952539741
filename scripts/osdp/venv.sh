#!/usr/bin/env bash
# The Python venv with PyPI's libosdp (an independent OSDP implementation) that runs the
# reader of Tests/OSDPTests/LibosdpInteropTests.swift (scripts/osdp/pd.py). Built once into
# ${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/osdp/venv (shared, locked); prints its python.
set -euo pipefail
LIBOSDP_VERSION=3.2.9
CACHE="${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/osdp"
VENV="$CACHE/venv"
STAMP="$VENV/.stamp-libosdp-$LIBOSDP_VERSION"
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
if [[ ! -f "$STAMP" ]]; then
    echo "osdp: building the libosdp $LIBOSDP_VERSION venv in $VENV (once)" >&2
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q "libosdp==$LIBOSDP_VERSION" >&2
    touch "$STAMP"
fi
echo "$VENV/bin/python"
