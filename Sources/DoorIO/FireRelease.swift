import DoorCore
import Logging
import Synchronization

/// The fire alarm at the board (docs/policy.md "Fire alarm"): which outputs
/// it releases, whether it holds them, and what the door machine last asked
/// of each output, behind one lock that every write to those outputs takes.
///
/// The input thread latches it on the debounced edge into alarm and drives
/// the outputs itself, before the event goes anywhere: no door queue, store,
/// broker or reader on the way. While latched each released output rests at
/// its released level (`OutputLine.rest`: the bias and the crash handler's
/// value), so a stop, a kill -9 or a crash leaves the maglock released; a
/// `drive` to locked is remembered, not applied. Only the machine's reset
/// (`release(inputActive:)` with the input clear) unlatches: the outputs go
/// back to what the machine last asked, and rest at their locked level again.
final class FireRelease: Sendable {
    struct Guarded {
        let definition: OutputDefinition
        let line: OutputLine
    }
    private struct Inner {
        var latched: Bool
        /// The fire input's debounced level (true = alarm), as the input thread last saw it.
        var inputActive: Bool
        /// What the machine last asked of each released output.
        var requested: [String: OutputState] = [:]
    }
    private let guarded: [String: Guarded]
    private let inner: Mutex<Inner>
    private let state: BoardState
    private let logger: Logger

    init(guarded: [Guarded], inputActive: Bool, state: BoardState, logger: Logger) {
        self.guarded = Dictionary(uniqueKeysWithValues: guarded.map { ($0.definition.name, $0) })
        inner = Mutex(Inner(latched: inputActive, inputActive: inputActive))
        self.state = state
        self.logger = logger
        if inputActive {
            // Requested at their released level (GPIOBoard.init): the snapshot says so.
            for g in guarded { state.recordOutput(g.definition, .unlocked) }
        }
    }

    var names: [String] { guarded.keys.sorted() }
    var isLatched: Bool { inner.withLock { $0.latched } }
    var inputActive: Bool { inner.withLock { $0.inputActive } }

    /// The input thread: the debounced level. Into alarm latches and
    /// releases at once (the log line after the lines moved).
    func input(_ active: Bool) {
        let latchedNow = inner.withLock { f -> Bool in
            f.inputActive = active
            guard active, !f.latched else { return false }
            f.latched = true
            for g in guarded.values { restReleased(g) }
            return true
        }
        if latchedNow {
            logger.critical("fire alarm: outputs released", metadata: ["outputs": "\(names.joined(separator: ","))"])
        } else if !active {
            logger.notice("fire alarm input cleared; outputs stay released until `gatewayctl fire reset`")
        }
    }

    /// The machine's decision (`DoorEffect.fireHold`).
    func hold(_ released: Bool) {
        if released {
            let latchedNow = inner.withLock { f -> Bool in
                guard !f.latched else { return false }
                f.latched = true
                for g in guarded.values { restReleased(g) }
                return true
            }
            if latchedNow { logger.critical("fire alarm held: outputs released") }
            return
        }
        let outcome = inner.withLock { f -> String? in
            guard f.latched else { return nil }
            if f.inputActive { return "refused" }
            f.latched = false
            for g in guarded.values {
                let wanted = f.requested[g.definition.name] ?? .locked
                do {
                    try g.line.rest(
                        at: g.definition.lockedLevel == .energised, subject: "output '\(g.definition.name)'")
                    if wanted == .unlocked {
                        try g.line.set(
                            g.definition.level(for: .unlocked) == .energised, subject: "output '\(g.definition.name)'")
                    }
                    state.recordOutput(g.definition, wanted)
                } catch {
                    logger.error("fire reset: output \(g.definition.name): \(error)")
                }
            }
            return "reset"
        }
        switch outcome {
        case "refused"?: logger.error("fire reset refused at the board: its fire input still reads alarm")
        case "reset"?: logger.notice("fire alarm reset: outputs back to the door's rules")
        default: break
        }
    }

    /// `drive` for an output: true when it is one of ours (written here,
    /// under the lock), false for any other output.
    func drive(_ name: String, _ wanted: OutputState) throws -> Bool {
        guard let g = guarded[name] else { return false }
        try inner.withLock { f throws -> Void in
            f.requested[name] = wanted
            let effective: OutputState = f.latched ? .unlocked : wanted
            try g.line.set(g.definition.level(for: effective) == .energised, subject: "output '\(name)'")
            state.recordOutput(g.definition, effective)
        }
        return true
    }

    /// Under the lock: the released level, made the line's rest.
    private func restReleased(_ g: Guarded) {
        let released = g.definition.level(for: .unlocked) == .energised
        do {
            if try g.line.rest(at: released, subject: "output '\(g.definition.name)'") == nil {
                logger.warning(
                    "kernel refused the released level's bias: the output is released while gatewayd runs, but would fall back to its old pull if it stopped",
                    metadata: ["output": "\(g.definition.name)"])
            }
        } catch {
            // The rest value changed before the write failed: the crash path still releases.
            logger.error("fire alarm: could not release output \(g.definition.name): \(error)")
        }
        state.recordOutput(g.definition, .unlocked)
    }
}
