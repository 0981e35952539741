#!/bin/sh
# harness.sh — sourced, never run (POSIX sh): what the shell harnesses on the
# host share (scripts/deb-harness.sh and the package tests, scripts/image/test-vm.sh,
# scripts/raspi3b/run.sh, scripts/run-demo.sh): the PASS/FAIL tally, a bounded
# wait, reaping a process, an image's partitions, and a test's own
# certificates with a mosquitto on the shipped provisioning/ configuration and
# ACL (the Python harnesses have scripts/faults/lib.py's Broker). sh has no
# locals: the names here start with an underscore.

# --- the tally: one PASS/FAIL line a check; the script ends on its counts ---
passed=0
failed=0
pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1${2:+: $2}"; }
# has TEXT PATTERN...: every PATTERN (grep's basic regex) matches a line of TEXT.
has() {
    _text=$1
    shift
    for _p in "$@"; do printf '%s\n' "$_text" | grep -c >/dev/null -e "$_p" || return 1; done
}
# tally NAME [MORE]: the counts line; fails when any check did.
tally() { echo "$1: $passed passed, $failed failed${2:+, $2}"; [ "$failed" = 0 ]; }
# tail_of TEXT [N]: TEXT's last N lines (3), joined by '|', for a FAIL line.
tail_of() { printf '%s\n' "$1" | tail -n "${2:-3}" | tr '\n' '|'; }

# retry TRIES PAUSE COMMAND...: COMMAND until it succeeds, at most TRIES times,
# PAUSE seconds apart; 1 when it never did.
retry() {
    _tries=$1 _pause=$2
    shift 2
    until "$@"; do
        _tries=$((_tries - 1))
        [ "$_tries" -gt 0 ] || return 1
        sleep "$_pause"
    done
}

# gone PID: PID has ended. reap PID [SECONDS]: SIGTERM, SIGKILL if it has not
# ended after SECONDS (5), then reaped (on an ended PID: only reaped).
gone() { ! kill -0 "$1" 2>/dev/null; }
reap() {
    kill "$1" 2>/dev/null || true
    retry $((${2:-5} * 2 + 1)) 0.5 gone "$1" || kill -9 "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

# image_part IMG N: the start and size (in 512-byte sectors) of IMG's partition N (0: the first).
image_part() {
    sfdisk -J "$1" | python3 -c "import json,sys; p=json.load(sys.stdin)['partitiontable']['partitions'][$2]; print(p['start'], p['size'])"
}

# free_port: a TCP port free on 127.0.0.1 now.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# pki_ca DIR CN: DIR/ca.key and DIR/ca.crt, a P-256 CA for 30 days.
pki_ca() {
    mkdir -p "$1"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 -subj "/CN=$2" \
        -keyout "$1/ca.key" -out "$1/ca.crt" 2>/dev/null
}

# pki_cert DIR NAME SAN [CN]: DIR/NAME.key (0600) and DIR/NAME.crt from DIR's CA,
# for a client and a server: subjectAltName SAN, common name CN (default NAME).
pki_cert() {
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=${4:-$2}" \
        -keyout "$1/$2.key" -out "$1/$2.csr" 2>/dev/null &&
        printf 'subjectAltName=%s\nextendedKeyUsage=clientAuth,serverAuth\n' "$3" > "$1/$2.ext" &&
        openssl x509 -req -in "$1/$2.csr" -CA "$1/ca.crt" -CAkey "$1/ca.key" -CAcreateserial \
            -days 30 -extfile "$1/$2.ext" -out "$1/$2.crt" 2>/dev/null &&
        chmod 600 "$1/$2.key"
}

# broker_conf REPO PORT ADDRESS DIR: REPO's provisioning/mosquitto-doorgateway.conf
# on stdout, listening on ADDRESS:PORT with DIR's ca.crt, broker.crt and
# broker.key and REPO's ACL, no persistence (the caller adds its user and log).
broker_conf() {
    sed -e "s|^listener .*|listener $2 $3|" -e "s|^cafile .*|cafile $4/ca.crt|" \
        -e "s|^certfile .*|certfile $4/broker.crt|" -e "s|^keyfile .*|keyfile $4/broker.key|" \
        -e "s|^acl_file .*|acl_file $1/provisioning/doorgateway.acl|" "$1/provisioning/mosquitto-doorgateway.conf"
    echo "persistence false"
}
