import DoorCore
import DoorIO
import GatewayConfig
import GatewayControl

extension GatewayConfiguration {
    /// The DoorIO view of the configured lines.
    var boardDescription: BoardDescription {
        func input(_ i: Input) -> BoardDescription.Input {
            BoardDescription.Input(
                line: LineSpec(i.line.description), activeLow: i.activeLow,
                bias: BoardDescription.Bias(rawValue: i.bias.rawValue) ?? .pullUp,
                debounce: .milliseconds(i.debounceMilliseconds))
        }
        var description = BoardDescription(
            chip: chip,
            outputs: outputs.map {
                .init(
                    name: $0.name, line: LineSpec($0.line.description), activeLow: $0.activeLow,
                    lockedLevel: $0.lockedLevel, onFire: $0.onFire)
            },
            indicators: indicators.map {
                .init(name: $0.name, line: LineSpec($0.line.description), activeLow: $0.activeLow)
            },
            button: input(button),
            doorContact: doorContact.map(input), fireAlarm: fireAlarm.map { input($0.input) })
        description.requestToExit = requestToExit.map(input)
        return description
    }
}
