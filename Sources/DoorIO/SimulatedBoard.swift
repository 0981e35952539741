import DoorCore
import Logging

/// The door's lines without hardware (DEVELOPERS.md "Conventions" §8): the same protocol as
/// `GPIOBoard`, every line change logged through the injected logger and
/// kept in the snapshot; button presses and door-contact changes are
/// injected with `inject(_:)`. The simulated daemon and tests use it.
public final class SimulatedBoard: DoorBoard, Sendable {
    public let outputs: [OutputDefinition]
    public let indicatorNames: [String]
    private let state: BoardState
    private let logger: Logger

    public init(
        outputs: [OutputDefinition], indicators: [String] = [Indicator.green, Indicator.red, Indicator.buzzer],
        inputs: [InputKind] = [.button], logger: Logger
    ) {
        self.outputs = outputs
        self.indicatorNames = indicators
        self.logger = logger
        state = BoardState(outputs: outputs, indicators: indicators, inputs: inputs)
        for o in outputs { logger.info("sim output \(o.name) → locked (\(o.lockedLevel.rawValue))") }
    }

    /// The board a description names, without its wiring.
    public convenience init(_ description: BoardDescription, logger: Logger) throws {
        try description.validateNames()
        self.init(
            outputs: description.outputs.map(\.definition), indicators: description.indicators.map(\.name),
            inputs: [
                description.button.map { _ in InputKind.button }, description.doorContact.map { _ in .doorContact },
                description.requestToExit.map { _ in .requestToExit },
            ]
            .compactMap { $0 },
            logger: logger)
    }

    deinit { lockAll() }

    public func drive(_ output: String, _ newState: OutputState) throws {
        guard let definition = outputs.first(where: { $0.name == output }) else {
            throw DoorBoardError.unknownOutput(output)
        }
        state.recordOutput(definition, newState)
        logger.info("sim output \(output) → \(newState.rawValue) (\(definition.level(for: newState).rawValue))")
    }

    public func setIndicators(_ changes: [LineChange]) throws {
        if let unknown = changes.first(where: { !indicatorNames.contains($0.line) }) {
            throw DoorBoardError.unknownIndicator(unknown.line)
        }
        for change in changes {
            state.recordIndicator(change.line, on: change.on)
            logger.info("sim indicator \(change)")
        }
    }

    public func lockAll() {
        for o in outputs { state.recordOutput(o, .locked) }
        for name in indicatorNames { state.recordIndicator(name, on: false) }
        logger.info("sim all outputs locked")
    }

    public func snapshot() -> BoardSnapshot { state.snapshot }

    public func setInputHandler(_ handler: @escaping @Sendable (InputEvent) -> Void) { state.setHandler(handler) }

    /// A debounced edge, as the real board's input thread would report it.
    public func inject(_ event: InputEvent) {
        logger.info("sim \(event.input.rawValue) \(event.active ? "active" : "inactive") at \(event.at)")
        state.deliver(event)
    }
}
