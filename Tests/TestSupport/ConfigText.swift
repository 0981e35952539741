/// The gateway.toml lines many tests start from; each test adds the sections
/// it is about.
public enum ConfigText {
    /// A simulated door named `id`.
    public static func sim(id: String) -> String { "[device]\nid = \"\(id)\"\n[board]\nkind = \"sim\"\n" }

    /// A simulated door whose `[mqtt]` is on, TLS off (nothing connects: a
    /// configuration or a reload under test).
    public static func simWithPlainMQTT(id: String) -> String {
        sim(id: id) + "[mqtt]\nenabled = true\n[mqtt.tls]\nenabled = false\n"
    }

    /// A simulated door whose `[mqtt]` reaches a test broker on localhost at
    /// `port`; the login and `[mqtt.tls]` follow.
    public static func simWithMQTT(id: String = "front-door", port: Int) -> String {
        sim(id: id) + "[mqtt]\nenabled = true\nhost = \"localhost\"\nport = \(port)\n"
    }
}
