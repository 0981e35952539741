#!/usr/bin/python3
"""A real multicast DNS responder for the tests: Debian's python3-zeroconf
(the library Home Assistant announces itself with) publishes an MQTT service
whose host is NAME at ADDRESS, so it answers A queries for NAME — multicast
and, for a one-shot querier on another port, unicast (RFC 6762 §6.7).

    responder.py NAME ADDRESS [PORT [INTERFACE_ADDRESS]]

INTERFACE_ADDRESS: answer only on the interface holding that address (the
arm64 VM test's tap), not on every interface of the machine.

Prints "ready" when the records are registered; runs until SIGTERM/SIGINT.
"""
import signal
import socket
import sys

from zeroconf import IPVersion, ServiceInfo, Zeroconf


def main():
    name, address = sys.argv[1], sys.argv[2]
    port = int(sys.argv[3]) if len(sys.argv) > 3 else 8883
    host = name.rstrip(".") + "."
    info = ServiceInfo(
        "_secure-mqtt._tcp.local.",
        f"{host.split('.')[0]} broker._secure-mqtt._tcp.local.",
        addresses=[socket.inet_aton(address)],
        port=port,
        server=host,
    )
    if len(sys.argv) > 4:
        zc = Zeroconf(interfaces=[sys.argv[4]], ip_version=IPVersion.V4Only)
    else:
        zc = Zeroconf(ip_version=IPVersion.V4Only)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    zc.register_service(info, allow_name_change=True)
    print("ready", flush=True)
    while not stop:
        signal.pause()
    zc.unregister_all_services()
    zc.close()


if __name__ == "__main__":
    main()
