import DoorCore
import Foundation
import GatewayConfig
import GatewayStore
import TestSupport
import XCTest

@testable import GatewayDaemon

/// The keypad desk in the running door (issue 35), on the real store (scrypt
/// at the keypad's cost): a PIN is checked off the door queue, so a card at
/// another reader is decided meanwhile; the check's result comes back to the
/// door queue and counts toward the reader's lockout there; the door's
/// lockout clear ends keypad lockouts too, and status shows them.
final class KeypadRuntimeTests: DoorRuntimeTestCase {
    let card = CardNumber(format: .h10301, facility: 7, number: 4242)!

    func makeDoor() throws -> (DoorRuntime, GatewayStore, AuditWriter) {
        let configuration = try doorConfiguration(
            id: "keypad-runtime",
            """
            [door]
            same_tag_quiet_ms = 1000
            [[actions]]
            index = 0
            name = "front"
            steps = [{ pulse = "strike", ms = 300 }]
            credentials = ["osdp", "pin"]
            [[readers]]
            name = "street"
            kind = "osdp"
            device = "/dev/null"
            address = 1
            [[readers]]
            name = "yard"
            kind = "osdp"
            device = "/dev/null"
            address = 2
            """)
        let (runtime, _, store, writer) = try makeRuntime(configuration, label: "keypad-runtime")
        try store.enrollCard(card, action: 0, label: "yard card", now: 1)
        let salt = try Crypto.randomBytes(16)
        try store.addPINCode(
            key: PINCode.key(random: try Crypto.randomBytes(14))!,
            hash: try PINHash(pin: PIN("135790")!, salt: salt), action: 0, label: "courier", limits: TagLimits(),
            now: 1)
        runtime.start()
        runtime.committed()
        return (runtime, store, writer)
    }

    func type(_ runtime: DoorRuntime, _ text: String, reader: String) {
        for ch in text {
            let key: KeypadKey = ch == "#" ? .enter : .digit(UInt8(String(ch))!)
            runtime.readerReport(.keypad(reader: reader, key))
        }
    }

    /// The access rows after `after` (kind, reason, source), once `count` are there.
    func accessRows(_ store: GatewayStore, _ writer: AuditWriter, after: Int64, count: Int) throws -> [AuditRow] {
        let deadline = Date() + 10
        while true {
            writer.flush()
            let rows = try store.auditRows(after: after).filter {
                $0.kind == "access_granted" || $0.kind == "access_denied"
            }
            if rows.count >= count || Date() > deadline { return rows }
            usleep(10_000)
        }
    }

    func lastID(_ store: GatewayStore, _ writer: AuditWriter) throws -> Int64 {
        writer.flush()
        return try store.auditRows(after: 0, limit: 100_000).last?.id ?? 0
    }

    /// Enter at one reader, then a card at another, both queued back to back:
    /// the card is decided while the PIN is being hashed, so its row comes
    /// first; the PIN's answer follows, from the door queue, naming its reader.
    func testACardAtAnotherReaderIsDecidedWhileAPINIsChecked() throws {
        let (runtime, store, writer) = try makeDoor()
        let start = try lastID(store, writer)
        type(runtime, "000000#", reader: "street")
        runtime.readerReport(.arrived(TapFacts(card: CardRead(number: card, reader: "yard", link: .osdpSecure))))
        let rows = try accessRows(store, writer, after: start, count: 2)
        XCTAssertEqual(
            rows.map { "\($0.kind) \($0.reason ?? "-") \($0.source ?? "-")" },
            ["access_granted osdp_secure_channel reader:yard", "access_denied wrong_pin reader:street"])
    }

    /// Two entries typed back to back on one keypad (the second while the first is
    /// hashed): both are decided, in the order typed — none lost.
    func testEntriesTypedDuringACheckAreDecidedInOrder() throws {
        let (runtime, store, writer) = try makeDoor()
        let start = try lastID(store, writer)
        type(runtime, "000000#135790#", reader: "street")
        let rows = try accessRows(store, writer, after: start, count: 2)
        XCTAssertEqual(
            rows.map { "\($0.kind) \($0.reason ?? "-") \($0.source ?? "-")" },
            ["access_denied wrong_pin reader:street", "access_granted pin reader:street"])
    }

    /// Wrong PINs lock the street keypad (counted as each check comes back);
    /// status and `lockout status` show it with its end; the door's lockout
    /// clear ends it, and the next right code at that reader opens.
    func testAKeypadLockoutShowsInStatusAndTheDoorsClearEndsIt() throws {
        let (runtime, store, writer) = try makeDoor()
        for n in 1...5 {
            let before = try lastID(store, writer)
            type(runtime, "000000#", reader: "street")
            // The next entry once this one is answered (keys typed during a check are dropped).
            let rows = try accessRows(store, writer, after: before, count: 1)
            XCTAssertEqual(rows.map(\.reason), ["wrong_pin"], "entry \(n)")
        }
        runtime.committed()
        XCTAssertEqual(Array(runtime.keypadLockouts.keys), ["street"])
        let document = runtime.stateDocument()
        XCTAssertEqual(document["lockout"], .bool(true))
        XCTAssertEqual(document["readers"]?["street"]?["keypad_lockout"], .bool(true))
        XCTAssertEqual(document["readers"]?["yard"]?["keypad_lockout"], .bool(false))
        XCTAssertEqual(document["readers"]?["street"]?["online"], .bool(false), "no report yet: offline")

        // Locked: the right code is dropped unread.
        var before = try lastID(store, writer)
        type(runtime, "135790#", reader: "street")
        runtime.committed()
        usleep(300_000)
        runtime.committed()
        XCTAssertEqual(try accessRows(store, writer, after: before, count: 0).count, 0, "a locked keypad is ignored")

        runtime.submit(.admin(.clearLockout))
        runtime.committed()
        XCTAssertTrue(runtime.keypadLockouts.isEmpty, "the door's clear ends the keypad's lockout")
        XCTAssertEqual(runtime.stateDocument()["lockout"], .bool(false))
        before = try lastID(store, writer)
        type(runtime, "135790#", reader: "street")
        let rows = try accessRows(store, writer, after: before, count: 1)
        XCTAssertEqual(rows.map { "\($0.kind) \($0.source ?? "-")" }, ["access_granted reader:street"])
    }

    /// An OSDP reader's link and tamper as it reports them reach the state document.
    func testAReadersLinkAndTamperReachTheStateDocument() throws {
        let (runtime, _, _) = try makeDoor()
        runtime.outdoorReaderStatus("street", online: true)
        runtime.outdoorReaderStatus("street", tamper: true)
        runtime.committed()
        let street = runtime.stateDocument()["readers"]?["street"]
        XCTAssertEqual(street?["online"], .bool(true))
        XCTAssertEqual(street?["tamper"], .bool(true))
        XCTAssertEqual(runtime.stateDocument()["readers"]?["yard"]?["online"], .bool(false))
    }
}
