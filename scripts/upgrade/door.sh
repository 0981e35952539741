#!/bin/sh
# scripts/upgrade/door.sh — run inside the test-upgrade container (as root,
# against the running gatewayd on the simulated board): what a door's admin
# and its users do, waiting on the audit log's events, never on fixed sleeps.
#   issue UID LABEL DUMP  arm provisioning for action 0, put a blank NTAG213
#                         with UID on the reader, wait for provisioning_written,
#                         save the written tag to DUMP, take it off
#   tap DUMP              put the tag on the reader; prints access_granted or
#                         access_denied (the decision logged for it), takes it off
#   count KIND            how many KIND events the audit log holds
set -eu
count() { gatewayctl log --limit 1000000 | grep -c " $1\( \|$\)" || true; }
# wait_more KIND N: until the log holds more than N KIND events (30 s at most).
wait_more() {
    i=0
    while [ "$(count "$1")" -le "$2" ]; do
        i=$((i + 1))
        [ $i -le 300 ] || { echo "door: no new $1 event in 30 s" >&2; gatewayctl log --limit 10 >&2; exit 1; }
        sleep 0.1
    done
}
case ${1:-} in
issue)
    n=$(count provisioning_written)
    gatewayctl provision arm --action 0 --label "$3" >/dev/null
    gatewayctl sim tap --blank --uid "$2" >/dev/null
    wait_more provisioning_written "$n"
    gatewayctl sim dump "$4" >/dev/null
    gatewayctl sim remove >/dev/null ;;
tap)
    g=$(count access_granted)
    d=$(count access_denied)
    gatewayctl sim tap --dump "$2" >/dev/null
    i=0
    while :; do
        if [ "$(count access_granted)" -gt "$g" ]; then echo access_granted; break; fi
        if [ "$(count access_denied)" -gt "$d" ]; then echo access_denied; break; fi
        i=$((i + 1))
        [ $i -le 300 ] || { echo "door: no decision for $2 in 30 s" >&2; gatewayctl log --limit 10 >&2; exit 1; }
        sleep 0.1
    done
    gatewayctl sim remove >/dev/null ;;
count) count "$2" ;;
*) echo "usage: door.sh issue UID LABEL DUMP | tap DUMP | count KIND" >&2; exit 2 ;;
esac
