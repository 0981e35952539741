import Glibc

/// Users and groups, read from `/etc/passwd` and `/etc/group` themselves.
///
/// The static binary must never call `getpwnam`/`getgrnam`/`getpwuid`/
/// `getgrouplist`: for a name the `files` source does not know, glibc walks on
/// to the next source in `/etc/nsswitch.conf` (Debian 12: `group: files
/// systemd`) and `dlopen`s `libnss_systemd.so.2` into a process that has no
/// dynamic loader state — gatewayd died with SIGSEGV 35 ms after start when
/// the stock `admin_group` was absent. The local files are what the `files`
/// source reads; users and groups that exist only in another source (LDAP,
/// systemd's DynamicUser) are not admitted, which is the safe side.
package struct Accounts: Equatable {
    package struct User: Equatable {
        package var name: String
        package var uid: UInt32
        package var gid: UInt32
    }

    struct Group: Equatable {
        package var name: String
        var gid: UInt32
        var members: [String]
    }

    package var users: [User]
    var groups: [Group]

    /// The groups the udev rules (board/99-doorgateway.rules, and Raspberry
    /// Pi OS's own) give the relay's GPIO chip, the reader's bus and the
    /// serial ports.
    static let hardwareGroups = ["gpio", "i2c", "spi", "dialout"]

    /// Users who can drive the relay or the reader directly, without being
    /// admins (security review L7): members of `hardwareGroups` (named in
    /// /etc/group or by their primary group) other than root, `daemonUser`
    /// and members of `adminGroup`. Group name → user names, sorted.
    package func hardwareAccessOutsideAdmins(
        daemonUser: String, adminGroup: String
    ) -> [(group: String, users: [String])] {
        let admin = group(named: adminGroup)
        func isAdmin(_ name: String) -> Bool {
            guard let admin else { return false }
            if admin.members.contains(name) { return true }
            return users.first { $0.name == name }?.gid == admin.gid
        }
        return Self.hardwareGroups.compactMap { name in
            guard let g = group(named: name) else { return nil }
            let all = Set(g.members + users.filter { $0.gid == g.gid }.map(\.name))
            let outside = all.filter { $0 != "root" && $0 != daemonUser && !isAdmin($0) }.sorted()
            return outside.isEmpty ? nil : (name, outside)
        }
    }

    static let passwdPath = "/etc/passwd"
    static let groupPath = "/etc/group"

    /// The system's files; a file that cannot be read counts as empty (nobody
    /// but root and the daemon's own user is then admitted).
    package static func load(passwd: String = passwdPath, group: String = groupPath) -> Accounts {
        func text(_ path: String) -> String {
            Files.contents(path).flatMap { String(validating: $0, as: UTF8.self) } ?? ""
        }
        return Accounts(passwd: text(passwd), group: text(group))
    }

    /// Parses passwd(5) and group(5) text. Comments, blank lines, NIS
    /// `+`/`-` entries and lines with the wrong field count or a non-numeric
    /// id are skipped; the first entry for a name wins, as in glibc's `files`.
    init(passwd: String, group: String) {
        func fields(_ text: String, count: Int) -> [[Substring]] {
            text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" }).compactMap { line in
                guard let first = line.first, first != "#", first != "+", first != "-" else { return nil }
                let f = line.split(separator: ":", omittingEmptySubsequences: false)
                return f.count == count && !f[0].isEmpty ? f : nil
            }
        }
        var users: [User] = []
        for f in fields(passwd, count: 7) {
            guard let uid = UInt32(f[2]), let gid = UInt32(f[3]), !users.contains(where: { $0.name == f[0] })
            else { continue }
            users.append(User(name: String(f[0]), uid: uid, gid: gid))
        }
        var groups: [Group] = []
        for f in fields(group, count: 4) {
            guard let gid = UInt32(f[2]), !groups.contains(where: { $0.name == f[0] }) else { continue }
            let members = f[3].split(separator: ",").map { $0.trimmingBlanks }
            groups.append(Group(name: String(f[0]), gid: gid, members: members.filter { !$0.isEmpty }))
        }
        self.users = users
        self.groups = groups
    }

    func group(named name: String) -> Group? { groups.first { $0.name == name } }
    func user(uid: UInt32) -> User? { users.first { $0.uid == uid } }

    /// Whether a process with this uid and primary gid (SO_PEERCRED) is in
    /// `group`: its own gid, the primary group of its passwd entry, or a
    /// member listed in group(5) — what `getgrouplist` answers from `files`.
    func isMember(uid: UInt32, gid: UInt32, of group: Group) -> Bool {
        if gid == group.gid { return true }
        guard let user = user(uid: uid) else { return false }
        return user.gid == group.gid || group.members.contains(user.name)
    }
}
