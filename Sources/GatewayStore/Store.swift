import DoorCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The gateway's one SQLite database (DESIGN.md "Ownership": one database,
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
    /// `PRAGMA cache_size` of every connection: negative is KiB (256 KiB).
    public static let pageCacheKiB = -256

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

    /// Opens the store a daemon already made in `stateDirectory`; never
    /// creates one (`gatewayctl` reading it as root must not leave a fresh,
    /// empty store where a wrong `state_dir` points).
    public static func existing(stateDirectory: String) throws -> GatewayStore {
        let file = join(stateDirectory, fileName)
        var st = stat()
        guard stat(file, &st) == 0 else {
            throw StoreError.notFound("\(file): \(errnoText())")
        }
        return try GatewayStore(stateDirectory: stateDirectory)
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
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
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
        case .alreadyHeld(let id, let action, let origin):
            return "this key is already held as secret \(id) (action \(action), \(origin.rawValue)); nothing was stored"
        case .removedKey:
            return "this key was removed (here or at another door of the fleet: its tombstone is held); "
                + "a removed key never comes back; nothing was stored"
        case .alreadyRemoved(let id): return "secret \(id) was already removed"
        }
    }
}
