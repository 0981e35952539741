import CStaticNSS
import GatewayCLI

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

// Before anything can look up a user, a group or a host: NSS plugins named in
// /etc/nsswitch.conf must never be dlopen'ed into this static binary
// (DEVELOPERS.md "glibc in a static binary").
var failed: UnsafePointer<CChar>?
if door_pin_static_nss(&failed) != 0 {
    fputs("gateway: cannot pin the name-service switch (\(failed.map { String(cString: $0) } ?? "?"))\n", stderr)
}

Entry.main()
