import DoorCore
import XCTest

/// The keypad desk's three steps (issue 35): `press` on the door queue, `verify` (scrypt)
/// anywhere, `checked` back on the door queue. Keys typed while an entry is checked wait
/// and are pressed in order once it is answered — none lost, none decided out of order —
/// and a lockout the answer sets drops them.
final class KeypadCheckTests: XCTestCase {
    let codeKey = PINCode.key(random: [UInt8](repeating: 0x11, count: 14))!

    final class Codes: PINVerifier, @unchecked Sendable {
        var list: [(key: TagUID, hash: PINHash)] = []
        func pin(for uid: TagUID) throws -> PINHash? { nil }
        func codes() throws -> [(key: TagUID, hash: PINHash)] { list }
    }

    func verifier() throws -> Codes {
        let v = Codes()
        let cheap = Crypto.ScryptCost(logN: 10, r: 1, p: 1)
        v.list = [(codeKey, try PINHash(pin: PIN("135790")!, salt: [UInt8](repeating: 9, count: 16), cost: cheap))]
        return v
    }

    func verdicts(_ out: [KeypadOutput]) -> [String] {
        out.map {
            switch $0 {
            case .decided(let p): return "decided \(p.verdict)"
            case .decide(let facts): return "decide code \(facts.uid.hex.prefix(6)) \(facts.reader ?? "-")"
            case .emit(let e): return "event \(e.kind.rawValue) \(e.reason ?? "-") \(e.source ?? "-")"
            case .feedback(let f): return "feedback \(f.rawValue)"
            }
        }
    }

    func typed(_ desk: inout KeypadDesk, _ text: String, at t: inout MonotonicInstant) -> [PINCheck] {
        var checks: [PINCheck] = []
        for ch in text {
            t = t + .milliseconds(200)
            let key: KeypadKey = ch == "#" ? .enter : .digit(UInt8(String(ch))!)
            if let c = desk.press(key, reader: "gate", at: t).check { checks.append(c) }
        }
        return checks
    }

    func testKeysTypedDuringACheckWaitAndFollowInOrder() throws {
        let verifier = try verifier()
        var desk = KeypadDesk()
        var t = MonotonicInstant(nanoseconds: 1_000_000_000)
        let first = typed(&desk, "000000#", at: &t)
        XCTAssertEqual(first.count, 1)
        // The next entry, typed while the first is being hashed: nothing to check yet.
        XCTAssertEqual(typed(&desk, "135790#", at: &t).count, 0)
        let answer = desk.checked(first[0], KeypadDesk.verify(first[0], verifier: verifier), at: t)
        XCTAssertEqual(verdicts(answer.outputs), ["feedback denied", "event access_denied wrong_pin reader:gate"])
        let second = try XCTUnwrap(answer.check, "the entry typed meanwhile is checked next")
        let decided = desk.checked(second, KeypadDesk.verify(second, verifier: verifier), at: t)
        XCTAssertEqual(verdicts(decided.outputs), ["decide code C0DE11 gate"])
        XCTAssertNil(decided.check)
    }

    func testALockoutTheAnswerSetsDropsTheKeysTypedMeanwhile() throws {
        let verifier = try verifier()
        var desk = KeypadDesk()
        var t = MonotonicInstant(nanoseconds: 1_000_000_000)
        for _ in 1...4 {
            let c = typed(&desk, "000000#", at: &t)[0]
            XCTAssertNil(desk.checked(c, KeypadDesk.verify(c, verifier: verifier), at: t).check)
        }
        let fifth = typed(&desk, "000000#", at: &t)[0]
        _ = typed(&desk, "135790#", at: &t)
        let answer = desk.checked(fifth, KeypadDesk.verify(fifth, verifier: verifier), at: t)
        XCTAssertEqual(verdicts(answer.outputs).suffix(2), ["feedback locked_out", "event lockout keypad reader:gate"])
        XCTAssertNil(answer.check, "the code typed before the lockout was known is dropped with it")
        XCTAssertTrue(desk.isLockedOut("gate", at: t))
    }
}
