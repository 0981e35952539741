import XCTest

@testable import GatewayControl
@testable import GatewayCtl
@testable import GatewayDaemon

/// users and groups from passwd(5)/group(5) text, never through NSS.
final class AccountsTests: XCTestCase {
    let passwd = """
        root:x:0:0:root:/root:/bin/bash
        # a comment
        alice:x:1000:1000:Alice,,,:/home/alice:/bin/bash
        carol:x:1002:4200::/home/carol:/bin/sh
        +nisuser::::::
        broken:x:notanumber:1000::/:/bin/sh
        short:x:1003
        alice:x:2000:2000:second entry, ignored:/:/bin/sh

        """
    let group = """
        root:x:0:
        alice:x:1000:
        doorgateway:x:4200:alice, bob ,
        -nisgroup:::
        empty:x:4300:
        doorgateway:x:9999:mallory

        """

    func testParsesLikeTheFilesSource() {
        let a = Accounts(passwd: passwd, group: group)
        XCTAssertEqual(a.users.map(\.name), ["root", "alice", "carol"])
        XCTAssertEqual(a.user(uid: 1000), .init(name: "alice", uid: 1000, gid: 1000))
        XCTAssertNil(a.user(uid: 2000), "the first entry for a name wins")
        XCTAssertEqual(a.group(named: "doorgateway"), .init(name: "doorgateway", gid: 4200, members: ["alice", "bob"]))
        XCTAssertEqual(a.group(named: "empty")?.members, [])
        XCTAssertNil(a.group(named: "nisgroup"))
        XCTAssertNil(a.group(named: "absent"))
    }

    func testMembershipByListPrimaryGroupOrPeerGID() throws {
        let a = Accounts(passwd: passwd, group: group)
        let admins = try XCTUnwrap(a.group(named: "doorgateway"))
        XCTAssertTrue(a.isMember(uid: 1000, gid: 1000, of: admins), "listed in /etc/group")
        XCTAssertTrue(a.isMember(uid: 1002, gid: 1002, of: admins), "primary group in /etc/passwd")
        XCTAssertTrue(a.isMember(uid: 5555, gid: 4200, of: admins), "the peer's own gid (SO_PEERCRED)")
        XCTAssertFalse(a.isMember(uid: 0, gid: 0, of: admins), "root is admitted elsewhere, not as a member")
        XCTAssertFalse(a.isMember(uid: 5555, gid: 5555, of: admins), "unknown uid")
        // "bob" is listed but has no passwd entry: a uid cannot be matched to him.
        XCTAssertFalse(a.isMember(uid: 1001, gid: 1001, of: admins))
    }

    func testUnreadableFilesAdmitNobody() {
        let a = Accounts.load(passwd: "/nonexistent/passwd", group: "/nonexistent/group")
        XCTAssertEqual(a, Accounts(passwd: "", group: ""))
        XCTAssertNil(a.group(named: "doorgateway"))
    }

    func testRandomBytesNeverTrap() throws {
        var rng = SystemRandomNumberGenerator()
        let alphabet = Array("abc:,#+-\n\r 0123456789x".utf8)
        for _ in 0..<2000 {
            let bytes = (0..<Int.random(in: 0..<200, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }
            let text = String(decoding: bytes, as: UTF8.self)
            // Garbage never swallows the well-formed lines after it ("staff" and "alice" cannot
            // be spelt from the alphabet, so the garbage cannot define them first).
            let a = Accounts(
                passwd: text + "\nalice:x:4243:4243::/home/alice:/bin/sh\n",
                group: text + "\nstaff:x:4242:bob,alice\n")
            XCTAssertEqual(a.group(named: "staff")?.gid, 4242, "after \(Array(text.utf8))")
            XCTAssertEqual(a.user(uid: 4243)?.name, "alice", "after \(Array(text.utf8))")
            let staff = try XCTUnwrap(a.group(named: "staff"))
            XCTAssertTrue(a.isMember(uid: 4243, gid: 1, of: staff), "alice is listed in staff")
            XCTAssertEqual(Set(a.groups.map(\.name)).count, a.groups.count, "the first entry for a name wins")
            for g in a.groups {
                XCTAssertFalse(g.name.isEmpty || g.name.contains(":") || g.name.contains("\n"), g.name)
                XCTAssertFalse(g.members.contains { $0.isEmpty || $0.contains(",") }, "\(g.members)")
                _ = a.isMember(uid: 1, gid: 2, of: g)
            }
        }
    }
}
