import DoorCore
import GatewayConfig
import Synchronization
import XCTest

@testable import GatewayDaemon

/// The daemon's services (issue 34 Move C): started in order, stopped in
/// reverse — the door runtime's kind (`stopsFirst`) before the rest — only
/// those that started, once; a reload reaches each in order.
final class ServiceListTests: XCTestCase {
    final class Journal: Sendable {
        let lines = Mutex<[String]>([])
        func add(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    func service(_ name: String, _ journal: Journal, first: Bool = false, onStart: @escaping @Sendable () -> Void = {})
        -> DoorService
    {
        DoorService(
            name: name,
            start: {
                journal.add("start \(name)")
                onStart()
            }, stop: { journal.add("stop \(name)") }, reloaded: { _, _ in journal.add("reload \(name)") },
            stopsFirst: first)
    }

    func testStartedInOrderStoppedInReverseTheRuntimeFirst() throws {
        let journal = Journal()
        let list = ServiceList()
        list.set(
            ["outputs", "audit", "runtime", "reader", "control"].map { service($0, journal, first: $0 == "runtime") })
        list.start()
        let configuration = try GatewayConfiguration.load(toml: "[device]\nid = \"d\"\n[board]\nkind = \"sim\"\n")
        list.reloaded(configuration, zone: try TimeZoneRules(tzif: Self.utc, name: "UTC"))
        XCTAssertEqual(list.stop(), ["runtime", "control", "reader", "audit", "outputs"])
        XCTAssertEqual(list.stop(), [], "stopped once")
        list.reloaded(configuration, zone: try TimeZoneRules(tzif: Self.utc, name: "UTC"))
        XCTAssertEqual(
            journal.all,
            ["start outputs", "start audit", "start runtime", "start reader", "start control"]
                + ["reload outputs", "reload audit", "reload runtime", "reload reader", "reload control"]
                + ["stop runtime", "stop control", "stop reader", "stop audit", "stop outputs"])
    }

    /// A stop while a service starts (the control socket's start that cannot
    /// go on): what started stops; nothing after it starts.
    func testAStopDuringTheStartStopsWhatStartedAndStartsNothingMore() {
        let journal = Journal()
        let list = ServiceList()
        let stopped = Mutex<[String]>([])
        list.set([
            service("outputs", journal), service("runtime", journal, first: true),
            service("control", journal) { stopped.withLock { $0 = list.stop() } }, service("timers", journal),
        ])
        list.start()
        XCTAssertEqual(stopped.withLock { $0 }, ["runtime", "outputs"])
        XCTAssertEqual(
            journal.all, ["start outputs", "start runtime", "start control", "stop runtime", "stop outputs"])
    }

    /// A UTC TZif (version 1, no transitions, one type, "UTC").
    static let utc: [UInt8] = {
        var b = Array("TZif".utf8) + [0] + [UInt8](repeating: 0, count: 15)
        // isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt
        for n: UInt32 in [0, 0, 0, 0, 1, 4] { b += withUnsafeBytes(of: n.bigEndian, Array.init) }
        b += [0, 0, 0, 0, 0, 0] + Array("UTC".utf8) + [0]
        return b
    }()
}
