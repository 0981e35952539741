import DoorCore
import DoorIO
import Foundation
import GatewayConfig
import GatewayStore
import Logging
import Synchronization
import TestSupport
import XCTest

@testable import GatewayDaemon

/// Tests of one DoorRuntime on the real store on disk, in a directory of the
/// test's own (`dir`), shut down and removed after each test.
class DoorRuntimeTestCase: TemporaryDirectoryTestCase {
    var dir: String!
    var runtime: DoorRuntime?
    /// Where `makeRuntime` keeps the store.
    var stateDirectory: String { dir + "/state" }

    override func setUpWithError() throws { dir = try temporaryDirectory("\(Self.self)").path }

    override func tearDownWithError() throws {
        runtime?.shutdown()
        runtime = nil
        try super.tearDownWithError()  // the directory, after the runtime
    }

    /// A simulated door `id` for `makeRuntime`: `tables` (its `[door]`,
    /// actions, readers …), the clock declared synchronised, and its paths
    /// in the test's directory.
    func doorConfiguration(id: String, _ tables: String) throws -> GatewayConfiguration {
        try GatewayConfiguration.load(
            toml: ConfigText.sim(id: id) + tables
                + "\n[clock]\ndeclare_synchronised = true\n[paths]\nstate_dir = \"\(stateDirectory)\"\nruntime_dir = \"\(dir!)/run\"\n"
        )
    }

    /// The runtime of `configuration` (not started yet; shut down after the
    /// test) on a CuttingBoard, the store in `stateDirectory` and its audit
    /// writer; each audit record is in the board's trace before the writer has it.
    func makeRuntime(
        _ configuration: GatewayConfiguration, label: String
    ) throws -> (DoorRuntime, CuttingBoard, GatewayStore, AuditWriter) {
        let log = Logger(label: label)
        let board = CuttingBoard(
            try SimulatedBoard(configuration.boardDescription, logger: log), stateDirectory: stateDirectory)
        let store = try GatewayStore(stateDirectory: stateDirectory)
        try store.syncActions(configuration.door.actions)
        let writer = AuditWriter(store: store, outbox: EventOutbox(), log: log)
        let runtime = DoorRuntime(
            live: LiveConfiguration(configuration), board: board, store: store, registry: StoreRegistry(store: store),
            audit: { event, time, detail, lastSeen in
                board.trace.withLock { $0.append("audit \(event.kind.rawValue)") }
                writer.write(event, at: time, detail: detail, lastSeen: lastSeen)
            },
            flushAudit: { writer.flush() }, log: log)
        self.runtime = runtime
        return (runtime, board, store, writer)
    }
}

/// A sim board that copies the store's files at each unlock.
final class CuttingBoard: DoorBoard {
    let inner: SimulatedBoard
    let stateDirectory: String
    let cuts: Mutex<[String]> = Mutex([])
    /// Called after each drive (output, state), on the door queue.
    let driven: Mutex<(@Sendable (OutputState) -> Void)?> = Mutex(nil)
    /// The drives, the indicator lines each change turns on or off, and the
    /// audit records (`makeDoor`), in the order they happened.
    let trace: Mutex<[String]> = Mutex([])
    var outputs: [OutputDefinition] { inner.outputs }
    var indicatorNames: [String] { inner.indicatorNames }

    init(_ inner: SimulatedBoard, stateDirectory: String) {
        self.inner = inner
        self.stateDirectory = stateDirectory
    }

    func drive(_ output: String, _ state: OutputState) throws {
        if state == .unlocked {
            let cut = stateDirectory + "-cut-\(cuts.withLock { $0.count })"
            try? FileManager.default.createDirectory(atPath: cut, withIntermediateDirectories: true)
            for name in ["gateway.db", "gateway.db-wal"] {
                let from = stateDirectory + "/" + name
                if FileManager.default.fileExists(atPath: from) {
                    try? FileManager.default.copyItem(atPath: from, toPath: cut + "/" + name)
                }
            }
            cuts.withLock { $0.append(cut) }
        }
        try inner.drive(output, state)
        trace.withLock { $0.append("drive \(output) \(state)") }
        driven.withLock { $0 }?(state)
    }
    func setIndicators(_ changes: [LineChange]) throws {
        try inner.setIndicators(changes)
        trace.withLock { $0.append("indicators " + changes.map(\.line).sorted().joined(separator: ",")) }
    }
    func lockAll() { inner.lockAll() }
    func snapshot() -> BoardSnapshot { inner.snapshot() }
    func setInputHandler(_ handler: @escaping @Sendable (InputEvent) -> Void) { inner.setInputHandler(handler) }
}
