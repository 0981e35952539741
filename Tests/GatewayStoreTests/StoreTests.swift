import DoorCore
import Foundation
@testable import GatewayStore
import XCTest

final class StoreTests: XCTestCase {
    var dir: String!

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "store-\(UUID().uuidString)/state"
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: (dir as NSString).deletingLastPathComponent)
    }

    private func mode(_ path: String) throws -> Int {
        var st = stat()
        guard stat(path, &st) == 0 else { throw StoreError.notFound(path) }
        return Int(st.st_mode & 0o777)
    }

    func testCreatesPrivateFilesInWALMode() throws {
        let store = try GatewayStore(stateDirectory: dir)
        try store.syncActions(DoorSettings().actions)  // a write creates -wal/-shm
        XCTAssertEqual(try mode(dir), 0o700)
        XCTAssertEqual(try mode(store.path), 0o600)
        XCTAssertEqual(try mode(store.path + "-wal"), 0o600)
        XCTAssertEqual(try mode(store.path + "-shm"), 0o600)
        let journal = try store.pool.read { try $0.scalar(String.self, sql: "PRAGMA journal_mode") }
        XCTAssertEqual(journal, "wal")
        XCTAssertEqual(
            try store.appliedMigrations(), StoreMigrations.names, "every migration, in list order")
        XCTAssertEqual(try store.appliedMigrations().first, "v1-foundation")
    }

    func testTightensAnExistingWorldReadableFile() throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let path = dir + "/" + GatewayStore.fileName
        _ = FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o644])
        _ = try GatewayStore(stateDirectory: dir)
        XCTAssertEqual(try mode(path), 0o600)
    }

    func testStateDirectoryThatIsAFileIsAClearError() throws {
        let file = NSTemporaryDirectory() + "store-file-\(UUID().uuidString)"
        _ = FileManager.default.createFile(atPath: file, contents: Data())
        defer { try? FileManager.default.removeItem(atPath: file) }
        XCTAssertThrowsError(try GatewayStore(stateDirectory: file)) { error in
            XCTAssertEqual(error as? StoreError, .notADirectory(file))
        }
    }

    func testDeviceKeyIsGeneratedOnceAndSurvivesReopen() throws {
        var calls = 0
        let first = try GatewayStore(stateDirectory: dir).ensureDeviceKey(now: 1) {
            calls += 1
            return Array(repeating: 7, count: 32)
        }
        let again = try GatewayStore(stateDirectory: dir).ensureDeviceKey(now: 2) {
            calls += 1
            return Array(repeating: 9, count: 32)
        }
        XCTAssertEqual(first, Array(repeating: 7, count: 32))
        XCTAssertEqual(again, first)
        XCTAssertEqual(calls, 1)
    }

    func testKeysRejectWrongLengthsAndReplace() throws {
        let store = try GatewayStore(stateDirectory: dir)
        XCTAssertNil(try store.key(.compatTimestamp))
        XCTAssertThrowsError(try store.setKey(.compatTimestamp, Array(repeating: 1, count: 32), now: 1))
        try store.setKey(.compatTimestamp, Array(repeating: 1, count: 16), now: 1)
        try store.setKey(.compatTimestamp, Array(repeating: 2, count: 16), now: 2)
        XCTAssertEqual(try store.key(.compatTimestamp), Array(repeating: 2, count: 16))
        try store.setKey(.nativeCommand, Array(repeating: 3, count: 32), now: 1)
        XCTAssertEqual(try store.key(.nativeCommand), Array(repeating: 3, count: 32))
    }

    func testSecretsLifecycle() throws {
        let store = try GatewayStore(stateDirectory: dir)
        try store.syncActions(DoorSettings().actions)
        let imported = try store.addSecret(
            action: 1, key: Array(repeating: 1, count: 32), label: "phone",
            origin: .imported, now: 100)
        let old = try store.addSecret(
            action: 1, key: Array(repeating: 2, count: 32), label: "old",
            origin: .generated, now: 200)
        let new = try store.addSecret(
            action: 1, key: Array(repeating: 3, count: 32), label: "new",
            origin: .generated, now: 300)
        XCTAssertEqual(try store.secrets(action: 1).map(\.id), [imported.id, old.id, new.id])
        XCTAssertEqual(try store.secrets(action: 0), [])
        XCTAssertEqual(try store.newestGeneratedSecret(action: 1)?.id, new.id)
        try store.setSecretActive(id: new.id, false)
        XCTAssertEqual(try store.newestGeneratedSecret(action: 1)?.id, old.id)
        try store.removeSecret(id: old.id)
        XCTAssertNil(try store.newestGeneratedSecret(action: 1))
        // Removed: kept as an inactive row (history), its key tombstoned (issue 24 M1).
        XCTAssertEqual(try store.secrets().map(\.label), ["phone", "old", "new"])
        XCTAssertEqual(try store.secrets().map(\.active), [true, false, false])
        XCTAssertEqual(try store.secretTombstones(), [FleetDocument.tombstone(of: old.key)])
        XCTAssertThrowsError(try store.removeSecret(id: old.id)) {
            XCTAssertEqual($0 as? StoreError, .alreadyRemoved(id: old.id))
        }
        XCTAssertThrowsError(try store.removeSecret(id: 999)) {
            XCTAssertEqual($0 as? StoreError, .notFound("secret 999"))
        }
        XCTAssertThrowsError(
            try store.addSecret(
                action: 9, key: Array(repeating: 1, count: 32), label: "",
                origin: .imported, now: 1))
        XCTAssertThrowsError(try store.addSecret(action: 1, key: [1, 2], label: "", origin: .imported, now: 1))
    }

    func testActionsWithSecretsAreNotDeletedBySync() throws {
        let store = try GatewayStore(stateDirectory: dir)
        try store.syncActions(DoorSettings().actions)
        try store.addSecret(action: 3, key: Array(repeating: 1, count: 32), label: "", origin: .imported, now: 1)
        try store.syncActions(Array(DoorSettings().actions.prefix(2)))
        let idx = try store.pool.read {
            try $0.fetchAll(sql: "SELECT idx FROM action ORDER BY idx").map { try $0.get(0, as: Int.self) }
        }
        XCTAssertEqual(idx, [0, 1, 3])
        XCTAssertEqual(try store.secrets(action: 3).count, 1)
    }

    func testSecretsSurviveReopen() throws {
        do {
            let store = try GatewayStore(stateDirectory: dir)
            try store.syncActions(DoorSettings().actions)
            try store.addSecret(action: 0, key: Array(repeating: 5, count: 32), label: "x", origin: .generated, now: 1)
        }
        let again = try GatewayStore(stateDirectory: dir)
        XCTAssertEqual(try again.secrets().first?.key, Array(repeating: 5, count: 32))
        XCTAssertEqual(try again.secrets().first?.origin, .generated)
    }
}
