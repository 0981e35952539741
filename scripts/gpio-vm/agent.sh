#!/bin/sh
# The gpio-vm guest's command channel (run.sh PREPARE mode, `door_agent` on
# the kernel command line): a host process on the other end of the serial
# port $1 sends one line per command, the command's text in base64; the guest
# runs it with sh (stdin /dev/null) and answers one line:
#   <stdout+stderr in base64> @@RC <exit status>
# "@@READY" is sent once at start; a line "@@QUIT" ends the agent (init then
# powers the guest off). Raw mode: no echo, no CR/LF translation.
TTY=${1:-/dev/ttyS1}
export PATH=/bin:/sbin:/usr/bin:/usr/sbin LD_LIBRARY_PATH=/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu
# pn532-sim's pty (the sim board's reader) needs devpts.
mkdir -p /dev/pts && { mountpoint -q /dev/pts || mount -t devpts devpts /dev/pts; } || exit 1
ip link set lo up || exit 1
stty -F "$TTY" raw -echo 115200 || exit 1
exec 3<>"$TTY"
echo "@@READY" >&3
while read -r line <&3; do
    [ "$line" = "@@QUIT" ] && break
    echo "$line" | base64 -d > /tmp/agent.cmd 2>/dev/null || { echo " @@RC 126" >&3; continue; }
    sh /tmp/agent.cmd > /tmp/agent.out 2>&1 < /dev/null
    rc=$?
    { base64 < /tmp/agent.out | tr -d '\n'; echo " @@RC $rc"; } >&3
done
exit 0
