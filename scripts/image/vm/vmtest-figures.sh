#!/bin/sh
# Test copy only (scripts/image/test-vm.sh): after gatewayd is READY (or has
# failed), one line of guest-clock figures on the console, which the host reads
# from the serial log (no network needed). vmtest.next=old|new on the kernel
# command line sets the gatewayd unit for the next boot (old: the 0.1.0 unit's
# network-online/time-sync ordering as a drop-in); vmtest.poweroff powers off.
cmdline=$(cat /proc/cmdline)
i=0
while [ $i -lt 600 ]; do
    s=$(systemctl is-active gatewayd.service)
    case $s in active | failed | inactive) break ;; esac
    sleep 0.1
    i=$((i + 1))
done
ready=$(systemctl show -P ActiveEnterTimestampMonotonic gatewayd.service)
exec_us=$(systemctl show -P ExecMainStartTimestampMonotonic gatewayd.service)
userspace=$(systemctl show -P UserspaceTimestampMonotonic)
boot=$(journalctl --list-boots --no-pager 2>/dev/null | grep -c .)
strike=$(gatewayctl status --json 2>/dev/null | sed -n 's/.*"strike" *: *"\([a-z]*\)".*/\1/p')
# Every output change gatewayd logged from its start to READY: locked only.
outs=$(journalctl -b -u gatewayd.service --no-pager -o cat | grep 'sim output ' | tr '\n' ';' | tr ' ' '_')
net=$(networkctl list --no-legend --no-pager 2>/dev/null | awk '$2 != "loopback" { printf "%s:%s/%s,", $2, $4, $5 }')
online=$(systemctl is-active network-online.target)
online_us=$(systemctl show -P ActiveEnterTimestampMonotonic network-online.target)
sync=$(timedatectl show -P NTPSynchronized 2>/dev/null)
dropin=absent
[ -f /etc/systemd/system/gatewayd.service.d/old-unit.conf ] && dropin=present
readyin=$(journalctl -b -u gatewayd.service --no-pager -o cat | sed -n 's/.*ready in \([0-9]*\) ms.*/\1/p' | tail -1)
echo "VMTEST-FIGURES boot=$boot gatewayd_ready_in_ms=$readyin gatewayd=$s userspace_us=$userspace exec_us=$exec_us ready_us=$ready strike=$strike old_unit=$dropin network_online=$online online_us=$online_us ntp_synchronised=$sync links=$net outputs=$outs" > /dev/console
# systemd-analyze answers once the boot has finished (this unit is
# Type=simple, so the boot does not wait for it).
timeout 300 systemctl is-system-running --wait > /dev/null 2>&1
systemd-analyze critical-chain --no-pager gatewayd.service 2>&1 | tail -n +3 | head -12 | sed 's/^/VMTEST-CHAIN /' > /dev/console
systemd-analyze --no-pager 2>&1 | head -2 | sed 's/^/VMTEST-ANALYZE /' > /dev/console
systemd-analyze blame --no-pager 2>&1 | head -8 | sed 's/^/VMTEST-ANALYZE blame /' > /dev/console
case " $cmdline " in
*" vmtest.next=old "*)
    mkdir -p /etc/systemd/system/gatewayd.service.d
    printf '[Unit]\nAfter=network-online.target time-sync.target\nWants=network-online.target\n' \
        > /etc/systemd/system/gatewayd.service.d/old-unit.conf ;;
*" vmtest.next=new "*) rm -f /etc/systemd/system/gatewayd.service.d/old-unit.conf ;;
esac
sync
case " $cmdline " in *" vmtest.poweroff "*) systemctl poweroff --no-block ;; esac
echo "VMTEST-DONE" > /dev/console
