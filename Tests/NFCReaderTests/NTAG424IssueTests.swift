import DoorCore
import Foundation
import NFCReader
import Synchronization
import TestSupport
import XCTest

/// Key issues (docs/ntag424.md "Re-issuing a tag") through the real libnfc
/// against pn532-sim: the reader sends key material only to the UID the
/// door named, only in a session of a key 0 the door issued (or the factory
/// key on a factory tag), takes a torn attempt's salt again only when the
/// chip proves one of its keys, and resets only a tag that proves the
/// door's key 0. pn532-sim counts every ChangeKey a tag received.
final class NTAG424IssueTests: XCTestCase {
    static let uid = TagUID(hex: "04DE5F1EACC041")!
    static let master: [UInt8] = Array(0..<16)
    static let base = "https://door.example/t"
    static let zero = [UInt8](repeating: 0, count: 16)

    /// The door's attempt store, as `GatewayStore.newNTAG424Attempt` keeps it: one issue per UID.
    final class Attempts: Sendable {
        let held = Mutex<NTAG424.KeyIssue?>(nil)
        func plan(uid: TagUID, replacing: NTAG424.KeyIssue? = nil) -> NTAG424IssuePlan {
            let next = NTAG424.KeyIssue.next(after: replacing, salt: []).version
            return NTAG424IssuePlan(
                uid: uid, replacing: replacing, resume: held.withLock { $0 }.flatMap { $0.version == next ? $0 : nil },
                fresh: { [self] in
                    let fresh = NTAG424.KeyIssue.next(after: replacing, salt: try Crypto.randomBytes(16))
                    self.held.withLock { $0 = fresh }
                    return fresh
                })
        }
    }

    func changeKeys(_ sim: PN532SimProcess) throws -> Int {
        let answer = try sim.control("ntag424-changekeys")
        return try XCTUnwrap(Int(answer.dropFirst(3)), answer)
    }

    func open(_ sim: PN532SimProcess) throws -> NFCReader {
        let reader = NFCReader(connstring: "pn532_uart:\(sim.tty)")
        try reader.open()
        return reader
    }

    func key0(_ issue: NTAG424.KeyIssue, _ uid: TagUID = uid) throws -> [UInt8] {
        try NTAG424.DoorKeys(masterKey: Self.master, uid: uid.bytes, issue: issue)[0]
    }

    func testASaltedIssueOpensWithItsOwnKeysOnly() throws {
        let sim = try PN532SimProcess()
        let reader = try open(sim)
        defer { reader.close() }
        XCTAssertTrue(try sim.control("insert ntag424 \(Self.uid.hex)").hasPrefix("ok"))
        let attempts = Attempts()
        let done = try XCTUnwrap(
            try reader.provisionNTAG424(masterKey: Self.master, base: Self.base, plan: attempts.plan(uid: Self.uid)))
        XCTAssertEqual(done.issue, attempts.held.withLock { $0 })
        XCTAssertEqual(done.issue.version, 2)
        XCTAssertNotNil(done.issue.salt)
        XCTAssertEqual(
            try reader.tapNTAG424(key: { _ in try? self.key0(done.issue) })?.proof,
            .authenticated(cardUID: Self.uid.bytes))
        // The legacy keys (master and UID alone) do not open it: the salt is part of every key.
        guard case .refused = try XCTUnwrap(try reader.tapNTAG424(key: { _ in try? self.key0(.legacy) })).proof else {
            return XCTFail("the unsalted key 0 authenticates a salted issue")
        }

        // A reissue: the tag proves its key 0 of the first issue, gets a new salt and version.
        let again = try XCTUnwrap(
            try reader.provisionNTAG424(
                masterKey: Self.master, base: Self.base, plan: attempts.plan(uid: Self.uid, replacing: done.issue)))
        XCTAssertEqual(again.issue.version, 3)
        XCTAssertNotEqual(again.issue.salt, done.issue.salt)
        XCTAssertEqual(
            try reader.tapNTAG424(key: { _ in try? self.key0(again.issue) })?.proof,
            .authenticated(cardUID: Self.uid.bytes))
        guard case .refused = try XCTUnwrap(try reader.tapNTAG424(key: { _ in try? self.key0(done.issue) })).proof
        else { return XCTFail("the first issue's key 0 still authenticates") }
    }

    /// A job for one UID sends nothing to another.
    func testAnotherUIDGetsNoKey() throws {
        let sim = try PN532SimProcess()
        let reader = try open(sim)
        defer { reader.close() }
        XCTAssertTrue(try sim.control("insert ntag424 04DE5F1EACC0FF").hasPrefix("ok"))
        XCTAssertThrowsError(
            try reader.provisionNTAG424(masterKey: Self.master, base: Self.base, plan: Attempts().plan(uid: Self.uid))
        ) {
            guard case ReaderError.wrongTag = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertEqual(try changeKeys(sim), 0)
    }

    /// A chip that reports keys 1–4 at the version of a torn attempt it cannot
    /// prove gets no key; nor does one claiming the replaced issue's keys 1–4
    /// under a factory key 0.
    func testAChipThatClaimsKeyVersionsItCannotProveGetsNoKey() throws {
        let sim = try PN532SimProcess()
        let reader = try open(sim)
        defer { reader.close() }
        let attempts = Attempts()
        _ = try attempts.plan(uid: Self.uid).fresh()  // an earlier attempt drew version 2
        XCTAssertTrue(try sim.control("insert ntag424 \(Self.uid.hex)").hasPrefix("ok"))
        XCTAssertTrue(try sim.control("ntag424-fault versions 0,2,2,2,2").hasPrefix("ok"))
        XCTAssertThrowsError(
            try reader.provisionNTAG424(masterKey: Self.master, base: Self.base, plan: attempts.plan(uid: Self.uid))
        ) {
            guard case ReaderError.foreignContent = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertEqual(try changeKeys(sim), 0)

        let replaced = NTAG424.KeyIssue(salt: Array(repeating: 7, count: 16), version: 5)
        XCTAssertTrue(try sim.control("insert ntag424 \(Self.uid.hex)").hasPrefix("ok"))
        XCTAssertTrue(try sim.control("ntag424-fault versions 0,5,5,5,5").hasPrefix("ok"))
        XCTAssertThrowsError(
            try reader.provisionNTAG424(
                masterKey: Self.master, base: Self.base, plan: Attempts().plan(uid: Self.uid, replacing: replaced))
        ) {
            guard case ReaderError.foreignContent = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertEqual(try changeKeys(sim), 0)
    }

    /// `resetNTAG424` of a chip with key 0 at the factory version and keys
    /// 1–4 at the issue's version: refused before any ChangeKey.
    func testResetOfAChipThatCannotProveKey0SendsNothing() throws {
        let sim = try PN532SimProcess()
        let reader = try open(sim)
        defer { reader.close() }
        let issue = NTAG424.KeyIssue(salt: Array(repeating: 3, count: 16), version: 2)
        XCTAssertTrue(try sim.control("insert ntag424 \(Self.uid.hex)").hasPrefix("ok"))
        XCTAssertTrue(try sim.control("ntag424-fault versions 0,2,2,2,2").hasPrefix("ok"))
        XCTAssertThrowsError(try reader.resetNTAG424(masterKey: Self.master, issue: { _ in issue })) {
            guard case ReaderError.foreignContent = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertEqual(try changeKeys(sim), 0)
    }

    /// A salted provisioning torn at every exchange: the next attempt takes
    /// the stored salt again (the chip proves one of its keys) or draws a new
    /// one (the chip holds none yet), and finishes; the tag then opens with
    /// the issue the attempt store holds.
    func testASaltedProvisioningTornAtEveryExchangeResumes() throws {
        let sim = try PN532SimProcess()
        let reader = try open(sim)
        defer { reader.close() }
        XCTAssertTrue(try sim.control("insert ntag424 \(Self.uid.hex)").hasPrefix("ok"))
        XCTAssertEqual(try sim.control("stats reset"), "ok reset")
        XCTAssertNotNil(
            try reader.provisionNTAG424(masterKey: Self.master, base: Self.base, plan: Attempts().plan(uid: Self.uid)))
        let total = try XCTUnwrap(
            try sim.control("stats").split(separator: " ").first { $0.hasPrefix("tag_exchanges=") }
                .flatMap { Int($0.dropFirst(14)) })
        for n in stride(from: 1, to: total, by: 2) {
            let attempts = Attempts()
            XCTAssertTrue(try sim.control("insert ntag424 \(Self.uid.hex)").hasPrefix("ok"))
            XCTAssertEqual(try sim.control("tear-after \(n)"), "ok tag leaves after \(n) exchanges")
            XCTAssertNil(
                try? reader.provisionNTAG424(
                    masterKey: Self.master, base: Self.base, plan: attempts.plan(uid: Self.uid)),
                "tear after \(n)")
            XCTAssertTrue(try sim.control("reinsert").hasPrefix("ok inserted NTAG424DNA"), "tear after \(n)")
            let done = try reader.provisionNTAG424(
                masterKey: Self.master, base: Self.base, plan: attempts.plan(uid: Self.uid))
            XCTAssertEqual(done?.issue, attempts.held.withLock { $0 }, "tear after \(n)")
            let issue = try XCTUnwrap(done?.issue, "tear after \(n)")
            XCTAssertEqual(
                try reader.tapNTAG424(key: { _ in try? self.key0(issue) })?.proof,
                .authenticated(cardUID: Self.uid.bytes), "tear after \(n)")
        }
    }
}
