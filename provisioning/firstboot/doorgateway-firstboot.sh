#!/bin/sh
# /usr/lib/doorgateway/firstboot — applies what the user put in the boot
# partition's doorgateway/ folder (/boot/firmware/doorgateway/, the FAT
# partition a laptop can edit after flashing), then removes it from there.
# Run by doorgateway-firstboot.service before gatewayd.service and ssh.service;
# docs/pi-image.md lists the files. It runs at every boot until one ends with
# the door fully provisioned (no error, and a configuration gatewayd starts
# with); then it writes its stamp, and from then on no file in the folder is
# applied again (docs/security.md "L5": someone with the SD card for a minute
# must not add an ssh key or a broker): a file put there later is overwritten
# and deleted unread at the next boot, and STATUS.txt says so
# (after_provisioning). To apply files again, as root:
# rm /var/lib/doorgateway-firstboot.done, put them there, and reboot.
#
#   relay            one line: active-low (opto-isolated relay module: the common
#                    1/2/4-channel boards) or active-high (transistor/MOSFET stage,
#                    relay HAT): active_low in every [[outputs]] table
#   lock             one line: strike (locked without power) or maglock (locked
#                    while powered): locked_level in every [[outputs]] table.
#                    A real board's configuration has no default for either:
#                    gatewayd does not start until both are set (board/wiring.md).
#                    Once the configuration is installed, config.txt's relay hold
#                    (gpio=PIN=op,dh,pu|op,dl,pd: the locked state's level and pull from power-on)
#                    is rewritten from it: gatewayctl config firmware --write.
#   device-id        one line: [device] id (the certificate's CN; letters, digits, - _)
#   mqtt-broker      one line: mqtts://HOST[:PORT] (TLS, default 8883) or
#                    mqtt://HOST[:PORT] (plain, 1883): enables [mqtt]
#   mqtt.conf        a broker with a login (Home Assistant's Mosquitto add-on):
#                    host=…, user=…, password=…, optional port=…, tls=on|off;
#                    enables [mqtt] with username and password_file
#                    (/etc/doorgateway/mqtt.password, 0640 root:doorgateway)
#   gateway.toml     a whole configuration, replacing /etc/doorgateway/gateway.toml
#                    (applied first; relay, lock, device-id and mqtt-broker then edit it)
#   ca.crt           the broker's CA           -> /etc/doorgateway/ca.crt   0644
#   door.crt         the door's certificate    -> /etc/doorgateway/door.crt 0644
#   door.key         the door's private key    -> /etc/doorgateway/door.key 0600 root,
#                    handed to gatewayd as the systemd credential door.key
#                    (key_file = "/run/credentials/gatewayd.service/door.key")
#   wifi.conf        ssid=…, psk=…, country=XX -> wpa_supplicant for wlan0 (hashed psk)
#   wpa_supplicant.conf  or a whole wpa_supplicant configuration for wlan0
#   authorized_keys  ssh public keys, added to root's
#   hostname         one line: the host name
#   timezone         one line: a zone under /usr/share/zoneinfo (Europe/Berlin) -> the
#                    system's zone (/etc/localtime, /etc/timezone), which gatewayd reads
#                    when gateway.toml has no [clock] time_zone
#
# Consumed files are overwritten (shred) and deleted, then the FAT is synced:
# nothing secret stays on the boot partition. A configuration that fails
# `gatewayctl config check` is not installed (the previous one stays) and the
# error is in STATUS.txt and the journal. The device key is not made here:
# gatewayd generates it in its store at its first start.
set -u

DIR=${DOORGATEWAY_FIRSTBOOT_DIR:-/boot/firmware/doorgateway}
ETC=${DOORGATEWAY_ETC:-/etc/doorgateway}
CONF=$ETC/gateway.toml
STATUS=$DIR/STATUS.txt
GATEWAYCTL=${GATEWAYCTL:-/usr/bin/gatewayctl}
# The firmware's settings: config.txt on the boot partition, and Debian's
# raspi-firmware file that is appended to it at every kernel upgrade.
CONFIG_TXT=${DOORGATEWAY_CONFIG_TXT:-/boot/firmware/config.txt}
FIRMWARE_CUSTOM=${DOORGATEWAY_FIRMWARE_CUSTOM:-/etc/default/raspi-firmware-custom}
STAMP=${DOORGATEWAY_FIRSTBOOT_STAMP:-/var/lib/doorgateway-firstboot.done}
WPA=${DOORGATEWAY_WPA:-/etc/wpa_supplicant/wpa_supplicant-wlan0.conf}
SYSTEMD_ETC=${DOORGATEWAY_SYSTEMD_ETC:-/etc/systemd/system}
SSH_DIR=${DOORGATEWAY_ROOT_SSH:-/root/.ssh}
# The group gatewayd runs as: it reads the MQTT password file (mqtt.conf).
GROUP=${DOORGATEWAY_GROUP:-doorgateway}
applied=""
errors=0

log() { echo "doorgateway-firstboot: $*"; }
note() { applied="$applied$*
"; log "$*"; }
problem() { errors=$((errors + 1)); applied="${applied}ERROR: $*
"; log "error: $*" >&2; }
# consume FILE: overwrite the file's clusters, then delete it.
consume() {
    [ -e "$1" ] || return 0
    shred -z -n 1 -u "$1" 2>/dev/null || rm -f "$1"
}
firstline() { sed -n '1{s/\r$//;s/^[[:space:]]*//;s/[[:space:]]*$//;p;q}' "$1"; }

# after_provisioning: the door was provisioned on an earlier boot, so files
# put in the folder since are not applied (docs/security.md "L5": whoever
# holds the card for a minute must not add an ssh key, a broker or a Wi-Fi);
# but they may be secrets (a Wi-Fi passphrase, door.key), so each is
# overwritten and deleted like an applied one, and STATUS.txt says which were
# ignored and how an admin applies files again. Runs at every boot after the
# stamp (the unit has no condition on the stamp for this reason).
after_provisioning() {
    ignored=""
    for f in "$DIR"/* "$DIR"/.[!.]*; do
        [ -e "$f" ] || continue
        case "${f##*/}" in README.txt | STATUS.txt) continue ;; esac
        ignored="$ignored ${f##*/}"
        if [ -d "$f" ]; then rm -rf "$f"; else consume "$f"; fi
    done
    [ -n "$ignored" ] || { log "provisioned already ($STAMP): nothing new in $DIR"; return 0; }
    log "provisioned already ($STAMP): ignored and removed from $DIR:$ignored"
    {
        echo "DoorGateway first-boot provisioning, $(date -u +%Y-%m-%dT%H:%M:%SZ) (clock may be unsynchronised)"
        echo "This door was provisioned on $(cat "$STAMP" 2>/dev/null || echo 'an earlier boot'); files put here"
        echo "after that are NOT applied. Ignored, overwritten and deleted on this boot:"
        echo " $ignored"
        echo "To apply files again: as root on the door, rm $STAMP, then put the files"
        echo "here and reboot."
    } > "$STATUS.tmp" && mv "$STATUS.tmp" "$STATUS"
    sync -f "$DIR" 2>/dev/null || sync
}

if [ -e "$STAMP" ]; then
    [ -d "$DIR" ] && after_provisioning
    exit 0
fi
[ -d "$DIR" ] || { log "no $DIR: nothing to do"; exit 0; }
pending=$(find "$DIR" -mindepth 1 -maxdepth 1 ! -name README.txt ! -name STATUS.txt | head -1)
[ -n "$pending" ] || { log "nothing new in $DIR"; exit 0; }
umask 077
install -d -m 0755 "$ETC"

# toml_set SECTION KEY VALUE: set KEY = VALUE in [SECTION] of $CONF.new. The
# key's line (or its commented-out "# KEY = …" line) is replaced; without one
# the line goes right after the section header; without the header both are
# appended. VALUE is TOML (strings quoted by the caller).
toml_set() {
    # The value through the environment: awk -v would turn the TOML escapes
    # \\ and \" of a quoted string into \ and " (docs/security.md "L5").
    TOML_VAL=$3 awk -v sec="[$1]" -v key="$2" '
        BEGIN { val = ENVIRON["TOML_VAL"] }
        function flush() { if (insec && !done) { print key " = " val; done = 1 } }
        /^[[:space:]]*\[/ {
            h = $0; sub(/[[:space:]]*(#.*)?$/, "", h); sub(/^[[:space:]]*/, "", h)
            if (insec && !done) { pendinghdr = 1 }
            if (pendinghdr) { print key " = " val; done = 1; pendinghdr = 0 }
            insec = (h == sec); if (insec) seen = 1
            print; next
        }
        insec && !done && ($0 ~ "^[[:space:]]*#?[[:space:]]*" key "[[:space:]]*=") {
            print key " = " val; done = 1; next
        }
        { print }
        END {
            if (insec && !done) { print key " = " val; done = 1 }
            if (!seen) { print ""; print sec; print key " = " val }
        }' "$CONF.new" > "$CONF.tmp" && mv "$CONF.tmp" "$CONF.new"
}
# outputs_set KEY VALUE: set KEY = VALUE in every [[outputs]] table of
# $CONF.new. Of the table's KEY lines the first one set is replaced, else the
# commented-out one with this value ("# KEY = VALUE  # why", the example's
# choices: the other choice stays shown), else the first commented-out one;
# later set KEY lines of the table go; a table without any gets it at its end.
# Two passes over the file: the first finds, per table, which line to take.
outputs_set() {
    TOML_VAL=$2 awk -v key="$1" '
        BEGIN { val = ENVIRON["TOML_VAL"] }
        function header(line,   h) {
            h = line; sub(/[[:space:]]*(#.*)?$/, "", h); sub(/^[[:space:]]*/, "", h)
            return h
        }
        function close_table() { if (inout) pick[t] = set ? set : (same ? same : any) }
        FNR == 1 { if (NR != 1) close_table(); inout = 0; t = 0; done = 0 }
        /^[[:space:]]*\[/ {
            if (FNR == NR) close_table()
            else if (inout && !done) print key " = " val
            inout = (header($0) == "[[outputs]]"); done = 0
            if (inout) { t++; set = 0; same = 0; any = 0 }
            if (FNR != NR) print
            next
        }
        inout && $0 ~ ("^[[:space:]]*#?[[:space:]]*" key "[[:space:]]*=") {
            commented = ($0 ~ /^[[:space:]]*#/)
            if (FNR == NR) {
                v = $0; sub("^[[:space:]]*#?[[:space:]]*" key "[[:space:]]*=[[:space:]]*", "", v)
                sub(/[[:space:]]*(#.*)?$/, "", v)
                if (!commented && !set) set = FNR
                if (commented && !any) any = FNR
                if (commented && v == val && !same) same = FNR
                next
            }
            if (FNR == pick[t]) { print key " = " val; done = 1; next }
            if (!commented) next
        }
        FNR != NR { print }
        END { if (inout && !done) print key " = " val }' "$CONF.new" "$CONF.new" > "$CONF.tmp" && mv "$CONF.tmp" "$CONF.new"
}
# choice FILE KEY: the file's first line, lower-case, without quotes and
# without a leading "KEY =" (relay = "active-low" is taken as active-low).
choice() {
    firstline "$1" | tr '[:upper:]' '[:lower:]' | sed "s/^$2[[:space:]]*=[[:space:]]*//; s/[\"']//g; s/[[:space:]]*\$//"
}
tomlstr() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }

# --- files into /etc/doorgateway ----------------------------------------------
for f in ca.crt door.crt; do
    if [ -f "$DIR/$f" ]; then
        if grep -q 'BEGIN CERTIFICATE' "$DIR/$f"; then
            install -m 0644 -o root -g root "$DIR/$f" "$ETC/$f" && note "installed $ETC/$f"
        else
            problem "$f is not a PEM certificate; not installed"
        fi
        consume "$DIR/$f"
    fi
done
if [ -f "$DIR/door.key" ]; then
    if grep -q 'PRIVATE KEY' "$DIR/door.key"; then
        # root:root 0600: systemd reads it for gatewayd (LoadCredential=door.key:…).
        install -m 0600 -o root -g root "$DIR/door.key" "$ETC/door.key" && note "installed $ETC/door.key (0600, credential door.key)"
    else
        problem "door.key is not a PEM private key; not installed"
    fi
    consume "$DIR/door.key"
fi

# The audit key (docs/security.md "L4"): this door's own. The one the image's
# package install made is the same on every door written from the image, so it
# is replaced while no audit log has been keyed with it (no store yet).
STATE=${DOORGATEWAY_STATE:-/var/lib/doorgateway}
if [ ! -e "$STATE/gateway.db" ]; then
    if (umask 077 && head -c 32 /dev/urandom > "$ETC/audit.key.new") && chmod 0400 "$ETC/audit.key.new" \
        && chown root:root "$ETC/audit.key.new" && mv -f "$ETC/audit.key.new" "$ETC/audit.key"; then
        note "made $ETC/audit.key (this door's audit key, root 0400)"
    else
        rm -f "$ETC/audit.key.new"
        problem "could not make $ETC/audit.key"
    fi
fi

# --- the configuration ----------------------------------------------------------
cp -p "$CONF" "$CONF.new" 2>/dev/null || : > "$CONF.new"
changed=0
installed=0
if [ -f "$DIR/gateway.toml" ]; then
    tr -d '\r' < "$DIR/gateway.toml" > "$CONF.new"
    changed=1
    note "gateway.toml from the boot partition"
    consume "$DIR/gateway.toml"
fi
# The relay: how its input switches it and what locks the door. Never
# assumed (issue 23): an opto module taken for active-high is energised, and a
# strike unlocked, whenever the door is idle.
for f in relay lock; do
    [ -f "$DIR/$f" ] || continue
    v=$(choice "$DIR/$f" "$f")
    case "$f=$v" in
    relay=active-low) key=active_low val=true ;;
    relay=active-high) key=active_low val=false ;;
    lock=strike) key=locked_level val='"deenergised"' ;;
    lock=maglock) key=locked_level val='"energised"' ;;
    relay=*) key= ; problem "relay '$v': want active-low (opto-isolated relay module) or active-high (transistor/MOSFET stage, relay HAT)" ;;
    *) key= ; problem "lock '$v': want strike (locked without power) or maglock (locked while powered)" ;;
    esac
    if [ -n "$key" ]; then
        if [ "$(grep -c '^[[:space:]]*\[\[outputs\]\]' "$CONF.new")" -gt 0 ]; then
            outputs_set "$key" "$val"
            changed=1
            note "$f $v: $key = $val in every [[outputs]]"
        else
            problem "$f $v: the configuration has no [[outputs]] table to set $key in (put a whole gateway.toml here)"
        fi
    fi
    consume "$DIR/$f"
done
if [ -f "$DIR/device-id" ]; then
    id=$(firstline "$DIR/device-id")
    if printf '%s' "$id" | grep -cE >/dev/null '^[A-Za-z0-9_-]{1,64}$'; then
        toml_set device id "$(tomlstr "$id")"
        changed=1
        note "device id $id"
    else
        problem "device-id '$id': letters, digits, '-' and '_' only, 1…64"
    fi
    consume "$DIR/device-id"
fi
if [ -f "$DIR/mqtt-broker" ]; then
    url=$(firstline "$DIR/mqtt-broker")
    scheme=${url%%://*}
    [ "$scheme" = "$url" ] && { scheme=mqtts; rest=$url; } || rest=${url#*://}
    rest=${rest%%/*}
    case "$rest" in
    \[*\]:*) host=${rest%]:*}; host=${host#[}; port=${rest##*]:} ;;
    \[*\]) host=${rest#[}; host=${host%]}; port= ;;
    *:*) host=${rest%:*}; port=${rest##*:} ;;
    *) host=$rest; port= ;;
    esac
    case "$scheme" in mqtts | ssl | tls) tls=true ;; mqtt | tcp) tls=false ;; *) tls= ;; esac
    if [ -z "$tls" ] || [ -z "$host" ] || { [ -n "$port" ] && ! printf '%s' "$port" | grep -cE >/dev/null '^[0-9]{1,5}$'; }; then
        problem "mqtt-broker '$url': want mqtts://HOST[:PORT] or mqtt://HOST[:PORT]"
    else
        toml_set mqtt enabled true
        toml_set mqtt host "$(tomlstr "$host")"
        [ -n "$port" ] && toml_set mqtt port "$port"
        toml_set mqtt.tls enabled "$tls"
        if [ "$tls" = true ]; then
            [ -f "$ETC/ca.crt" ] && toml_set mqtt.tls ca_file "$(tomlstr "$ETC/ca.crt")"
            if [ -f "$ETC/door.crt" ] && [ -f "$ETC/door.key" ]; then
                toml_set mqtt.tls cert_file "$(tomlstr "$ETC/door.crt")"
                # The systemd credential (LoadCredential=door.key:/etc/doorgateway/door.key
                # in gatewayd.service): readable by the service user while the
                # file in /etc stays root-only. (The loader wants an absolute path.)
                toml_set mqtt.tls key_file '"/run/credentials/gatewayd.service/door.key"'
            fi
        fi
        changed=1
        note "mqtt broker $host${port:+ port $port} (tls $tls)"
    fi
    consume "$DIR/mqtt-broker"
fi
# mqtt.conf: the broker and the door's login on it (issue 33 §3: Home
# Assistant OS's Mosquitto add-on, where the door is a Home Assistant user), so
# nobody edits gateway.toml or writes a password file over ssh. key=value
# lines: host (required), user (required), password (required), port, tls
# (on, the default: checked against ca.crt when one is installed, else the
# system's CAs; off: plain TCP). The password goes to $ETC/mqtt.password
# (0640 root:$GROUP, gatewayd's group), never into gateway.toml or STATUS.txt.
mqttconf_value() { tr -d '\r' < "$DIR/mqtt.conf" | sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*//p" | head -1; }
apply_mqtt_conf() {
    [ -f "$DIR/mqtt.conf" ] || return 0
    m_host=$(mqttconf_value host | sed 's/[[:space:]]*$//')
    m_user=$(mqttconf_value user | sed 's/[[:space:]]*$//')
    m_password=$(mqttconf_value password)
    m_port=$(mqttconf_value port | sed 's/[[:space:]]*$//')
    m_tls=$(mqttconf_value tls | sed 's/[[:space:]]*$//' | tr '[:upper:]' '[:lower:]')
    case "$m_tls" in "" | on | yes | true) m_tls=true ;; off | no | false) m_tls=false ;; *) m_tls= ;; esac
    if [ -z "$m_host" ] || [ -z "$m_user" ] || [ -z "$m_password" ]; then
        problem "mqtt.conf needs host=, user= and password= lines; not applied"
    elif ! printf '%s' "$m_host" | grep -cxE >/dev/null '[A-Za-z0-9.:-]{1,253}'; then
        problem "mqtt.conf: host '$m_host' is not a host name or address; not applied"
    elif ! printf '%s' "$m_user" | grep -cxE >/dev/null '[ -~]{1,256}'; then
        problem "mqtt.conf: user must be 1 to 256 printable ASCII characters; not applied"
    elif [ -n "$m_port" ] && ! printf '%s' "$m_port" | grep -cxE >/dev/null '[0-9]{1,5}'; then
        problem "mqtt.conf: port '$m_port' is not a port number; not applied"
    elif [ -z "$m_tls" ]; then
        problem "mqtt.conf: tls must be on or off; not applied"
    elif [ "$m_tls" = false ] && printf '%s' "$m_host" | grep -ciE >/dev/null '\.local\.?$'; then
        # gatewayd refuses a password over plain TCP to an mDNS name (whoever
        # answers the query gets it): applying it would reject the whole
        # configuration, relay hold included. Only this file is refused.
        problem "mqtt.conf: tls=off with the .local name '$m_host' would send the password to whoever answers on the LAN; use tls=on, or the broker's address; not applied"
    elif ! (umask 077 && printf '%s\n' "$m_password" > "$ETC/mqtt.password.new") \
        || ! chown "root:$GROUP" "$ETC/mqtt.password.new" || ! chmod 0640 "$ETC/mqtt.password.new" \
        || ! mv -f "$ETC/mqtt.password.new" "$ETC/mqtt.password"; then
        rm -f "$ETC/mqtt.password.new"
        problem "mqtt.conf: could not write $ETC/mqtt.password (root:$GROUP 0640); not applied"
    else
        toml_set mqtt enabled true
        toml_set mqtt host "$(tomlstr "$m_host")"
        [ -n "$m_port" ] && toml_set mqtt port "$m_port"
        toml_set mqtt username "$(tomlstr "$m_user")"
        toml_set mqtt password_file "$(tomlstr "$ETC/mqtt.password")"
        toml_set mqtt.tls enabled "$m_tls"
        if [ "$m_tls" = true ]; then
            if [ -f "$ETC/ca.crt" ]; then
                toml_set mqtt.tls ca_file "$(tomlstr "$ETC/ca.crt")"
            else
                toml_set mqtt.tls ca_dir '"/etc/ssl/certs"'
            fi
        fi
        changed=1
        note "mqtt broker $m_host${m_port:+ port $m_port} (tls $m_tls), login $m_user (password in $ETC/mqtt.password, 0640 root:$GROUP)"
    fi
    unset m_password
    consume "$DIR/mqtt.conf"
}
apply_mqtt_conf
if [ "$changed" = 1 ]; then
    if out=$("$GATEWAYCTL" config check "$CONF.new" 2>&1); then
        [ -f "$CONF" ] && cp -p "$CONF" "$CONF.before-firstboot"
        chmod 0644 "$CONF.new"
        mv "$CONF.new" "$CONF"
        installed=1
        note "configuration checked and installed ($CONF; previous in $CONF.before-firstboot)"
        # The firmware holds each relay at its locked level from power-on:
        # config.txt's gpio= line follows the installed configuration.
        if out=$("$GATEWAYCTL" config firmware --write --config-txt "$CONFIG_TXT" --custom "$FIRMWARE_CUSTOM" "$CONF" 2>&1); then
            note "relay hold from power-on: $(printf '%s\n' "$out" | grep '^gpio=' | tr '\n' ' ')in $CONFIG_TXT and $FIRMWARE_CUSTOM (the firmware reads it from the next boot; gatewayd holds the relay locked until then)"
        else
            problem "relay hold in $CONFIG_TXT not written: $(printf '%s\n' "$out" | grep -v '^#\|^gpio=\|^\[all\]' | tr '\n' ' ')"
        fi
    else
        mv "$CONF.new" "$CONF.rejected"
        problem "configuration rejected by gatewayctl config check, kept in $CONF.rejected: $(printf '%s' "$out" | tr '\n' ' ')"
    fi
else
    rm -f "$CONF.new"
fi
# A configuration gatewayd would refuse is said here too (the stock one,
# until the relay is chosen); one installed on this boot was just checked.
if [ "$installed" = 0 ] && [ -f "$CONF" ] && ! out=$("$GATEWAYCTL" config check "$CONF" 2>&1 >/dev/null); then
    problem "gatewayd will not start with $CONF: $(printf '%s' "$out" | tr '\n' ' ')(put relay and lock files here: README.txt)"
fi

# --- ssh --------------------------------------------------------------------------
if [ -f "$DIR/authorized_keys" ]; then
    install -d -m 0700 "$SSH_DIR"
    n=0
    tr -d '\r' < "$DIR/authorized_keys" | while IFS= read -r line; do
        case "$line" in "" | \#*) continue ;; esac
        grep -qxF "$line" "$SSH_DIR/authorized_keys" 2>/dev/null || printf '%s\n' "$line" >> "$SSH_DIR/authorized_keys"
    done
    chmod 0600 "$SSH_DIR/authorized_keys"
    n=$(grep -c . "$SSH_DIR/authorized_keys")
    note "ssh: root's authorized_keys now holds $n key(s)"
    consume "$DIR/authorized_keys"
fi

# --- Wi-Fi -------------------------------------------------------------------------
wifi=0
if [ -f "$DIR/wpa_supplicant.conf" ]; then
    install -d -m 0755 "$(dirname "$WPA")"
    tr -d '\r' < "$DIR/wpa_supplicant.conf" > "$WPA" && chmod 0600 "$WPA" && wifi=1
    consume "$DIR/wpa_supplicant.conf"
elif [ -f "$DIR/wifi.conf" ]; then
    ssid=$(tr -d '\r' < "$DIR/wifi.conf" | sed -n 's/^[[:space:]]*ssid[[:space:]]*=[[:space:]]*//p' | head -1)
    psk=$(tr -d '\r' < "$DIR/wifi.conf" | sed -n 's/^[[:space:]]*psk[[:space:]]*=[[:space:]]*//p' | head -1)
    country=$(tr -d '\r' < "$DIR/wifi.conf" | sed -n 's/^[[:space:]]*country[[:space:]]*=[[:space:]]*//p' | head -1)
    # Values are data, never configuration text: the SSID goes in as hex (so a
    # quote or a backslash in it cannot end the string), the country must be
    # two letters, and printf, not dash's echo (which expands \n), writes them.
    ssidhex=$(printf '%s' "$ssid" | od -An -v -tx1 | tr -d ' \n')
    if [ -z "$ssid" ]; then
        problem "wifi.conf has no ssid= line"
    elif [ ${#ssidhex} -gt 64 ]; then
        problem "wifi.conf: the ssid is longer than 32 bytes"
    elif [ -n "$country" ] && ! printf '%s' "$country" | grep -cxE >/dev/null '[A-Za-z]{2}'; then
        problem "wifi.conf: country must be two letters (ISO 3166), e.g. country=DE"
    elif [ -n "$psk" ] && ! printf '%s' "$psk" | grep -cxE >/dev/null '[ -~]{8,63}'; then
        problem "wifi.conf: psk must be 8 to 63 printable ASCII characters"
    else
        install -d -m 0755 "$(dirname "$WPA")"
        {
            printf '%s\n' "ctrl_interface=DIR=/run/wpa_supplicant GROUP=netdev" "update_config=0"
            [ -n "$country" ] && printf 'country=%s\n' "$(printf '%s' "$country" | tr '[:lower:]' '[:upper:]')"
            if [ -n "$psk" ]; then
                # The hashed key only, not the passphrase; the SSID as hex.
                wpa_passphrase "$ssid" "$psk" | grep -v '^[[:space:]]*#psk=' |
                    awk -v hex="$ssidhex" '/^[[:space:]]*ssid=/ { print "\tssid=" hex; next } { print }'
            else
                printf 'network={\n\tssid=%s\n\tkey_mgmt=NONE\n}\n' "$ssidhex"
            fi
        } > "$WPA" && chmod 0600 "$WPA" && wifi=1
    fi
    consume "$DIR/wifi.conf"
fi
if [ "$wifi" = 1 ]; then
    # Started by the wlan0 device itself when it appears (brcmfmac loads its
    # firmware late), not by a boot target: a Pi without a radio, or one
    # whose radio is off, would otherwise hold a start job for 90 s per boot.
    wants=$SYSTEMD_ETC/sys-subsystem-net-devices-wlan0.device.wants
    install -d -m 0755 "$wants"
    ln -sf /lib/systemd/system/wpa_supplicant@.service "$wants/wpa_supplicant@wlan0.service"
    systemctl daemon-reload >/dev/null 2>&1 || true
    [ -e /sys/class/net/wlan0 ] && systemctl start --no-block wpa_supplicant@wlan0.service >/dev/null 2>&1
    note "wi-fi: $WPA (0600), wpa_supplicant@wlan0 started whenever wlan0 appears"
fi

# --- host name --------------------------------------------------------------------
if [ -f "$DIR/hostname" ]; then
    h=$(firstline "$DIR/hostname")
    if printf '%s' "$h" | grep -cE >/dev/null '^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$'; then
        old=$(cat /etc/hostname 2>/dev/null)
        echo "$h" > /etc/hostname
        sed -i "s/^127\.0\.1\.1[[:space:]].*/127.0.1.1\t$h/" /etc/hosts
        grep -q '^127\.0\.1\.1' /etc/hosts || printf '127.0.1.1\t%s\n' "$h" >> /etc/hosts
        hostname "$h" 2>/dev/null || true
        note "host name $h (was $old)"
    else
        problem "hostname '$h' is not a valid host name"
    fi
    consume "$DIR/hostname"
fi

# --- time zone --------------------------------------------------------------------
# timezone: one line, a zone name under /usr/share/zoneinfo (Europe/Berlin). It
# becomes the system's zone (/etc/localtime, /etc/timezone, as Debian's tzdata
# keeps them), which gatewayd's schedules read unless gateway.toml sets
# [clock] time_zone; the journal and `date` then show that local time too.
# Only a name that is a TZif file there is taken (no path of the card's making).
apply_timezone() {
    [ -f "$DIR/timezone" ] || return 0
    zoneinfo=${DOORGATEWAY_ZONEINFO:-/usr/share/zoneinfo}
    localtime=${DOORGATEWAY_LOCALTIME:-/etc/localtime}
    tzfile=${DOORGATEWAY_TIMEZONE_FILE:-/etc/timezone}
    tz=$(firstline "$DIR/timezone")
    consume "$DIR/timezone"
    if ! printf '%s' "$tz" | grep -cxE >/dev/null '[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*'; then
        problem "timezone '$tz': want a zone name such as Europe/Berlin or UTC (timedatectl list-timezones)"
    elif [ ! -f "$zoneinfo/$tz" ] || [ "$(head -c 4 "$zoneinfo/$tz" 2>/dev/null)" != TZif ]; then
        problem "timezone '$tz': no such zone in $zoneinfo (timedatectl list-timezones); the zone stays $(readlink "$localtime" 2>/dev/null || echo UTC)"
    elif ln -sf "$zoneinfo/$tz" "$localtime.new" && mv -f "$localtime.new" "$localtime" \
        && printf '%s\n' "$tz" > "$tzfile.new" && chmod 0644 "$tzfile.new" && mv -f "$tzfile.new" "$tzfile"; then
        note "time zone $tz ($localtime)"
    else
        rm -f "$localtime.new" "$tzfile.new"
        problem "timezone '$tz': could not set $localtime"
    fi
}
apply_timezone

# --- anything else is left, and said so ---------------------------------------------
for f in "$DIR"/* "$DIR"/.[!.]*; do
    [ -e "$f" ] || continue
    case "${f##*/}" in README.txt | STATUS.txt) ;; *) problem "${f##*/}: unknown file, left in place (not read)" ;; esac
done

{
    echo "DoorGateway first-boot provisioning, $(date -u +%Y-%m-%dT%H:%M:%SZ) (clock may be unsynchronised)"
    echo "Applied on this boot (files consumed from this folder; secrets are not repeated here):"
    printf '%s' "$applied" | sed 's/^/  /'
} > "$STATUS.tmp" && mv "$STATUS.tmp" "$STATUS"
sync -f "$DIR" 2>/dev/null || sync
# One-shot once the door is provisioned: no error on this boot and a
# configuration gatewayd starts with. Until then (a relay not chosen yet, a
# bad file) the folder is read again at the next boot.
if [ "$errors" = 0 ] && [ -f "$CONF" ] && "$GATEWAYCTL" config check "$CONF" >/dev/null 2>&1; then
    mkdir -p "$(dirname "$STAMP")" && date -u +%Y-%m-%dT%H:%M:%SZ > "$STAMP" \
        && log "provisioned: $STAMP written; $DIR will not be read again"
fi
log "done ($errors error(s))"
exit 0
