/// The control socket's methods, one list for both ends: `gatewayctl` sends
/// `method` as the raw value, `gatewayd` answers the case it decodes, and a
/// name that is not here (or `debug.stall` outside a debug build's tests) is
/// answered "unknown method NAME".
package enum ControlMethod: String, Codable, CaseIterable, Sendable {
    case status
    case open
    case mode
    case provision
    case provisionCancel = "provision.cancel"
    /// An NTAG 424 DNA of ours back to factory keys (docs/ntag424.md).
    case provisionReset = "provision.reset"
    case lockoutStatus = "lockout.status"
    case lockoutClear = "lockout.clear"
    case feedbackPlay = "feedback.play"
    case readerInfo = "reader.info"
    /// `gatewayctl reader osdp install NAME`: the reader's install window (issue 35).
    case readerOSDPInstall = "reader.osdp.install"
    /// `gatewayctl reader osdp status`: each OSDP reader's link.
    case readerOSDPStatus = "reader.osdp.status"
    case secretsList = "secrets.list"
    case secretsNew = "secrets.new"
    case secretsRotate = "secrets.rotate"
    case secretsRemove = "secrets.remove"
    case secretsImport = "secrets.import"
    case secretsExport = "secrets.export"
    case keysNew = "keys.new"
    case keysImport = "keys.import"
    case keysExport = "keys.export"
    case simTap = "sim.tap"
    case simRemove = "sim.remove"
    case simReinsert = "sim.reinsert"
    case simDump = "sim.dump"
    case simPress = "sim.press"
    case simDoor = "sim.door"
    case simTear = "sim.tear"
    case tagsList = "tags.list"
    case tagsRevoke = "tags.revoke"
    case tagsExpire = "tags.expire"
    case tagsForget = "tags.forget"
    /// A plain key fob or card enrolled by its UID (docs/ntag424.md "uid fobs").
    case tagsEnrollUID = "tags.enroll_uid"
    /// A card number an outdoor reader sends (issue 35, `gatewayctl tags enroll-card`).
    case tagsEnrollCard = "tags.enroll_card"
    /// Keypad PINs (issue 35): a card's PIN, a PIN-only code, a PIN removed.
    case pinsSet = "pins.set"
    case pinsAddCode = "pins.add_code"
    case pinsRemove = "pins.remove"
    case log
    case logVerify = "log.verify"
    /// A stream: the last rows, then each new one, until the client leaves.
    case logFollow = "log.follow"
    case backup
    /// Lowers a clock floor a bad time source raised (`gatewayctl clock reset-floor`).
    case clockResetFloor = "clock.reset_floor"
    // The fleet (docs/fleet.md, GatewayDaemon/Fleet.swift).
    case fleetStatus = "fleet.status"
    case fleetPublish = "fleet.publish"
    case fleetPull = "fleet.pull"
    /// `gatewayctl policy explain` (docs/policy.md).
    case policyExplain = "policy.explain"
    /// `gatewayctl approve|deny CODE` (docs/policy.md "Approval").
    case approvalAnswer = "approval.answer"
    /// `gatewayctl fire reset` (docs/policy.md "Fire alarm").
    case fireReset = "fire.reset"
    /// `gatewayctl lockdown start|end|status`, and a signed site command (docs/policy.md "Lockdown").
    case lockdownStart = "lockdown.start", lockdownEnd = "lockdown.end", lockdownStatus = "lockdown.status"
    case siteCommand = "site.command"
    /// `gatewayctl occupancy` and its roll-call export (issue 36): who is in.
    case occupancy
    /// `gatewayctl passback reset [UID|--all]` (issue 36).
    case passbackReset = "passback.reset"
    #if DEBUG
        /// Debug builds' tests only (GATEWAYD_TEST_HOOKS=1): blocks the door queue.
        case debugStall = "debug.stall"
    #endif

    /// Whose use is logged with the caller (reads are not).
    package var changesState: Bool {
        switch self {
        case .open, .mode, .provision, .provisionCancel, .provisionReset, .lockoutClear, .secretsNew, .secretsRotate,
            .secretsRemove,
            .secretsImport, .secretsExport, .keysNew, .keysImport, .keysExport, .tagsRevoke, .tagsExpire, .tagsForget,
            .tagsEnrollUID, .tagsEnrollCard, .pinsSet, .pinsAddCode, .pinsRemove, .backup, .clockResetFloor,
            .fleetPublish, .fleetPull, .approvalAnswer, .readerOSDPInstall, .fireReset, .lockdownStart, .lockdownEnd,
            .siteCommand, .passbackReset:
            return true
        default:
            return false
        }
    }
}
