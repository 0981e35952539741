import DoorCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The gateway's one SQLite database (docs/design.md "Ownership": one database,
/// one ordered migration list each part appends to), on SQLite's C API
/// (SQLite.swift).
///
/// The file lives in the state directory with mode 0600 (the directory 0700):
/// it holds every secret. SQLite gives the `-wal` and `-shm` files the main
/// file's permissions (os_unix.c `findCreateFileMode`), so creating the main
/// file 0600 before SQLite opens it covers them too. WAL journal mode lets
/// `gatewayctl` read while the daemon writes.
public final class GatewayStore: Sendable {
    public let path: String
    public let pool: DatabasePool
    /// The key of the next keyed audit row, once `useAuditKey` was given the
    /// audit key (AuditKey.swift); nil: rows are chained unkeyed.
    let auditRatchet = Mutex<AuditRatchet?>(nil)

    public static let fileName = "gateway.db"
    /// `PRAGMA cache_size` of every connection: negative is KiB (128 KiB). The daemon holds
    /// two connections (the writer, a reader) and both fill theirs within ~1 000 taps; 128
    /// rather than 256 KiB kept 0.2 MB less resident at 5 000 bench taps (docs/reliability.md, "One
    /// activation a tap, and RSS at 10 000 taps"): a page not cached is a read from the
    /// kernel's page cache, which holds the file anyway.
    public static let pageCacheKiB = -128

    /// Opens (creating when needed) the store in `stateDirectory` and runs
    /// every pending migration.
    public init(stateDirectory: String) throws {
        try Self.ensurePrivateDirectory(stateDirectory)
        path = Self.join(stateDirectory, Self.fileName)
        try Self.ensurePrivateFile(path)
        do {
            // An event is durable once its commit returns (issue "MQTT": the
            // outbox is written with synchronous FULL before it is published).
            // Page cache bounded per connection (SQLite's default is 2 MB each, up to
            // five connections): the door's memory stays flat as the audit log grows,
            // and the kernel's page cache holds the file anyway.
            pool = try DatabasePool(path: path) { db in
                try db.execute(sql: "PRAGMA synchronous = FULL")
                try db.execute(sql: "PRAGMA cache_size = \(Self.pageCacheKiB)")
            }
            try StoreMigrations.migrate(pool)
        } catch {
            throw StoreError.sqlite(path: path, error)
        }
    }

    /// A read-only view over `pool` (`forRootTool`).
    private init(path: String, readOnlyPool: DatabasePool) {
        self.path = path
        pool = readOnlyPool
    }

    /// The store gatewayd made in `stateDirectory`, as a root tool reads it
    /// (`gatewayctl log --verify`, `fleet push`, `reader write --protect`;
    /// issue 32 M-1). The directory and its files are the daemon's user's:
    /// a compromised daemon can put anything there, so nothing in it is
    /// followed, changed or created:
    /// - the directory is opened `O_DIRECTORY | O_NOFOLLOW` and must not be
    ///   writable by group or others;
    /// - `gateway.db` is opened from it with `openat(…, O_NOFOLLOW)` and must
    ///   be a regular file with one link, owned by the directory's owner (the
    ///   daemon's user, or root for a daemon run as root); `-wal` and `-shm`,
    ///   where present, likewise;
    /// - SQLite opens it `SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW` (every
    ///   connection), and the file it opened must still be the one checked;
    /// - no mode is changed and no migration runs: a store this build has
    ///   migrations for that are not applied yet is refused, with "start or
    ///   restart gatewayd" (the daemon migrates its own store).
    public static func forRootTool(stateDirectory: String) throws -> GatewayStore {
        let file = join(stateDirectory, fileName)
        func refuse(_ why: String) -> StoreError { .untrusted(path: file, why) }
        let dir = open(stateDirectory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard dir >= 0 else {
            let e = errno
            if e == ENOENT { throw StoreError.notFound("\(stateDirectory): \(errnoText()); start gatewayd once") }
            throw StoreError.untrusted(
                path: stateDirectory,
                e == ELOOP || e == ENOTDIR
                    ? "the state directory is a symbolic link or not a directory" : errnoText())
        }
        defer { close(dir) }
        var dst = stat()
        guard fstat(dir, &dst) == 0 else { throw refuse(errnoText()) }
        guard dst.st_mode & 0o022 == 0 else {
            throw StoreError.untrusted(path: stateDirectory, "the state directory is writable by group or others")
        }
        let owner = dst.st_uid
        func check(_ st: stat, _ name: String) throws {
            guard st.st_mode & S_IFMT == S_IFREG else { throw refuse("\(name) is not a regular file") }
            guard st.st_nlink == 1 else { throw refuse("\(name) has \(st.st_nlink) hard links") }
            guard st.st_uid == owner else {
                throw refuse("\(name) is owned by uid \(st.st_uid), the state directory by uid \(owner)")
            }
        }
        let fd = openat(dir, fileName, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            if e == ENOENT { throw StoreError.notFound("\(file): \(errnoText()); start gatewayd once") }
            throw refuse(e == ELOOP ? "\(fileName) is a symbolic link" : errnoText())
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw refuse(errnoText()) }
        try check(st, fileName)
        for suffix in ["-wal", "-shm"] {
            var side = stat()
            if fstatat(dir, fileName + suffix, &side, AT_SYMLINK_NOFOLLOW) == 0 {
                try check(side, fileName + suffix)
            } else if errno != ENOENT {
                throw refuse("\(fileName + suffix): \(errnoText())")
            }
        }
        let pool: DatabasePool
        do {
            pool = try DatabasePool(path: file, readOnly: true) { db in
                try db.execute(sql: "PRAGMA cache_size = \(Self.pageCacheKiB)")
            }
        } catch {
            throw StoreError.sqlite(path: file, error)
        }
        // SQLite opened the path again: it must still name the file checked above.
        var now = stat()
        guard fstatat(dir, fileName, &now, AT_SYMLINK_NOFOLLOW) == 0, now.st_dev == st.st_dev, now.st_ino == st.st_ino
        else { throw refuse("\(fileName) was replaced while it was opened") }
        let store = GatewayStore(path: file, readOnlyPool: pool)
        let applied: [String]
        do { applied = try store.appliedMigrations() } catch { throw StoreError.sqlite(path: file, error) }
        let pending = StoreMigrations.names.filter { !applied.contains($0) }
        guard pending.isEmpty else { throw StoreError.notMigrated(path: file, pending: pending) }
        return store
    }

    /// The names of the migrations applied to this database, in order.
    public func appliedMigrations() throws -> [String] {
        try pool.read { try StoreMigrations.applied($0) }
    }

    static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }

    static func ensurePrivateDirectory(_ dir: String) throws {
        var st = stat()
        if stat(dir, &st) == 0 {
            guard st.st_mode & S_IFMT == S_IFDIR else { throw StoreError.notADirectory(dir) }
            return
        }
        // Missing parents first (mkdir -p), each private as the directory itself.
        let trimmed = dir.hasSuffix("/") ? String(dir.dropLast()) : dir
        if let slash = trimmed.lastIndex(of: "/"), slash != trimmed.startIndex {
            let parent = String(trimmed[..<slash])
            if stat(parent, &st) != 0 { try ensurePrivateDirectory(parent) }
        }
        guard mkdir(dir, 0o700) == 0 || errno == EEXIST else {
            throw StoreError.cannotCreate(path: dir, errnoText())
        }
        // The umask cannot loosen 0700, but make the mode exact.
        guard chmod(dir, 0o700) == 0 else { throw StoreError.cannotCreate(path: dir, errnoText()) }
    }

    static func ensurePrivateFile(_ path: String) throws {
        // Never through a symbolic link (issue 32 M-1: the fchmod below went to its target).
        let fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StoreError.cannotCreate(path: path, errnoText()) }
        defer { close(fd) }
        // An existing file keeps its mode on open(2): tighten it.
        if fchmod(fd, 0o600) != 0 { throw StoreError.cannotCreate(path: path, errnoText()) }
    }
}

public enum StoreError: Error, CustomStringConvertible, Equatable {
    case notADirectory(String)
    case cannotCreate(path: String, String)
    case sqlite(path: String, String)
    case invalidValue(String)
    case notFound(String)
    /// A root tool refused the daemon's store: a link, another owner, … (issue 32 M-1).
    case untrusted(path: String, String)
    /// The store lacks migrations this build has: the daemon applies them, never a root tool.
    case notMigrated(path: String, pending: [String])
    /// The sticker secret's key is already held, as this secret.
    case alreadyHeld(id: Int64, action: ActionIndex, origin: SecretOrigin)
    /// The sticker secret's key was removed (its tombstone is held, issue 24 M1).
    case removedKey
    /// The secret was removed already (its row stays, inactive, as history).
    case alreadyRemoved(id: Int64)

    static func sqlite(path: String, _ error: Error) -> StoreError {
        .sqlite(path: path, String(describing: error))
    }

    public var description: String {
        switch self {
        case .notADirectory(let p): return "state directory \(p) is not a directory"
        case .cannotCreate(let p, let why): return "cannot create \(p): \(why)"
        case .sqlite(let p, let why): return "store \(p): \(why)"
        case .invalidValue(let why): return "invalid value: \(why)"
        case .notFound(let what): return "not found: \(what)"
        case .untrusted(let p, let why):
            return "refusing the daemon's store \(p): \(why); nothing was read or changed"
        case .notMigrated(let p, let pending):
            return "the store \(p) is not migrated for this version (\(pending.count) pending: "
                + "\(pending.joined(separator: ", "))): start or restart gatewayd, which migrates it, then run "
                + "this again (a root tool never changes the daemon's store)"
        case .alreadyHeld(let id, let action, let origin):
            return "this key is already held as secret \(id) (action \(action), \(origin.rawValue)); nothing was stored"
        case .removedKey:
            return "this key was removed (here or at another door of the fleet: its tombstone is held); "
                + "a removed key never comes back; nothing was stored"
        case .alreadyRemoved(let id): return "secret \(id) was already removed"
        }
    }
}
