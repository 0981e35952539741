import XCTest

@testable import MulticastDNS

/// The bytes of a one-shot query and what is read from an answer (RFC 6762,
/// RFC 1035 §4.1): pure, no sockets.
final class MessageTests: XCTestCase {
    func testLocalNamesAreTold() {
        for name in ["broker.local", "Home-Assistant.LOCAL", "broker.local.", "a.b.local"] {
            XCTAssertTrue(MulticastDNS.isLocalName(name), name)
        }
        for name in [
            "local", "broker.lan", "192.168.1.10", "broker.localdomain", "broker..local", "", ".local", "bröker.local",
        ] {
            XCTAssertFalse(MulticastDNS.isLocalName(name), name)
        }
        XCTAssertEqual(MulticastDNS.canonical("broker.local."), "broker.local")
    }

    func testAQueryIsOneQuestionWithTheUnicastResponseBit() throws {
        let q = try MulticastDNS.query(for: "Broker.local.", id: 0x1234)
        XCTAssertEqual(
            q,
            [0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]
                + [6] + Array("Broker".utf8) + [5] + Array("local".utf8) + [0]
                + [0, 1, 0x80, 0x01])
        let qm = try MulticastDNS.query(for: "broker.local", type: .aaaa, unicastResponse: false)
        XCTAssertEqual(Array(qm.suffix(4)), [0, 28, 0, 1])
        XCTAssertEqual(Array(qm.prefix(2)), [0, 0])
    }

    func testAQueryRefusesWhatIsNoHostName() {
        XCTAssertThrowsError(try MulticastDNS.query(for: String(repeating: "a", count: 64) + ".local"))
        XCTAssertThrowsError(try MulticastDNS.query(for: "a b.local"))
        XCTAssertThrowsError(try MulticastDNS.query(for: "broker..local"))
        let long = Array(repeating: String(repeating: "a", count: 60), count: 5).joined(separator: ".") + ".local"
        XCTAssertThrowsError(try MulticastDNS.query(for: long)) {
            XCTAssertEqual($0 as? MulticastDNS.MessageError, .nameTooLong)
        }
    }

    /// What avahi-daemon sends for `broker.local` (its layout: the question
    /// echoed for a legacy unicast query, the answer's name compressed to the
    /// question's, cache-flush bit set, TTL 120... here 10).
    static func answer(
        id: UInt16 = 0x1234, name: [UInt8] = [6] + Array("broker".utf8) + [5] + Array("local".utf8) + [0],
        address: [UInt8] = [10, 53, 0, 1], ttl: UInt32 = 10, flags: [UInt8] = [0x84, 0x00]
    ) -> [UInt8] {
        var m: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xFF)] + flags + [0, 1, 0, 1, 0, 0, 0, 0]
        m += name + [0, 1, 0, 1]
        m += [0xC0, 12, 0, 1, 0x80, 1]
        m += [UInt8(ttl >> 24), UInt8((ttl >> 16) & 0xFF), UInt8((ttl >> 8) & 0xFF), UInt8(ttl & 0xFF), 0, 4] + address
        return m
    }

    func testAnAnswerGivesTheAddressOfTheNameAskedFor() throws {
        let response = try MulticastDNS.parse(Self.answer())
        XCTAssertEqual(response.id, 0x1234)
        XCTAssertEqual(response.records.count, 1)
        XCTAssertEqual(response.records[0].name, "broker.local")
        XCTAssertEqual(response.records[0].klass, 1, "the cache-flush bit is not part of the class")
        XCTAssertEqual(response.ipv4Addresses(of: "BROKER.local."), ["10.53.0.1"])
        XCTAssertEqual(response.ipv4Addresses(of: "other.local"), [])
        let upper = try MulticastDNS.parse(
            Self.answer(name: [6] + Array("BROKER".utf8) + [5] + Array("LOCAL".utf8) + [0]))
        XCTAssertEqual(upper.ipv4Addresses(of: "broker.local"), ["10.53.0.1"])
    }

    func testAGoodbyeIsNoAddress() throws {
        XCTAssertEqual(try MulticastDNS.parse(Self.answer(ttl: 0)).ipv4Addresses(of: "broker.local"), [])
    }

    func testRecordsAfterTheAnswerAreRead() throws {
        // An AAAA answer, then the A record in the additional section (as
        // responders add it), name compressed to the answer's.
        var m: [UInt8] = [0, 0, 0x84, 0, 0, 0, 0, 1, 0, 1, 0, 1]
        m += [6] + Array("broker".utf8) + [5] + Array("local".utf8) + [0] + [0, 28, 0x80, 1, 0, 0, 0, 120, 0, 16]
        m += [UInt8](repeating: 0xFE, count: 16)
        // An authority record naming another address for it: skipped.
        m += [0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 120, 0, 4, 9, 9, 9, 9]
        m += [0xC0, 12, 0, 1, 0x80, 1, 0, 0, 0, 120, 0, 4, 192, 168, 7, 8]
        let r = try MulticastDNS.parse(m)
        XCTAssertEqual(r.records.map(\.type), [28, 1])
        XCTAssertEqual(r.ipv4Addresses(of: "broker.local"), ["192.168.7.8"])
    }

    func testQueriesAndBrokenMessagesAreRefused() {
        XCTAssertEqual(parseError(Self.answer(flags: [0x00, 0x00])), .notAResponse)
        XCTAssertEqual(parseError(Self.answer(flags: [0x84 | 0x08, 0x00])), .notAResponse)
        let whole = Self.answer()
        for n in 0..<whole.count {
            XCTAssertEqual(parseError(Array(whole.prefix(n))), .truncated, "cut at \(n)")
        }
        // A pointer to itself, and one forward.
        var loop = Self.answer()
        loop[12 + 14 + 4] = 0xC0
        loop[12 + 14 + 5] = UInt8(12 + 14 + 4)
        XCTAssertEqual(parseError(loop), .badPointer)
        var forward = Self.answer()
        forward[12 + 14 + 5] = 200
        XCTAssertEqual(parseError(forward), .badPointer)
        var extended = Self.answer()
        extended[12] = 0x41
        XCTAssertEqual(parseError(extended), .badPointer)
    }

    func testANameOver255BytesIsRefused() {
        // Labels chained through pointers, each pointing back (so the walk
        // ends), held in a TXT record's data; the A record's name is the
        // last link, and the name it spells is 321 bytes long.
        var chain: [UInt8] = [63] + [UInt8](repeating: 0x61, count: 63) + [0]
        let chainStart = 12 + 1 + 10
        var previous = chainStart
        for _ in 0..<4 {
            let here = chainStart + chain.count
            chain += [63] + [UInt8](repeating: 0x62, count: 63) + [0xC0 | UInt8(previous >> 8), UInt8(previous & 0xFF)]
            previous = here
        }
        var m: [UInt8] = [0, 0, 0x84, 0, 0, 0, 0, 2, 0, 0, 0, 0]
        m += [0, 0, 16, 0, 1, 0, 0, 0, 1, UInt8(chain.count >> 8), UInt8(chain.count & 0xFF)] + chain
        m += [0xC0 | UInt8(previous >> 8), UInt8(previous & 0xFF), 0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4]
        XCTAssertEqual(parseError(m), .nameTooLong)
        // The same chain cut to three links (257 - 64 = 193 bytes) reads.
        var short: [UInt8] = [0, 0, 0x84, 0, 0, 0, 0, 2, 0, 0, 0, 0]
        let link2 = chainStart + 65 + 66
        short += [0, 0, 16, 0, 1, 0, 0, 0, 1, UInt8(chain.count >> 8), UInt8(chain.count & 0xFF)] + chain
        short += [0xC0 | UInt8(link2 >> 8), UInt8(link2 & 0xFF), 0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4]
        let read = try? MulticastDNS.parse(short)
        XCTAssertEqual(read?.records.last?.name.count, 3 * 63 + 2)
        var direct: [UInt8] = [0, 0, 0x84, 0, 0, 0, 0, 1, 0, 0, 0, 0]
        for _ in 0..<5 { direct += [60] + [UInt8](repeating: 0x61, count: 60) }
        direct += [0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4]
        XCTAssertEqual(parseError(direct), .nameTooLong)
    }

    private func parseError(_ m: [UInt8]) -> MulticastDNS.MessageError? {
        do {
            _ = try MulticastDNS.parse(m)
            return nil
        } catch { return error }
    }
}
