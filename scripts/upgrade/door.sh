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
more() { [ "$(count "$1")" -gt "$2" ]; } # KIND N: the log holds more than N KIND events
# within WHAT COMMAND...: COMMAND until it succeeds, every 0.1 s, 30 s at most.
within() {
    what=$1 i=0
    shift
    until "$@"; do
        i=$((i + 1))
        [ $i -le 300 ] || { echo "door: no $what in 30 s" >&2; gatewayctl log --limit 10 >&2; exit 1; }
        sleep 0.1
    done
}
decided() { # the decision logged since G granted and D denied events, printed
    if more access_granted "$g"; then echo access_granted; elif more access_denied "$d"; then echo access_denied; else return 1; fi
}
case ${1:-} in
issue)
    n=$(count provisioning_written)
    gatewayctl provision arm --action 0 --label "$3" >/dev/null
    gatewayctl sim tap --blank --uid "$2" >/dev/null
    within "new provisioning_written event" more provisioning_written "$n"
    gatewayctl sim dump "$4" >/dev/null
    gatewayctl sim remove >/dev/null ;;
tap)
    g=$(count access_granted) d=$(count access_denied)
    gatewayctl sim tap --dump "$2" >/dev/null
    within "decision for $2" decided
    gatewayctl sim remove >/dev/null ;;
count) count "$2" ;;
*) echo "usage: door.sh issue UID LABEL DUMP | tap DUMP | count KIND" >&2; exit 2 ;;
esac
