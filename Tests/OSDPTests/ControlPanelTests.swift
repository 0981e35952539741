import DoorCore
import XCTest

@testable import OSDP

/// The CP state machine against TestReader, time given by the test.
final class ControlPanelTests: XCTestCase {
    let scbk: [UInt8] = Array(0x60...0x6F)
    let cpRandom: [UInt8] = Array(0xB0...0xB7)

    func makeCP(_ security: ControlPanel.Security, address: UInt8 = 1) -> ControlPanel {
        let random = cpRandom
        return ControlPanel(ControlPanel.Configuration(address: address, security: security)) { _ in random }
    }

    /// Runs the CP against the reader for `steps` exchanges (each answered at once, then 50 ms
    /// later the next); `alter` may change or drop each reply. Returns every event.
    @discardableResult
    func run(
        _ cp: inout ControlPanel, _ reader: inout TestReader, now: inout UInt64, steps: Int,
        alter: (Int, [UInt8]) -> [UInt8]? = { $1 }
    ) -> [ControlPanel.Event] {
        var events: [ControlPanel.Event] = []
        for step in 0..<steps {
            let out: ControlPanel.Output
            if cp.phase == .idle {
                out = cp.start(now: now)
            } else {
                now = max(now, cp.nextDeadline)
                out = cp.tick(now: now)
            }
            events += out.events
            if let bytes = out.send, let reply = reader.answer(bytes), let heard = alter(step, reply) {
                now += 5
                let got = cp.received(heard, now: now)
                events += got.events
                XCTAssertNil(got.send, "the CP speaks only on a tick")
            }
        }
        return events
    }

    func testSecureLinkComesUpAndReportsCardsAndKeys() throws {
        var cp = makeCP(.required(scbk: scbk))
        var reader = TestReader(scbk: scbk)
        var now: UInt64 = 0
        var events = run(&cp, &reader, now: &now, steps: 4)
        XCTAssertEqual(reader.commands.map(\.code), [0x61, 0x62, 0x76, 0x77])
        XCTAssertEqual(reader.commands.map(\.sequence), [0, 1, 2, 3])
        XCTAssertEqual(reader.commands[2].securityBlock, SecurityBlock(.scs11, data: [1]))
        XCTAssertEqual(reader.commands[2].data, cpRandom)
        guard case .online(let id, let caps, secure: true)? = events.last else {
            return XCTFail("not online and secure: \(events)")
        }
        XCTAssertEqual(id.serialNumber, 0x1234_5678)
        XCTAssertEqual(caps.first, Capability(function: 9, compliance: 1, items: 1))
        XCTAssertTrue(cp.isSecure)
        XCTAssertTrue(cp.isOnline)

        reader.pending = [(0x50, hex("00 01 1A 00 AA BB CC C0")), (0x53, hex("00 02 31 0D")), (0x48, [1, 0])]
        XCTAssertFalse("\(cp)".contains("\(scbk)"), "the SCBK in a description")
        XCTAssertFalse(String(reflecting: cp).contains("\(scbk)"), "the SCBK in a debug description")
        XCTAssertFalse("\(cp.configuration.security)".contains("96"), "a key byte in a description")
        cp.enqueue(
            .led(
                LEDCommand(
                    led: 0, permanent: .init(control: 1, onTime: 1, offTime: 0, onColor: .green, offColor: .black))))
        events = run(&cp, &reader, now: &now, steps: 5)
        XCTAssertEqual(
            events,
            [
                .localStatus(tamper: 0, power: 0),
                .card(CardRead(reader: 0, format: 1, bitCount: 26, bits: hex("AA BB CC C0"))),
                .keypad(reader: 0, keys: [0x31, 0x0D]), .localStatus(tamper: 1, power: 0),
            ])
        // osdp_LSTAT once, the LED (in place of a poll), then polls; sequence 1, 2, 3, 1, … after 0.
        XCTAssertEqual(reader.commands.dropFirst(4).map(\.code), [0x64, 0x69, 0x60, 0x60, 0x60])
        XCTAssertEqual(reader.commands.dropFirst(4).map(\.sequence), [1, 2, 3, 1, 2])
        XCTAssertTrue(reader.commands.dropFirst(4).allSatisfy { $0.securityBlock != nil && $0.mac != nil })
        XCTAssertEqual(reader.commandErrors, [])
    }

    func testAReaderWithoutSecureChannelIsRefusedUnlessNamedInsecure() {
        var reader = TestReader(scbk: scbk)
        reader.secureCapable = false
        var cp = makeCP(.required(scbk: scbk))
        var now: UInt64 = 0
        let events = run(&cp, &reader, now: &now, steps: 2)
        XCTAssertEqual(events, [.refused(.noSecureChannel)])
        XCTAssertFalse(cp.isOnline)
        XCTAssertEqual(reader.commands.map(\.code), [0x61, 0x62])

        var plain = makeCP(.insecure)
        var reader2 = reader
        reader2.commands = []
        now = 0
        var got = run(&plain, &reader2, now: &now, steps: 3)
        guard case .online(_, _, secure: false)? = got.first else { return XCTFail("\(got)") }
        reader2.pending = [(0x50, hex("00 01 1A 00 AA BB CC C0"))]
        got = run(&plain, &reader2, now: &now, steps: 1)
        XCTAssertEqual(got, [.card(CardRead(reader: 0, format: 1, bitCount: 26, bits: hex("AA BB CC C0")))])
        XCTAssertFalse(plain.isSecure)
    }

    func testAReaderWithAnotherKeyIsRefused() {
        var cp = makeCP(.required(scbk: scbk))
        var reader = TestReader(scbk: SecureChannel.defaultKey)
        var now: UInt64 = 0
        let events = run(&cp, &reader, now: &now, steps: 3)
        XCTAssertEqual(events, [.refused(.wrongKey)])
        XCTAssertFalse(cp.isSecure)
        XCTAssertFalse(cp.isOnline)
        // It does not get the server cryptogram.
        XCTAssertFalse(reader.commands.contains { $0.code == 0x77 })
    }

    /// Install mode asks for SCBK-D (SCB data 0) and comes up with a reader that has it.
    func testInstallModeUsesTheDefaultKey() {
        var cp = makeCP(.install)
        var reader = TestReader(scbk: scbk)
        var now: UInt64 = 0
        let events = run(&cp, &reader, now: &now, steps: 4)
        XCTAssertEqual(reader.commands[2].securityBlock, SecurityBlock(.scs11, data: [0]))
        guard case .online(_, _, secure: true)? = events.last else { return XCTFail("\(events)") }
    }

    /// A reader whose RMAC_I is wrong (or says "not established") does not get a session.
    func testABadInitialRMACIsRefused() {
        var cp = makeCP(.required(scbk: scbk))
        var reader = TestReader(scbk: scbk)
        var now: UInt64 = 0
        let events = run(&cp, &reader, now: &now, steps: 4) { step, reply in
            guard step == 3 else { return reply }
            var frame = try! Frame.parse(reply)
            frame.data[0] ^= 1
            return try! frame.encoded()
        }
        XCTAssertEqual(events, [.refused(.secureChannel(.initialRMACMismatch))])
        XCTAssertFalse(cp.isSecure)
    }

    /// Mid-session attacks: a plaintext reply (downgrade), a MAC-tampered reply, a replayed
    /// reply. Each is refused, the card it carries is not reported, the session ends and the
    /// link starts over from sequence 0.
    func testDowngradeTamperAndReplayMidSessionAreRefused() throws {
        for attack in ["downgrade", "tamper", "replay"] {
            var cp = makeCP(.required(scbk: scbk))
            var reader = TestReader(scbk: scbk)
            var now: UInt64 = 0
            _ = run(&cp, &reader, now: &now, steps: 4)
            XCTAssertTrue(cp.isSecure, attack)
            var old: [UInt8] = []
            reader.pending = [(0x40, []), (0x40, []), (0x40, []), (0x50, hex("00 01 1A 00 AA BB CC C0"))]
            let events = run(&cp, &reader, now: &now, steps: 4) { step, reply in
                if step == 0 { old = reply }
                guard step == 3 else { return reply }
                switch attack {
                case "downgrade":
                    let frame = try! Frame.parse(reply)
                    return try! Frame(
                        address: 1, isReply: true, sequence: frame.sequence, code: 0x50,
                        data: hex("00 01 1A 00 AA BB CC C0")
                    ).encoded()
                case "tamper":
                    var bytes = reply
                    bytes[bytes.count - 4] ^= 0x01  // a MAC byte (the CRC is redone)
                    let body = Array(bytes.dropLast(2))
                    var fixed = body
                    OSDP.appendCheck(to: &fixed, crc: true)
                    return fixed
                default:
                    // The reply to the first poll of this run, sequence 1 again (1, 2, 3, 1).
                    return old
                }
            }
            let expected: SecureChannelError =
                attack == "downgrade" ? .plaintextInSession(code: 0x50) : .badMAC
            XCTAssertEqual(
                events, [.localStatus(tamper: 0, power: 0), .refused(.secureChannel(expected)), .offline], attack)
            XCTAssertFalse(cp.isSecure, attack)
            // After the reconnect interval the CP starts over: osdp_ID with sequence 0.
            now += 1000
            let next = cp.tick(now: now)
            let frame = try Frame.parse(Array(try XCTUnwrap(next.send).dropFirst()))
            XCTAssertEqual(frame.code, 0x61, attack)
            XCTAssertEqual(frame.sequence, 0, attack)
            XCTAssertNil(frame.securityBlock, attack)
        }
    }

    /// No reply: the command is sent again (same bytes) `retries` times, then the reader is
    /// offline, reported once, and retried every reconnect interval; it comes back.
    func testOfflineAfterRetriesAndBackOnline() throws {
        var cp = makeCP(.required(scbk: scbk))
        var reader = TestReader(scbk: scbk)
        var now: UInt64 = 0
        _ = run(&cp, &reader, now: &now, steps: 4)
        XCTAssertTrue(cp.isOnline)
        let before = reader.commands.count
        let lastHeard = now
        var events = run(&cp, &reader, now: &now, steps: 4) { _, _ in nil }
        let sent = reader.commands.dropFirst(before).map(\.macInput)
        XCTAssertEqual(sent.count, 3)
        XCTAssertEqual(Set(sent).count, 1, "a retry is the same packet")
        XCTAssertEqual(events, [.offline])
        XCTAssertFalse(cp.isOnline)
        // Reported within 2 s of the last reply: the next poll a poll interval after the last
        // send (whose reply came 5 ms after it), then 3 × the reply timeout.
        XCTAssertEqual(now - lastHeard, 50 - 5 + 3 * 200)
        // Silence goes on: no second .offline.
        events = run(&cp, &reader, now: &now, steps: 6) { _, _ in nil }
        XCTAssertEqual(events, [])
        // The reader answers again: back online, secure.
        events = run(&cp, &reader, now: &now, steps: 6)
        XCTAssertTrue(cp.isOnline && cp.isSecure, "\(events)")
        XCTAssertEqual(events.filter { if case .online = $0 { return true } else { return false } }.count, 1)
    }

    /// osdp_BUSY: the same command again after a poll interval, same sequence number.
    func testBusyRepeatsTheCommand() throws {
        var cp = makeCP(.insecure)
        var reader = TestReader(scbk: scbk)
        var now: UInt64 = 0
        _ = run(&cp, &reader, now: &now, steps: 3)  // ID, CAP, LSTAT
        XCTAssertTrue(cp.isOnline)
        cp.enqueue(.buzzer(BuzzerCommand(onTime: 1, offTime: 1, count: 1)))
        let events = run(&cp, &reader, now: &now, steps: 2) { step, reply in
            guard step == 0 else { return reply }
            return try! Frame(address: 1, isReply: true, sequence: 0, code: 0x79).encoded()
        }
        XCTAssertEqual(events, [])
        XCTAssertEqual(reader.commands.suffix(2).map(\.code), [0x6A, 0x6A])
        XCTAssertEqual(Set(reader.commands.suffix(2).map(\.sequence)).count, 1)
    }

    /// osdp_BUSY inside a Secure Channel session (MAC'd): the command again, same sequence number,
    /// the session still up.
    func testBusyInsideTheSessionRepeatsTheCommand() throws {
        var cp = makeCP(.required(scbk: scbk))
        var reader = TestReader(scbk: scbk)
        var now: UInt64 = 0
        _ = run(&cp, &reader, now: &now, steps: 5)  // ID, CAP, CHLNG, SCRYPT, LSTAT
        XCTAssertTrue(cp.isSecure)
        cp.enqueue(.buzzer(BuzzerCommand(onTime: 1, offTime: 1, count: 1)))
        reader.busyOnce = true
        let events = run(&cp, &reader, now: &now, steps: 3)
        XCTAssertEqual(events, [])
        XCTAssertEqual(reader.commands.suffix(3).map(\.code), [0x6A, 0x6A, 0x60])
        XCTAssertEqual(reader.commands.suffix(3).map(\.sequence), [2, 2, 3])
        XCTAssertTrue(cp.isSecure)
        XCTAssertEqual(reader.commandErrors, [])
    }

    /// Garbage, another address's reply, a wrong sequence number: dropped (reported as
    /// malformed), the command still waits for its reply, and the real reply is taken.
    func testNoiseAndStrayRepliesAreDropped() throws {
        var cp = makeCP(.insecure)
        var now: UInt64 = 0
        let first = try XCTUnwrap(cp.start(now: now).send)
        XCTAssertEqual(first.first, OSDP.mark)
        var reader = TestReader(scbk: scbk)
        let reply = try XCTUnwrap(reader.answer(first))
        now += 5
        var other = reader
        other.address = 2
        var stray = try Frame.parse(reply)
        stray.address = 2
        var events = cp.received(try stray.encoded(), now: now).events
        var wrongSeq = try Frame.parse(reply)
        wrongSeq.sequence = 2
        events += cp.received(try wrongSeq.encoded(), now: now).events
        var bad = reply
        bad[bad.count - 1] ^= 0xFF
        events += cp.received([0x00, 0xFF] + bad, now: now).events
        // Another address's reply is not ours and not an error; the wrong sequence and the bad
        // CRC are reported.
        XCTAssertEqual(events.count, 2)
        XCTAssertEqual(events.first, .malformed(.badSequence(2)))
        if case .malformed(.badCRC) = events.last {} else { XCTFail("\(events)") }
        XCTAssertEqual(cp.received(reply, now: now).events, [])
        now += 50
        let next = try XCTUnwrap(cp.tick(now: now).send)
        XCTAssertEqual(try Frame.parse(Array(next.dropFirst())).code, 0x62, "the ID reply was taken")
    }
}
