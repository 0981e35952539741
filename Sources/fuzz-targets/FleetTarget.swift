import DoorCore

/// Fleet documents as a door hears them on a fleet topic or key
/// (docs/fleet.md): `FleetDocument.openEnvelope` runs on the bytes of any
/// door's account *before* the signature is checked, then `FleetRules.judge`
/// (signature, body, site, version). The same bytes are also taken as a body
/// the site key signed (with the target's own site key), so `parseBody` and
/// the version rules are reached as they are after a valid signature.
enum FleetTarget {
    static let siteSeed = [UInt8](repeating: 0x5E, count: 32)
    static let sitePublicKey = try! Crypto.Ed25519.publicKey(seed: siteSeed)
    static let site = "main-site"

    static func run(_ data: [UInt8]) {
        // 1. As heard: the unverified envelope, then the rules.
        if let parts = try? FleetDocument.openEnvelope(data) {
            expect(parts.signature.count == Crypto.Ed25519.signatureLength, "a signature of the wrong length")
            expect(!parts.body.isEmpty, "an empty body passed the envelope")
            let again = try? FleetDocument.openEnvelope(
                FleetDocument.envelope(body: parts.body, signature: parts.signature))
            expect(
                again?.body == parts.body && again?.signature == parts.signature,
                "the envelope does not round-trip")
        }
        judge(data)
        // 2. As a body signed with the site key.
        guard !data.isEmpty, data.count <= 64 << 10 else { return }
        let signature = try! Crypto.Ed25519.sign(seed: siteSeed, message: FleetDocument.signingContext + data)
        let envelope = FleetDocument.envelope(body: data, signature: signature)
        if case .refuse(.badSignature) = judge(envelope) {
            expect(false, "a body signed with the site key failed its signature check")
        }
        if let document = try? FleetDocument.parseBody(data) {
            expect(
                (try? FleetDocument.parseBody(document.bodyBytes)) == document,
                "a parsed body does not parse back to itself from bodyBytes")
        }
    }

    /// The rules, and for an accepted document: heard again it is already
    /// applied; after a newer one it is stale.
    @discardableResult
    static func judge(_ bytes: [UInt8]) -> FleetRules.Verdict {
        let verdict = FleetRules.judge(bytes, sitePublicKey: sitePublicKey, siteID: site, applied: nil)
        guard case .apply(let accepted) = verdict else { return verdict }
        let document = accepted.document
        expect(document.site == site, "accepted for another site: \(document.site)")
        expect(accepted.envelope == bytes, "the kept envelope is not what was heard")
        let applied = FleetRules.Applied(site: site, version: document.version, digest: accepted.digest)
        if case .alreadyApplied = FleetRules.judge(bytes, sitePublicKey: sitePublicKey, siteID: site, applied: applied)
        {
        } else {
            expect(false, "the applied document heard again is not `already applied`")
        }
        if document.version < Int64.max {
            let newer = FleetRules.Applied(site: site, version: document.version + 1, digest: accepted.digest)
            if case .refuse(.stale) = FleetRules.judge(
                bytes, sitePublicKey: sitePublicKey, siteID: site, applied: newer)
            {
            } else {
                expect(false, "version \(document.version) is not stale after version \(document.version + 1)")
            }
        }
        return verdict
    }
}
