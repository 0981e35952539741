import DoorCore
import TestSupport
import XCTest

/// An osdp_FMT card number (issue 35): ASCII characters, keyed apart from bit frames (`CB`),
/// enrolled as `fmt:CHARACTERS`, decided like a RAW read of its reader.
final class FormattedCardNumberTests: XCTestCase {
    typealias Registry = TapJudgeTests.Registry
    let wall = WallClock(unixSeconds: 1_800_000_000, synchronised: true)

    func testTextAndKeyRoundTrip() throws {
        for text in [
            "fmt:1", "fmt:12345678", "fmt:" + String(repeating: "9", count: 16),
            "fmt:" + String(repeating: "7", count: 17), "fmt:" + String(repeating: "A", count: 32),
        ] {
            let card = try XCTUnwrap(CardNumber(text: text), text)
            XCTAssertTrue(card.isFormatted)
            XCTAssertEqual(card.description, text)
            let key = card.registryKey
            XCTAssertEqual(key.bytes.count, card.bits.count <= 16 ? 18 : 34)
            XCTAssertEqual(key.bytes.first, 0xCB)
            XCTAssertEqual(key.card, card)
            XCTAssertEqual(TagUID(hex: key.hex), key, "gatewayctl tags revoke takes the key")
        }
        // A key whose padding is not zero, or whose count does not fit its length, is no card.
        XCTAssertNil(TagUID(hex: "CB03" + "31323334" + "FF" + String(repeating: "00", count: 11)))
        XCTAssertNil(TagUID(hex: "CB1F" + String(repeating: "31", count: 16)), "32 characters in an 18-byte key")
        XCTAssertNil(CardNumber(text: "fmt:a b"))
        XCTAssertFalse(CardNumber(format: .h10301, facility: 1, number: 2)!.isFormatted)
    }

    func testAnFMTCardGrantsLikeARAWOne() throws {
        let card = try XCTUnwrap(CardNumber(formatted: Array("12345678".utf8)))
        var action = ActionDefinition(index: 0, name: "front", steps: [])
        action.credentials = [.osdp]
        let policy = TapPolicy(policy: AccessPolicy(schedules: [], zone: .utc), actions: [action], wall: wall)
        let row = IssuedTagView(state: .active, kind: .wiegand, action: 0)
        func decide(_ link: CardRead.Link, _ registry: Registry) -> TagPresentation {
            TapDecision.decide(
                TapFacts(card: CardRead(number: card, reader: "street", link: link)), secrets: TapSecrets(),
                actionCount: 1, registry: registry, now: wall.unixSeconds, policy: policy
            ).presentation
        }
        let granted = decide(.osdpSecure, Registry(row: row))
        guard case .grant(let action, let reason) = granted.verdict else { return XCTFail("\(granted.verdict)") }
        XCTAssertEqual(action, 0)
        XCTAssertEqual(reason, GrantReason.osdpSecureChannel)
        XCTAssertEqual(granted.uid, card.registryKey)
        XCTAssertEqual(granted.source, "reader:street")
        guard case .deny = decide(.osdpPlain, Registry(row: row)).verdict else { return XCTFail("plain FMT opened") }
        guard case .deny = decide(.osdpSecure, Registry(row: nil)).verdict else { return XCTFail("unknown opened") }
    }
}
