import Dispatch
import DoorCore
import GatewayConfig
import Glibc
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
        XCTAssertEqual(
            list.stopOnce(), .init(order: ["runtime", "control", "reader", "audit", "outputs"], ranHere: false),
            "stopped once; a later stopper sees that stop")
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

    /// Two stoppers at once (SIGTERM while a failed start stops, issue 34):
    /// the second waits for the one stop to end — the audit writer flushed,
    /// the outputs locked — and sees its order; before, it came back at once
    /// with nothing and gatewayd exited while the first was still flushing.
    func testASecondStopWaitsForTheFirstToEnd() {
        let journal = Journal()
        let list = ServiceList()
        let flushing = DispatchSemaphore(value: 0)
        list.set([
            service("outputs", journal),
            DoorService(
                name: "audit writer",
                stop: {
                    journal.add("flushing")
                    flushing.signal()
                    usleep(300_000)
                    journal.add("flushed")
                }),
            service("runtime", journal, first: true), service("control", journal),
        ])
        list.start()
        let firstDone = DispatchSemaphore(value: 0)
        let first = Mutex<[String]>([])
        DispatchQueue.global().async {
            first.withLock { $0 = list.stop() }
            firstDone.signal()
        }
        flushing.wait()
        let second = list.stop()
        let seenBySecond = journal.all
        firstDone.wait()
        let order = ["runtime", "control", "audit writer", "outputs"]
        XCTAssertEqual(second, order, "the second stopper sees the one stop's order")
        XCTAssertEqual(first.withLock { $0 }, order)
        XCTAssertEqual(
            Array(seenBySecond.suffix(2)), ["flushed", "stop outputs"],
            "the second stopper returned before the audit writer flushed and the outputs locked")
        XCTAssertEqual(journal.all.filter { $0 == "stop outputs" }.count, 1, "stopped once")
    }

    /// A stop from another thread while a service starts (SIGTERM while the
    /// transport connects): it waits for that start to return, then stops
    /// that service too; nothing after it starts. Before, the service being
    /// started was left running, never stopped.
    func testAStopFromAnotherThreadStopsTheServiceBeingStarted() {
        let journal = Journal()
        let list = ServiceList()
        let starting = DispatchSemaphore(value: 0)
        list.set([
            service("outputs", journal),
            service("transport", journal) {
                starting.signal()
                usleep(300_000)
                journal.add("transport up")
            },
            service("control", journal),
        ])
        let startDone = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            list.start()
            startDone.signal()
        }
        starting.wait()
        XCTAssertEqual(list.stop(), ["transport", "outputs"])
        startDone.wait()
        XCTAssertEqual(
            journal.all, ["start outputs", "start transport", "transport up", "stop transport", "stop outputs"])
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
