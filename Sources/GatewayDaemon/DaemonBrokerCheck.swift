import GatewayConfig
import GatewayMQTT

// `gatewayctl config check --broker`: the broker round trip (GatewayMQTT's
// BrokerCheck) with the door's own `[mqtt]` and its password file.

extension BrokerCheck {
    /// `gatewayctl config check --broker` with the door's `[mqtt]`.
    package static func run(
        configuration c: GatewayConfiguration.MQTT, credentials: String? = nil, timeout: Duration = .seconds(5)
    ) throws -> [String] {
        var settings = MQTTSettings(c)
        settings.login = try MQTTSettings.Login.load(c, credentials: credentials)
        return try run(settings: settings, timeout: timeout)
    }
}
