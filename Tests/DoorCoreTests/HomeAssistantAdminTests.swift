import DoorCore
import TestSupport
import XCTest

/// Home Assistant as the admin screen (`home_assistant_admin`): what the
/// core decides about its topics, the option lists of its two selectors, and
/// what the door machine does with an arm or a cancel from HA.
final class HomeAssistantAdminTests: XCTestCase {
    let clock = WallClock(unixSeconds: 1_700_000_000, synchronised: true)
    let adminChannels: [(RemoteChannel, String)] = [
        (.homeAssistantProvisionAction, "door"), (.homeAssistantProvisionLabel, "Alice"),
        (.homeAssistantProvision, "ARM"), (.homeAssistantRevokeChoice, "Alice"), (.homeAssistantRevoke, "REVOKE"),
        (.homeAssistantLockdown, "ON"),
        (.homeAssistantEnrollCard, "26:7:4242"),
    ]

    func judge(_ channel: RemoteChannel, _ text: String, admin: Bool, open: Bool = false, retained: Bool = false)
        -> RemoteJudgement
    {
        judge(channel, Array(text.utf8), admin: admin, open: open, retained: retained)
    }

    func judge(_ channel: RemoteChannel, _ bytes: [UInt8], admin: Bool, open: Bool = false, retained: Bool = false)
        -> RemoteJudgement
    {
        RemoteJudge.judge(
            RemoteMessage(channel: channel, payload: bytes, retained: retained),
            policy: RemotePolicy(
                commands: CommandJudge(deviceID: "front-door"), homeAssistantOpen: open, homeAssistantAdmin: admin),
            key: .absent, replay: ReplayGuard(), now: clock)
    }

    func code(_ j: RemoteJudgement) -> String? {
        if case .rejected(let code, _, let source)? = j.outcome {
            XCTAssertEqual(source, .homeAssistant)
            return code
        }
        return nil
    }

    func testEveryAdminChannelIsRefusedWithTheOptionOffEvenWhenHAMayOpen() {
        XCTAssertEqual(RemoteChannel.allCases.filter(\.isHomeAssistantAdmin).count, adminChannels.count)
        for (channel, text) in adminChannels {
            XCTAssertTrue(channel.isHomeAssistantAdmin)
            XCTAssertEqual(channel.source, .homeAssistant)
            XCTAssertNil(channel.keyName, "HA holds no key")
            for open in [false, true] {
                let j = judge(channel, text, admin: false, open: open)
                XCTAssertEqual(code(j), "ha_admin_disabled", "\(channel) open=\(open)")
                XCTAssertNil(j.admin, "\(channel): nothing reaches the daemon's admin")
                XCTAssertNil(j.replay)
            }
            let retained = judge(channel, text, admin: true, retained: true)
            XCTAssertEqual(code(retained), "retained", "\(channel)")
            XCTAssertNil(retained.admin)
        }
        XCTAssertFalse(RemoteChannel.homeAssistantLock.isHomeAssistantAdmin)
    }

    func testTheOptionOnParsesEachRequest() {
        let expected: [(RemoteChannel, String, HomeAssistantAdminRequest)] = [
            (.homeAssistantProvisionAction, "Garage (action 1)", .chooseAction("Garage (action 1)")),
            (.homeAssistantProvisionLabel, "Alice’s fob", .setLabel("Alice’s fob")),
            (.homeAssistantProvisionLabel, "", .setLabel("")),
            (.homeAssistantProvision, "ARM", .arm), (.homeAssistantProvision, "CANCEL", .cancel),
            (.homeAssistantRevokeChoice, "(none)", .chooseTag("(none)")),
            (.homeAssistantRevoke, "REVOKE", .revoke),
            (.homeAssistantLockdown, "ON", .lockdown(true)), (.homeAssistantLockdown, "OFF", .lockdown(false)),
            (.homeAssistantEnrollCard, "26:7:4242", .enrollCard("26:7:4242")),
        ]
        for (channel, text, request) in expected {
            let j = judge(channel, text, admin: true)
            XCTAssertNil(j.outcome, "\(channel) \(text): the daemon resolves and audits it")
            XCTAssertEqual(j.admin, request)
        }
        let malformed: [(RemoteChannel, [UInt8])] = [
            (.homeAssistantProvision, Array("arm".utf8)), (.homeAssistantProvision, Array("PRESS".utf8)),
            (.homeAssistantRevoke, Array("PRESS".utf8)), (.homeAssistantRevoke, []),
            (.homeAssistantLockdown, Array("on".utf8)), (.homeAssistantLockdown, Array("LOCK".utf8)),
            (.homeAssistantEnrollCard, Array("26:7".utf8)), (.homeAssistantEnrollCard, Array("4242".utf8)),
            (.homeAssistantEnrollCard, Array("26:256:1".utf8)),
            (.homeAssistantProvisionLabel, Array(String(repeating: "x", count: 65).utf8)),
            (.homeAssistantProvisionLabel, Array("two\nlines".utf8)),
            (.homeAssistantRevokeChoice, [0xC3, 0x28]),  // not UTF-8
            (.homeAssistantProvisionAction, Array(String(repeating: "y", count: 129).utf8)),
        ]
        for (channel, bytes) in malformed {
            let j = judge(channel, bytes, admin: true)
            XCTAssertEqual(code(j), "malformed", "\(channel) \(bytes)")
            XCTAssertNil(j.admin)
        }
    }

    /// The option of the other HA topics does not open the admin ones, and
    /// the admin option does not let HA open the door.
    func testTheTwoOptionsAreIndependent() {
        XCTAssertEqual(code(judge(.homeAssistantLock, "UNLOCK", admin: true)), "ha_open_disabled")
        XCTAssertEqual(code(judge(.homeAssistantMode, "passage", admin: true)), "ha_open_disabled")
        XCTAssertEqual(judge(.homeAssistantProvision, "ARM", admin: true, open: false).admin, .arm)
    }

    // MARK: The menu

    func tag(_ hex: String, _ label: String, hashed: String? = nil) -> HomeAssistantAdminMenu.Tag {
        let uid = TagUID(hex: hex)!
        return .init(uid: uid, label: label, hashed: hashed ?? String(repeating: String(hex.suffix(2)), count: 8))
    }

    func testTagOptionsAreUniqueByLabelAndNeverShowARawUID() {
        let tags = [
            tag("04000000000001", "bob"), tag("04000000000002", "Alice"), tag("04000000000003", "Carol"),
            tag("04000000000004", "Carol"), tag("04000000000005", ""), tag("04000000000006", "(none)"),
        ]
        let menu = HomeAssistantAdminMenu(actions: [(0, "door")], tags: tags)
        XCTAssertEqual(
            menu.tagOptions,
            ["(none)", "(05050505)", "(none) (06060606)", "Alice", "bob", "Carol (03030303)", "Carol (04040404)"])
        XCTAssertEqual(Set(menu.tagOptions).count, menu.tagOptions.count, "HA's select needs unique options")
        for t in tags {
            let option = try! XCTUnwrap(menu.tagOption(t.uid))
            XCTAssertEqual(menu.tag(option), t.uid, option)
            XCTAssertFalse(option.includes(t.uid.hex), "a raw UID in \(option)")
        }
        XCTAssertNil(menu.tag("(none)"), "the placeholder names no tag")
        XCTAssertNil(menu.tag("Dave"))
    }

    /// Without a device key the hashed UID is withheld: tags are told apart by number.
    func testTagsWithoutAHashAreNumbered() {
        let menu = HomeAssistantAdminMenu(
            actions: [],
            tags: [
                .init(uid: TagUID(hex: "04000000000001")!, label: "", hashed: nil),
                .init(uid: TagUID(hex: "04000000000002")!, label: "", hashed: nil),
            ])
        XCTAssertEqual(menu.tagOptions, ["(none)", "(tag 1)", "(tag 2)"])
    }

    func testActionOptionsFollowTheConfigurationAndAreUnique() {
        let menu = HomeAssistantAdminMenu(actions: [(0, "door"), (1, "gate"), (2, "gate"), (3, "")], tags: [])
        XCTAssertEqual(menu.actionOptions, ["door", "gate (action 1)", "gate (action 2)", "action 3"])
        XCTAssertEqual(menu.action("gate (action 2)"), 2)
        XCTAssertEqual(menu.actionOption(1), "gate (action 1)")
        XCTAssertNil(menu.action("gate"))
    }

    func testTheTagSelectorIsBounded() {
        let tags = (0..<(HomeAssistantAdminMenu.maximumTags + 50)).map { n in
            tag("04" + String(repeating: "0", count: 8) + String(format: "%04X", n), "t\(n)", hashed: "h\(n)")
        }
        let menu = HomeAssistantAdminMenu(actions: [], tags: tags)
        XCTAssertEqual(menu.tagOptions.count, HomeAssistantAdminMenu.maximumTags + 1)
    }

    // MARK: The machine

    func harness() -> MachineHarness {
        var h = MachineHarness(settings: DoorSettings())
        h.start()
        return h
    }

    func testArmAndCancelFromHomeAssistantAreTheMachinesWithTheirSource() {
        var h = harness()
        let job = ProvisioningJob(action: 0, label: "Alice")
        let armed = h.send(.remoteCommand(.accepted(.provision(job), source: .homeAssistant)))
        XCTAssertEqual(armed.events, [DoorEvent(.provisioningArmed, action: 0, source: "homeassistant")])
        XCTAssertEqual(h.machine.state, .provisioningArmed)
        XCTAssertNil(armed.events.first?.accessSource, "arming is not an access")
        let cancelled = h.send(.remoteCommand(.accepted(.cancelProvisioning, source: .homeAssistant)))
        XCTAssertEqual(
            cancelled.events,
            [DoorEvent(.provisioningCancelled, reason: "cancelled", action: 0, source: "homeassistant")])
        XCTAssertEqual(h.machine.state, .idle)
        XCTAssertEqual(
            h.send(.remoteCommand(.accepted(.cancelProvisioning, source: .homeAssistant))).events,
            [DoorEvent(.remoteRejected, reason: "not_armed", source: "homeassistant")], "nothing to cancel: said so")

        // Armed by the admin, cancelled from HA: the cancel names who cancelled.
        h.send(.admin(.armProvisioning(ProvisioningJob(action: 0))))
        XCTAssertEqual(
            h.send(.remoteCommand(.accepted(.cancelProvisioning, source: .homeAssistant))).events.map(\.source),
            ["homeassistant"])
        // The admin's own cancel keeps naming who armed.
        h.send(.remoteCommand(.accepted(.provision(job), source: .homeAssistant)))
        XCTAssertEqual(h.send(.admin(.cancelProvisioning)).events.map(\.source), ["homeassistant"])
    }

    /// As the button: no arming from HA in lockdown (the admin at the socket may).
    func testNoArmingFromHomeAssistantInLockdown() {
        var h = harness()
        h.send(.admin(.setMode(.lockdown)))
        let refused = h.send(.remoteCommand(.accepted(.provision(ProvisioningJob(action: 0)), source: .homeAssistant)))
        XCTAssertEqual(
            refused.events, [DoorEvent(.provisioningRefused, reason: "lockdown", action: 0, source: "homeassistant")])
        XCTAssertEqual(h.machine.state, .idle)
        XCTAssertEqual(refused.drives, [])
    }

    /// The written sticker carries the label chosen in HA.
    func testTheJobFromHomeAssistantIsWhatIsWritten() {
        var h = harness()
        let job = ProvisioningJob(action: 0, label: "Alice")
        h.send(.remoteCommand(.accepted(.provision(job), source: .homeAssistant)))
        let fx = h.send(
            MachineHarness.tag("04A1B2C3D4E5F6", .deny(reason: "blank", countsTowardLockout: false), content: .blank))
        var written = job
        written.uid = TagUID(hex: "04A1B2C3D4E5F6")
        XCTAssertTrue(fx.contains(.writeTag(written)), "\(fx)")
    }
}
