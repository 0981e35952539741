import DoorCore

extension Daemon {
    /// MQTT arrives with the MQTT issue; until then a configured broker is
    /// reported, not silently ignored.
    func startRemote() {
        if configuration.mqtt.enabled { log.error("[mqtt] is enabled but this build has no MQTT link yet; events stay in the audit log") }
    }
    func stopRemote() {}
    func remoteStatus() -> JSONValue { .object([("enabled", .bool(configuration.mqtt.enabled)), ("connected", .bool(false))]) }
}
