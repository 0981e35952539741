#!/bin/sh
# /init of the raspi3b guest (scripts/raspi3b/run.sh packs it with busybox,
# the image's modules, the aarch64 gateway and spi-jedec-id). Kernel command
# line: dg.polarity=low|high (the relay's card), dg.buses=1 (check the I2C and
# SPI nodes), dg.glitch=1 (before gatewayd, request GPIO17 at the wrong level
# for 50 ms: the deliberate glitch the host's edge record must catch).
# Every line starting "=== " is for the host harness (scripts/raspi3b/harness.py),
# which acts on some of them: "enrolled" (it puts the fob on the PN532),
# "sigterm"/"sigkill" (it reads GPFSEL1/GPLEV0 from outside), "done".
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
say() { echo "=== $*"; }
arg() { tr ' ' '\n' < /proc/cmdline | sed -n "s/^dg\.$1=//p"; }
finish() { say "done"; sleep 30; poweroff -f; }
POLARITY=$(arg polarity)
CONFIG=/etc/gateway-$POLARITY.toml
LOG=/tmp/gatewayd.log
mkdir -p /tmp/state /tmp/run
for m in i2c-dev i2c-bcm2835 spi-bcm2835; do insmod "/lib/modules/$m.ko" || say "FAIL module $m did not load"; done
say "kernel $(uname -r), gpio $(cat /sys/bus/gpio/devices/gpiochip0/of_node/compatible 2>/dev/null | tr '\0' ' ')"

if [ "$(arg buses)" = 1 ]; then
    # I2C: the header's bus is /dev/i2c-1 (BSC1, i2c-bus.1 in QEMU), where the
    # host put a 24c02 EEPROM at 0x50. Written and read back through i2c-dev.
    [ -c /dev/i2c-1 ] && i2cset -y 1 0x50 0x10 0xa5 && [ "$(i2cget -y 1 0x50 0x10)" = 0xa5 ] \
        && i2cset -y 1 0x50 0x10 0x5a && [ "$(i2cget -y 1 0x50 0x10)" = 0x5a ] \
        && say "PASS i2c: /dev/i2c-1 reaches the EEPROM at 0x50 on the header's bus (wrote and read back 0xa5, 0x5a)" \
        || say "FAIL i2c: /dev/i2c-1 $(ls -l /dev/i2c-1 2>&1); $(i2cget -y 1 0x50 0x10 2>&1)"
    ! i2cget -y 0 0x50 0x10 > /dev/null 2>&1 && say "PASS i2c: nothing answers at 0x50 on /dev/i2c-0 (the EEPROM is on bus 1 only)" \
        || say "FAIL i2c: /dev/i2c-0 answered at 0x50: the buses are numbered otherwise"
    # SPI: /dev/spidev0.0 exists only with the project's overlay (spi0 is
    # disabled in Debian's device tree); QEMU's w25q64 answers its JEDEC ID.
    id=$(spi-jedec-id /dev/spidev0.0 2>&1)
    [ "$id" = "ef 40 17" ] && say "PASS spi: /dev/spidev0.0 (the overlay's spidev on SPI0 CE0) reads the flash's JEDEC ID $id" \
        || say "FAIL spi: /dev/spidev0.0: $id ($(ls /dev/spidev* 2>&1 | tr '\n' ' '))"
fi

if [ "$(arg glitch)" = 1 ]; then
    # The wrong polarity: its locked level is the door's unlocked one.
    case $POLARITY in low) wrong= ;; *) wrong=--active-low ;; esac
    say "glitch: GPIO17 requested at the wrong level for 50 ms"
    gateway ctl gpio pulse --chip pinctrl-bcm2835 --output GPIO17 $wrong --ms 50 > /tmp/glitch.log 2>&1
fi

readies() { # how many "ready in" lines gatewayd has logged (0 before the log exists)
    c=$(grep -c ': ready in [0-9]* ms' "$LOG" 2> /dev/null)
    echo "${c:-0}"
}
start() { # start gatewayd in the background; wait for its (next) "ready in"
    # The log exists before gatewayd starts: a count taken before the
    # background shell opened it was empty, the test an error, and the wait
    # ended at once (a loaded CI host: gatewayctl then found no socket).
    : >> "$LOG"
    n=$(readies)
    gateway daemon --config "$CONFIG" >> "$LOG" 2>&1 &
    GW=$!
    i=0
    while [ "$(readies)" -le "$n" ]; do
        i=$((i + 1))
        [ $i -lt 600 ] && kill -0 $GW 2> /dev/null || { say "FAIL gatewayd not ready: $(tail -3 "$LOG" | tr '\n' ' ')"; finish; }
        sleep 0.2
    done
}
start
say "ready $(grep 'gpio board ready' "$LOG" | grep -o 'strike=.*' | cut -c1-80)"
gateway ctl --socket /tmp/run/control.sock tags enroll-uid --action 0 --label raspi3b 04a1b2c3d4e5f6 > /tmp/enroll.log 2>&1 \
    || say "FAIL enroll: $(cat /tmp/enroll.log)"
: > /tmp/seen
say "enrolled"
i=0
while ! grep -q 'granted' "$LOG"; do
    i=$((i + 1))
    [ $i -lt 300 ] || { say "FAIL no grant: $(tail -5 "$LOG" | tr '\n' ' ')"; break; }
    sleep 0.2
done
say "granted $(grep -m1 'granted' "$LOG" | cut -c1-120)"
sleep 3
kill -TERM $GW
wait $GW
say "sigterm exit $?"
sleep 4
start
say "restarted"
kill -KILL $GW
wait $GW
say "sigkill exit $?"
sleep 4
say "log: $(grep -c . "$LOG") lines; last: $(tail -2 "$LOG" | tr '\n' ' ' | cut -c1-200)"
finish
