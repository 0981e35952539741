import DoorCore
import GatewayControl
import Logging
import NFCReader

extension ReaderError: ReaderPortError {}

/// The daemon's reader port over the libnfc adapter.
final class LibnfcReaderPort: TagReaderPort {
    let reader: NFCReader
    /// `[provisioning] auth_limit` in effect at each write (a reload changes it).
    let authLimit: () -> Int
    /// The NTAG 424 site master key (docs/ntag424.md), read at each 424 tap
    /// (nil: none yet, so no 424 can prove a key). Never logged.
    let siteKey: () -> [UInt8]?
    /// The key issue a 424's tap runs AuthenticateEV2First with (its registry
    /// row's salt and version), or nil when it skips EV2: its action opens on
    /// the SUN alone (`"ntag424-sun"`, docs/ntag424.md).
    let ev2Issue: (TagUID) -> NTAG424.KeyIssue?

    init(
        connstring: String, authLimit: @escaping () -> Int, log: Logger,
        ev2Issue: @escaping (TagUID) -> NTAG424.KeyIssue? = { _ in .legacy },
        siteKey: @escaping () -> [UInt8]? = { nil }
    ) {
        reader = NFCReader(connstring: connstring)
        self.authLimit = authLimit
        self.ev2Issue = ev2Issue
        self.siteKey = siteKey
    }

    func open() throws { try reader.open() }
    func close() { reader.close() }

    func waitForTag(timeout: Duration) throws -> TapFacts? {
        // Key 0 of each 424, diversified for its UID and its row's issue (AN10922, NTAG424.DoorKeys).
        let master = siteKey()
        let key = { [ev2Issue] (uid: TagUID) -> [UInt8]? in
            guard let master, uid.bytes.count == 7, let issue = ev2Issue(uid) else { return nil }
            return try? NTAG424.tagKey(masterKey: master, uid: uid.bytes, keyNumber: 0, issue: issue)
        }
        guard let polled = try reader.pollTap(ntag424Key: key) else { return nil }
        isoDep = polled.isISODEP ? polled.uid : nil
        switch polled {
        case .type2(let tag): return TapFacts(uid: tag.uid, message: tag.message)
        case .ntag424(let tap): return TapFacts(uid: tap.uid, message: tap.message, ntag424: tap.proof)
        case .torn(let uid): return TapFacts(uid: uid, ntag424: .torn)
        // Another ISO-DEP card (a bank card, a DESFire fob): its UID alone (an enrolled fob at most).
        case .otherISODEP(let uid, _): return TapFacts(uid: uid)
        }
    }

    /// The ISO-DEP target last polled (its presence is checked by activation, not READ).
    private var isoDep: TagUID?

    func isPresent(_ uid: TagUID) throws -> Bool {
        uid == isoDep ? try reader.isPresentISODep(uid) : try reader.isPresent(uid)
    }

    func write(_ message: NDEFMessage, to uid: TagUID, overwrite: Bool, deviceKey: [UInt8], protect: Bool) throws {
        // A tag protected earlier is authenticated with the device key's
        // password even when this write does not ask for protection.
        let options = WriteOptions(
            overwrite: overwrite, password: NTAGPassword.derive(deviceKey: deviceKey, uid: uid), protect: protect,
            authLimit: authLimit())
        try reader.write(message, to: uid, options: options)
    }

    var healthText: String { reader.health.description }
}
