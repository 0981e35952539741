import GatewayConfig

extension LiveConfiguration.Changes {
    /// `[[readers]]` (issue 35): each reader is opened at start (its serial line, its GPIO lines,
    /// its Secure Channel key), so a reload that changes one is refused, naming the key: the
    /// list itself when readers come or go or are renamed, else each changed key.
    mutating func readers(_ old: [ReaderSettings], _ new: [ReaderSettings]) {
        guard old.map(\.name) == new.map(\.name) else {
            names.append("[[readers]]")
            return
        }
        for (a, b) in zip(old, new) {
            key("[[readers]] kind", a.kind != b.kind)
            key("[[readers]] side", a.side != b.side)
            key("[[readers]] actions", a.actions != b.actions)
            key("[[readers]] device", a.osdp?.device != b.osdp?.device)
            key("[[readers]] baud", a.osdp?.baud != b.osdp?.baud)
            key("[[readers]] address", a.osdp?.address != b.osdp?.address)
            key("[[readers]] insecure", a.osdp?.insecure != b.osdp?.insecure)
            key("[[readers]] d0", a.wiegand?.d0 != b.wiegand?.d0)
            key("[[readers]] d1", a.wiegand?.d1 != b.wiegand?.d1)
            key("[[readers]] bits", a.wiegand?.bits != b.wiegand?.bits)
            key("[[readers]] keypad_burst", a.wiegand?.keypadBurst != b.wiegand?.keypadBurst)
            key("[[readers]] chip", a.wiegand?.chip != b.wiegand?.chip)
            key("[[readers]] frame_gap_ms", a.wiegand?.frameGapMilliseconds != b.wiegand?.frameGapMilliseconds)
        }
    }
}
