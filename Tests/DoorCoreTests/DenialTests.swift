import DoorCore
import XCTest

/// `Denial` (issue 34 Move A): one enum for every reason a tap is denied. Its
/// wire strings are the audit rows' and the events' `reason`, which tests,
/// docs and Home Assistant automations quote: each is pinned here, with
/// whether it counts toward lockout and whether it is a failed proof (the
/// global lockout's, docs/security.md "L8").
final class DenialTests: XCTestCase {
    func testEveryDenialKeepsItsWireStringAndItsLockoutWeight() {
        let table: [(Denial, String, counts: Bool, proof: Bool)] = [
            (.blank, "blank", false, false),
            (.notOurs, "not_ours", false, false),
            (.sunCopy, "sun_copy", true, true),
            (.sticker(.badSignature), "bad_signature", true, true),
            (.sticker(.uidMismatch), "uid_mismatch", true, true),
            (.sticker(.v1NotAllowed), "v1_not_allowed", true, true),
            (.sticker(.malformed), "malformed", true, false),
            (.sticker(.noSecret), "no_secret", true, false),
            (.sticker(.uidUnknown), "uid_unknown", true, false),
            (.sticker(.unknownAction), "unknown_action", true, false),
            (.revoked, "revoked", true, false),
            (.expired, "expired", true, false),
            (.notIssued, "not_issued", true, false),
            (.tagState(.pending), "tag_pending", true, false),
            (.tagState(.revoked), "tag_revoked", true, false),
            (.tagState(.failed), "tag_failed", true, false),
            (.registryUnavailable, "registry_unavailable", true, false),
            (.credentialNotAllowed, "credential_not_allowed", false, false),
            (.authFailed, "auth_failed", true, true),
            (.counterReplay, "counter_replay", true, true),
            (.unknownTag, "unknown_tag", true, false),
            (.sunInvalid, "sun_invalid", true, true),
            (.uidMismatch, "uid_mismatch", true, true),
            (.tagLost, "tag_lost", false, false),
            (.unknownAction, "unknown_action", true, false),
            (.policy(.outsideSchedule), "outside_schedule", false, false),
            (.policy(.clockUnsynchronised), "clock_unsynchronised", false, false),
            (.policy(.unknownSchedule), "unknown_schedule", false, false),
            (.policy(.notYetValid), "not_yet_valid", false, false),
            (.policy(.noUsesLeft), "no_uses_left", false, false),
            (.lockedOut, "locked_out", false, false),
            (.lockdown, "lockdown", false, false),
            (.notApproved, "not_approved", false, false),
            (.passback, "passback", false, false),
        ]
        for (denial, wire, counts, proof) in table {
            XCTAssertEqual(denial.reason, wire, "\(denial)")
            XCTAssertEqual(denial.countsTowardLockout, counts, "\(wire) counts toward lockout")
            XCTAssertEqual(denial.isFailedProof, proof, "\(wire) is a failed proof")
            XCTAssertEqual(denial.verdict, .deny(reason: wire, countsTowardLockout: counts))
        }
        XCTAssertEqual(DoorMachine.failedProofs, Denial.failedProofReasons)
        XCTAssertEqual(
            Denial.failedProofReasons,
            [
                "bad_signature", "uid_mismatch", "v1_not_allowed", "auth_failed", "sun_invalid", "counter_replay",
                "sun_copy",
            ])
        // The names tests and the fuzz targets used before the enum.
        XCTAssertEqual(TapDenial.registryUnavailable, "registry_unavailable")
        XCTAssertEqual(TapDenial.weakCredential, "weak_credential")
        XCTAssertEqual(TapDenial.validSUNOnly, "valid_sun_only")
    }
}
