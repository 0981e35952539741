import DoorCore
import GatewayConfig

/// `gateway.toml` through the whole loader the daemon and `config check` use:
/// TOMLParser (TOML 1.0 in Swift), then the strict reader and its checks.
enum TOMLTarget {
    static func run(_ data: [UInt8]) {
        // load(file:) decodes the file the same way.
        let text = String(decoding: data, as: UTF8.self)
        let lines = data.count { $0 == 0x0A } + 2
        do {
            let config = try GatewayConfiguration.load(toml: text)
            _ = config.summary
            let door = config.door
            expect(door.actions.map(\.index) == Array(0..<door.actions.count), "action indexes not 0…n-1")
            expect(!door.outputs.isEmpty, "loaded without an output")
            expect(Set(door.outputs.map(\.name)).count == door.outputs.count, "two outputs share a name")
        } catch {
            expect(!error.issues.isEmpty, "refused without an issue")
            for issue in error.issues {
                expect(!issue.message.isEmpty, "an issue without a message")
                if let line = issue.line { expect((1...lines).contains(line), "issue on line \(line) of \(lines)") }
            }
            _ = error.description
        }
    }
}
