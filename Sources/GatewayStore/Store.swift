import DoorCore
import Foundation
import GRDB

/// The gateway's one SQLite database (DESIGN.md "Ownership": one database
/// through GRDB, one ordered migration list each part appends to).
///
/// The file lives in the state directory with mode 0600 (the directory 0700):
/// it holds every secret. SQLite gives the `-wal` and `-shm` files the main
/// file's permissions (os_unix.c `findCreateFileMode`), so creating the main
/// file 0600 before SQLite opens it covers them too. WAL journal mode lets
/// `gatewayctl` read while the daemon writes.
public final class GatewayStore: Sendable {
    public let path: String
    public let pool: DatabasePool

    public static let fileName = "gateway.db"

    /// Opens (creating when needed) the store in `stateDirectory` and runs
    /// every pending migration.
    public init(stateDirectory: String) throws {
        try Self.ensurePrivateDirectory(stateDirectory)
        path = (stateDirectory as NSString).appendingPathComponent(Self.fileName)
        try Self.ensurePrivateFile(path)
        var config = Configuration()
        config.foreignKeysEnabled = true
        config.busyMode = .timeout(5)
        config.label = "doorgateway"
        // An event is durable once its commit returns (issue "MQTT": the
        // outbox is written with synchronous FULL before it is published).
        config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        do {
            pool = try DatabasePool(path: path, configuration: config)
            try StoreMigrations.migrator.migrate(pool)
        } catch {
            throw StoreError.sqlite(path: path, error)
        }
    }

    /// The names of the migrations applied to this database, in order.
    public func appliedMigrations() throws -> [String] {
        try pool.read { try StoreMigrations.migrator.appliedMigrations($0) }
    }

    static func ensurePrivateDirectory(_ dir: String) throws {
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: dir, isDirectory: &isDir) {
            guard isDir.boolValue else { throw StoreError.notADirectory(dir) }
            return
        }
        do {
            try FileManager.default.createDirectory(
                atPath: dir, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        } catch {
            throw StoreError.cannotCreate(path: dir, error.localizedDescription)
        }
    }

    static func ensurePrivateFile(_ path: String) throws {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StoreError.cannotCreate(path: path, String(cString: strerror(errno))) }
        defer { close(fd) }
        // An existing file keeps its mode on open(2): tighten it.
        if fchmod(fd, 0o600) != 0 { throw StoreError.cannotCreate(path: path, String(cString: strerror(errno))) }
    }
}

public enum StoreError: Error, CustomStringConvertible, Equatable {
    case notADirectory(String)
    case cannotCreate(path: String, String)
    case sqlite(path: String, String)
    case invalidValue(String)
    case notFound(String)

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
        }
    }
}
