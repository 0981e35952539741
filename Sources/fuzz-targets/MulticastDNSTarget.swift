import MulticastDNS

/// A datagram heard on the multicast DNS socket while a `*.local` broker is
/// looked up (anyone on the LAN can send one): `MulticastDNS.parse`, then
/// the addresses the link would connect to.
enum MulticastDNSTarget {
    static func run(_ data: [UInt8]) {
        guard let response = try? MulticastDNS.parse(data) else { return }
        expect(response.records.count <= data.count / 11, "more records than the bytes can hold")
        for record in response.records {
            expect(record.name.utf8.count <= 254, "a name longer than 255 bytes on the wire")
            expect(record.klass & 0x8000 == 0, "the cache-flush bit left in the class")
            for address in response.ipv4Addresses(of: record.name.isEmpty ? "broker.local" : record.name) {
                let octets = address.split(separator: ".")
                expect(octets.count == 4 && octets.allSatisfy { UInt8($0) != nil }, "not an IPv4 address: \(address)")
            }
        }
        for address in response.ipv4Addresses(of: "broker.local") {
            expect(
                response.records.contains { $0.name == "broker.local" && $0.type == 1 && $0.data.count == 4 },
                "\(address) for broker.local without an A record naming it")
        }
    }
}
