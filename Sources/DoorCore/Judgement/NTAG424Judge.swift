/// What the reader established on one tap of an NTAG 424 DNA, as the
/// 424 entry point before `TapFacts` took it (tests call it).
public struct NTAG424TapFacts: Equatable, Sendable {
    public typealias Proof = TapFacts.NTAG424Proof
    /// The anticollision UID.
    public var uid: TagUID
    /// The first URI record of the NDEF file, read before authenticating (its SUN mirror live).
    public var uri: String?
    public var proof: Proof
    public init(uid: TagUID, uri: String?, proof: Proof) {
        self.uid = uid
        self.uri = uri
        self.proof = proof
    }
}

/// The NTAG 424 DNA entry point as it was before `TapDecision` (tests call
/// it): the decision is `TapDecision`'s; `acceptCounter` stands for the store's
/// answer the door machine asks for (`StoreRequest.acceptSUNCounter`), asked
/// only for a tap that is granted otherwise.
public enum NTAG424Judge {
    public static func judge(
        tap: NTAG424TapFacts, siteKey: [UInt8]?, registry: some TagRegistryView, now: Int64, policy: TapPolicy,
        acceptCounter: (TagUID, UInt32) throws -> Bool
    ) -> TagPresentation {
        var p = TapDecision.ntag424(
            uid: tap.uid, uri: tap.uri, proof: tap.proof, siteKey: siteKey.map { .key($0) } ?? .none,
            registry: registry, now: now, policy: policy)
        if case .grant = p.verdict, let counter = p.needs.sunCounter {
            do {
                guard try acceptCounter(tap.uid, counter) else { return TapDecision.deny(tap.uid, .counterReplay) }
            } catch {
                return TapDecision.deny(tap.uid, .registryUnavailable)
            }
            p.needs.sunCounter = nil
        }
        return p
    }

    public static func wantsEV2(uid: TagUID, registry: some TagRegistryView, actions: [ActionDefinition]) -> Bool {
        TapDecision.wantsEV2(try? registry.issuedTag(uid), actions: actions)
    }

    public static func ev2Issue(uid: TagUID, registry: some TagRegistryView, actions: [ActionDefinition])
        -> NTAG424.KeyIssue?
    {
        TapDecision.ev2Issue(uid: uid, registry: registry, actions: actions)
    }
}

/// The fob entry point as it was before `TapDecision` (tests call it).
public enum UIDFobJudge {
    /// The verdict on an enrolled fob; nil when the UID is not enrolled as one.
    public static func judge(uid: TagUID, registry: some TagRegistryView, now: Int64, policy: TapPolicy?)
        -> TagPresentation?
    {
        TapDecision.fob(uid: uid, registry: registry, now: now, policy: policy)
    }
}
