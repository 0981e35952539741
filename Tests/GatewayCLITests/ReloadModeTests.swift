import DoorCore
import DoorIO
import Foundation
import GatewayConfig
import GatewayStore
import Logging
import TestSupport
import XCTest

@testable import GatewayDaemon

/// A reload that changes `[door] mode` never unlocks the door where the
/// running door would not: outside its passage schedule's window the
/// schedule says the door is shut, and a lockdown stays until `gatewayctl
/// mode` lifts it (never an edit of gateway.toml).
final class ReloadModeTests: DoorRuntimeTestCase {
    /// Two days ago in UTC: never today in any time zone.
    var closedDay: String {
        let days = ["thu", "fri", "sat", "sun", "mon", "tue", "wed"]  // 1970-01-01 was a Thursday
        return days[Int((time(nil) / 86_400 + 7 - 2) % 7)]
    }

    func configuration(mode: String, schedule: Bool) throws -> GatewayConfiguration {
        try doorConfiguration(
            id: "reload-mode",
            """
            [door]
            mode = "\(mode)"
            \(schedule ? "passage_schedule = \"open-hours\"" : "")
            \(schedule ? "[[schedules]]\nname = \"open-hours\"\nwindows = [{ days = [\"\(closedDay)\"], from = \"00:00\", to = \"23:59\" }]" : "")
            """)
    }

    func makeDoor(_ configuration: GatewayConfiguration) throws -> (DoorRuntime, CuttingBoard) {
        let (runtime, board, _, _) = try makeRuntime(configuration, label: "reload-mode")
        runtime.start()
        runtime.sync {}
        return (runtime, board)
    }

    func mode(_ runtime: DoorRuntime) -> String? {
        guard case .object(let fields) = runtime.sync({ runtime.stateDocument() }) else { return nil }
        guard case .string(let mode)? = fields.first(where: { $0.0 == "mode" })?.1 else { return nil }
        return mode
    }

    func unlocks(_ board: CuttingBoard) -> Int {
        board.trace.withLock { $0.filter { $0.hasPrefix("drive") && $0.hasSuffix("unlocked") }.count }
    }

    func testPassageByAReloadOutsideItsScheduleNeverUnlocks() throws {
        let (runtime, board) = try makeDoor(try configuration(mode: "normal", schedule: true))
        runtime.reload(try configuration(mode: "passage", schedule: true))
        runtime.sync {}
        runtime.sync {}
        XCTAssertEqual(unlocks(board), 0, "outside the schedule's window: \(board.trace.withLock { $0 })")
        XCTAssertEqual(mode(runtime), "normal")
    }

    func testAReloadDoesNotLiftALockdown() throws {
        let (runtime, board) = try makeDoor(try configuration(mode: "normal", schedule: false))
        runtime.submit(.admin(.setMode(.lockdown)))
        runtime.sync {}
        runtime.reload(try configuration(mode: "passage", schedule: false))
        runtime.sync {}
        runtime.sync {}
        XCTAssertEqual(unlocks(board), 0, "\(board.trace.withLock { $0 })")
        XCTAssertEqual(mode(runtime), "lockdown")
    }

    /// Without a schedule, a changed mode is the door's at once (README's "Reloading").
    func testPassageByAReloadWithoutAScheduleOpensAtOnce() throws {
        let (runtime, board) = try makeDoor(try configuration(mode: "normal", schedule: false))
        runtime.reload(try configuration(mode: "passage", schedule: false))
        runtime.sync {}
        runtime.sync {}
        XCTAssertEqual(unlocks(board), 1, "\(board.trace.withLock { $0 })")
    }
}
