import DoorCore
import GatewayControl
import GatewayStore

extension ControlService {
    /// `pins.set`, `pins.add_code`, `pins.remove` (issue 35): keypad PINs,
    /// hashed here (scrypt, `PINHash`) and stored only as hashes. A PIN is
    /// never part of an answer, an error, an event or a log line.
    func pinMethod(_ method: ControlMethod, _ p: [String: JSONValue], now: Int64, source: String) throws -> JSONValue {
        func pin() throws -> PIN {
            guard let pin = PIN(try p.string("pin")) else { throw DaemonError.request("a PIN is 4 to 12 digits") }
            return pin
        }
        func credential() throws -> TagUID {
            let text = try p.string("uid")
            guard let u = TagUID(hex: text) ?? CardNumber(text: text)?.registryKey else {
                throw DaemonError.request("give a card (26:FACILITY:NUMBER, raw:BITS:HEX) or a registry key")
            }
            return u
        }
        defer { remote.homeAssistantAdmin?.registryChanged() }
        switch method {
        case .pinsSet:
            let u = try credential()
            // Only a card whose action asks for its PIN takes one (PINRules).
            if let why = PINRules.refusal(
                key: u, row: try StoreRegistry(store: store).issuedTag(u), actions: configuration.door.actions)
            {
                throw DaemonError.request(why)
            }
            let hash = try PINHash(pin: try pin(), salt: try Crypto.randomBytes(16))
            do { try store.setPIN(hash, for: u, now: now) } catch let error as PINError {
                throw DaemonError.request("\(error)")
            }
            runtime.note(DoorEvent(.provisioningWritten, reason: "pin_set", uid: u, source: source), detail: nil)
            return .object([("pin_set", .string(u.hex))])
        case .pinsAddCode:
            let action = try p.int("action")
            guard let definition = configuration.door.action(action) else {
                throw DaemonError.request("no action \(action) (actions 0…\(configuration.door.actions.count - 1))")
            }
            let label = try p.string("label", default: "")
            guard label.utf8.count <= 64 else { throw DaemonError.request("the label is at most 64 bytes") }
            var job = ProvisioningJob(action: action)
            try guestLimits(p, into: &job)
            let duress = try p.bool("duress")
            let salt = try store.pinCodeSalt() ?? Crypto.randomBytes(16)
            let code = try pin()
            guard code.length >= PIN.minimumCodeLength else {
                throw DaemonError.request(
                    "a PIN-only code opens without a card: it needs at least \(PIN.minimumCodeLength) digits")
            }
            let hash = try PINHash(pin: code, salt: salt, duress: duress)
            guard let key = PINCode.key(random: try Crypto.randomBytes(14)) else {
                throw DaemonError.request("no key for the code")
            }
            do {
                try store.addPINCode(
                    key: key, hash: hash, action: action, label: label,
                    limits: TagLimits(
                        validFrom: job.validFrom, validUntil: job.validUntil, uses: job.uses, schedule: job.schedule),
                    now: now)
            } catch let error as PINError {
                throw DaemonError.request("\(error)")
            }
            runtime.note(
                DoorEvent(
                    .provisioningWritten, reason: duress ? "duress_code_added" : "pin_code_added", action: action,
                    uid: key, source: source), detail: nil)
            var answer: [(String, JSONValue)] = [("code", .string(key.hex)), ("action", .int(action))]
            if !definition.credentials.contains(.pin) && !(duress && definition.credentials.contains(.cardPIN)) {
                answer.append(
                    (
                        "warning",
                        .string("action \(action) does not list \"pin\": this code opens nothing until it does")
                    ))
            }
            return .object(answer)
        case .pinsRemove:
            let u = try credential()
            guard try store.removePIN(uid: u) else { throw DaemonError.request("\(u.hex) has no PIN") }
            runtime.note(DoorEvent(.tagRevoked, reason: "pin_removed", uid: u, source: source), detail: nil)
            return .object([("pin_removed", .string(u.hex))])
        default:
            throw DaemonError.request("unknown method \(method.rawValue)")
        }
    }
}
