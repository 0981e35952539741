import DoorCore
import Foundation
import GatewayStore
import NFCReader
import TestSupport
import XCTest

/// The NTAG 424 DNA door the e2e tests run (NTAG424DoorTests,
/// NTAG424SUNTierTests): a real gatewayd on the real libnfc path against a
/// pn532-sim the test itself runs, so the tags' state outlives a restart of
/// the door, and the test can read and provision tags on the same emulator
/// while the door is stopped.
///
/// Provisioning at the door is what `NTAG424ProvisioningTests` covers; here a
/// tag is provisioned with `NFCReader.provisionNTAG424` on the emulator
/// before the door starts, with the site key the door's store is given, and
/// the registry row a provisioning door commits.
final class NTAG424SimDoor {
    /// The SUN URL's base every tag here is provisioned with.
    static let base = "https://door.example/t"

    let sim: PN532SimProcess
    let door: GatewayUnderTest
    let siteKey: [UInt8]
    /// The name of action 1 (action 0 is "front", which lists the default credentials).
    let secondAction: String

    /// `secondCredentials`: the `credentials` array of action 1, as TOML.
    init(deviceID: String, siteKey: [UInt8], secondAction: String, secondCredentials: String) throws {
        self.siteKey = siteKey
        self.secondAction = secondAction
        sim = try PN532SimProcess()
        door = try GatewayUnderTest.onSim(
            sim, deviceID: deviceID, actions: Self.actions(second: secondAction, credentials: secondCredentials))
    }

    /// Action 0 "front" (the default credentials) and action 1 `second` with `credentials` (TOML).
    static func actions(second: String, credentials: String) -> String {
        ConfigText.action(0, "front") + "\n" + ConfigText.action(1, second, "credentials = \(credentials)")
    }

    /// The door's store (the door stopped), given the site key as the fleet
    /// or an operator sets it, and the configuration's two actions.
    func store() throws -> GatewayStore {
        let store = try GatewayStore(stateDirectory: door.dir.path + "/state")
        try store.setNTAG424SiteKey(siteKey, origin: .imported, now: 1)
        try store.syncActions([
            ActionDefinition(index: 0, name: "front", steps: []),
            ActionDefinition(index: 1, name: secondAction, steps: []),
        ])
        return store
    }

    /// The registry row a provisioning door commits for a 424: pending, then active.
    func register(_ store: GatewayStore, _ uid: TagUID, action: Int, label: String) throws {
        try store.createPendingTag(
            uid: uid, action: action, secretID: nil, label: label, limits: TagLimits(), kind: .ntag424, now: 2)
        try store.activateTag(uid: uid)
    }

    /// A reader of the test's own on the emulator (the door is stopped).
    func withReader<T>(_ body: (NFCReader) throws -> T) throws -> T {
        let reader = NFCReader(connstring: "pn532_uart:\(sim.tty)")
        try reader.open()
        defer { reader.close() }
        return try body(reader)
    }

    /// A factory 424 under `uid` put in the field and provisioned with the
    /// door's keys, as a provisioning door does; returns the SUN counter its
    /// provisioning check read.
    func insertAndProvision(_ uid: TagUID) throws -> UInt32 {
        XCTAssertTrue(try sim.control("insert ntag424 \(uid.hex)").hasPrefix("ok"))
        return try provision()
    }

    /// Provisions the 424 in the field with the door's keys.
    func provision() throws -> UInt32 {
        try XCTUnwrap(try withReader { try $0.provisionNTAG424(masterKey: siteKey, base: Self.base) }).counter
    }

    /// What a phone reading the tag in the field once gets: its NDEF, the SUN URL live.
    func skim() throws -> String {
        let tap = try XCTUnwrap(try withReader { try $0.tapNTAG424(key: { _ in nil }) })
        return try XCTUnwrap(try tap.message?.firstURI())
    }

    /// The tag that left the field comes back; returns the event count before it.
    func present() throws -> Int {
        let seen = try door.eventCount()
        XCTAssertTrue(try sim.control("reinsert").hasPrefix("ok"))
        return seen
    }

    /// The door's grant of the tap after event `seen`: its reason, tag and action.
    @discardableResult
    func expectGrant(
        after seen: Int, reason: String, uid: TagUID, action: Int, file: StaticString = #filePath, line: UInt = #line
    ) throws -> JSONValue {
        let granted = try door.waitForEvent("access_granted", after: seen)
        XCTAssertEqual(granted["reason"]?.stringValue, reason, "\(granted)", file: file, line: line)
        XCTAssertEqual(granted["uid"]?.stringValue, uid.hex, file: file, line: line)
        XCTAssertEqual(granted["action"]?.intValue, action, file: file, line: line)
        return granted
    }

    /// The tag leaves the field, and the door's same-tag quiet window passes.
    func leave() throws {
        _ = try sim.control("remove")
        E2ETiming.outlastQuietWindow()
    }

    /// `skimmed` (a SUN URL) copied onto an NTAG215 under `uid` and tapped
    /// with `sim tap --dump`: a copy, which the door denies as `sun_copy`.
    func tapCopy(_ skimmed: String, uid: TagUID) throws {
        let seen = try door.eventCount()
        let image = try TagImage.make(type: .ntag215, uid: uid, message: NDEFMessage(records: [.uri(skimmed)]))
        let dumpFile = door.dir.appendingPathComponent("copy-\(uid.hex).dump").path
        try Data(image.bytes).write(to: URL(fileURLWithPath: dumpFile))
        try door.ctlJSON(["sim", "tap", "--dump", dumpFile])
        try door.waitForEvent("access_denied", reason: "sun_copy", after: seen)
        try leave()
    }
}
