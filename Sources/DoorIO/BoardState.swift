import DoorCore
import Synchronization

/// What a board last set or saw, and where input events go; shared by the
/// board and its input thread. Both boards (real and simulated) keep one.
final class BoardState: Sendable {
    private struct Inner {
        var snapshot: BoardSnapshot
        var handler: (@Sendable (InputEvent) -> Void)?
    }
    private let inner: Mutex<Inner>

    /// Outputs start locked, indicators off, inputs inactive.
    init(outputs: [OutputDefinition], indicators: [String], inputs: [InputKind]) {
        let snapshot = BoardSnapshot(
            outputs: Dictionary(
                uniqueKeysWithValues: outputs.map {
                    ($0.name, BoardSnapshot.OutputLine(state: .locked, level: $0.lockedLevel))
                }),
            indicators: Dictionary(uniqueKeysWithValues: indicators.map { ($0, false) }),
            inputs: Dictionary(uniqueKeysWithValues: inputs.map { ($0, false) }))
        inner = Mutex(Inner(snapshot: snapshot))
    }

    var snapshot: BoardSnapshot { inner.withLock { $0.snapshot } }

    func setHandler(_ handler: @escaping @Sendable (InputEvent) -> Void) {
        inner.withLock { $0.handler = handler }
    }

    func recordOutput(_ output: OutputDefinition, _ state: OutputState) {
        inner.withLock { $0.snapshot.outputs[output.name] = .init(state: state, level: output.level(for: state)) }
    }

    func recordIndicator(_ name: String, on: Bool) {
        inner.withLock { $0.snapshot.indicators[name] = on }
    }

    /// Record an input's level without an event (a level read at start).
    func recordInput(_ input: InputKind, active: Bool) {
        inner.withLock { $0.snapshot.inputs[input] = active }
    }

    /// Record the input's level and hand the event to the handler (outside the lock).
    func deliver(_ event: InputEvent) {
        let handler = inner.withLock { state -> (@Sendable (InputEvent) -> Void)? in
            state.snapshot.inputs[event.input] = event.active
            return state.handler
        }
        handler?(event)
    }
}
