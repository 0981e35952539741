import DoorCore
import PN532Emulator
import XCTest

final class ControlCommandTests: XCTestCase {
    func testParsesEveryCommand() throws {
        let uid = TagUID([0x04, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06])
        XCTAssertEqual(try ControlCommand.parse("insert"), .insert(uid: nil, image: nil, type: nil))
        XCTAssertEqual(try ControlCommand.parse("insert 04010203040506"), .insert(uid: uid, image: nil, type: nil))
        XCTAssertEqual(
            try ControlCommand.parse("insert 04:01:02:03:04:05:06 /tmp/a.mfd"),
            .insert(uid: uid, image: "/tmp/a.mfd", type: nil))
        XCTAssertEqual(try ControlCommand.parse("insert /tmp/a.mfd"), .insert(uid: nil, image: "/tmp/a.mfd", type: nil))
        XCTAssertEqual(try ControlCommand.parse("insert ntag215"), .insert(uid: nil, image: nil, type: .ntag215))
        XCTAssertEqual(try ControlCommand.parse("remove"), .remove)
        XCTAssertEqual(try ControlCommand.parse("reinsert"), .reinsert)
        XCTAssertEqual(try ControlCommand.parse("tear-after 3"), .tearAfter(3))
        XCTAssertEqual(try ControlCommand.parse("mute"), .mute)
        XCTAssertEqual(try ControlCommand.parse("hang"), .hang)
        XCTAssertEqual(try ControlCommand.parse("nad"), .nad)
        XCTAssertEqual(try ControlCommand.parse("mi-empty"), .miEmpty)
        XCTAssertEqual(try ControlCommand.parse("unmute\r"), .unmute)
        XCTAssertEqual(try ControlCommand.parse("dump"), .dump(path: nil))
        XCTAssertEqual(try ControlCommand.parse("dump /tmp/x"), .dump(path: "/tmp/x"))
        XCTAssertEqual(try ControlCommand.parse("stats"), .stats(reset: false))
        XCTAssertEqual(try ControlCommand.parse("stats reset"), .stats(reset: true))
        XCTAssertEqual(try ControlCommand.parse("  status  "), .status)
    }

    func testRejectsBadLinesWithTypedErrors() {
        let refused: [(String, ControlError)] = [
            ("", .empty),
            ("explode", .unknown("explode")),
            ("tear-after -1", .usage("tear-after")),
            ("tear-after x", .usage("tear-after")),
            ("nad 3", .usage("nad")),
            ("remove now", .usage("remove")),
            ("insert 0401020304050607", .badUID("0401020304050607")),
            ("insert a.mfd ntag213", .usage("insert")),
        ]
        for (line, expected) in refused {
            XCTAssertThrowsError(try ControlCommand.parse(line), "'\(line)'") {
                XCTAssertEqual($0 as? ControlError, expected, "'\(line)'")
            }
        }
        XCTAssertEqual(ControlError.usage("dump").description, "usage: dump [PATH]")
    }

    func testUIDOverridesTheImageAndRecomputesCheckBytes() throws {
        let image = try TagImage.make(type: .ntag215, uid: TagUID([0x04, 1, 2, 3, 4, 5, 6]))
        let uid = TagUID([0x04, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF])
        let tag = try NTAG21x(image: image, uid: uid)
        XCTAssertEqual(tag.uid, uid)
        XCTAssertNoThrow(try TagImage(dump: tag.memory), "BCC0/BCC1 must match the new UID")
        XCTAssertEqual(Array(tag.memory[9...]), Array(image.bytes[9...]))
    }

    func testRandomUIDIsAnNXPUID() {
        var rng = SystemRandomNumberGenerator()
        let uid = NTAG21x.randomUID(using: &rng)
        XCTAssertEqual(uid.bytes.count, 7)
        XCTAssertEqual(uid.bytes[0], 0x04)
    }
}
