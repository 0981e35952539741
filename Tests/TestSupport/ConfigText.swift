/// The gateway.toml lines many tests start from; each test adds the sections
/// it is about.
public enum ConfigText {
    /// A simulated door named `id`.
    public static func sim(id: String) -> String { "[device]\nid = \"\(id)\"\n[board]\nkind = \"sim\"\n" }

    /// A maglock's `[[outputs]]` table: line 5, locked energised (held by current).
    public static let maglock = "[[outputs]]\nname = \"maglock\"\nline = 5\nlocked_level = \"energised\"\n"

    /// A simulated door named `id` with a maglock (`maglock`).
    public static func simMaglock(id: String) -> String { sim(id: id) + maglock }

    /// One `[[actions]]` table: action `index` named `name`, a pulse of the
    /// strike for `ms`, and the lines `more` (a schedule, an approval, credentials).
    public static func action(_ index: Int, _ name: String, ms: Int = 300, _ more: String = "") -> String {
        """
        [[actions]]
        index = \(index)
        name = "\(name)"
        steps = [{ pulse = "strike", ms = \(ms) }]
        \(more)
        """
    }

    /// An entry reader (`street`, the PN532) and an exit reader (`yard`, OSDP): a door
    /// where passback applies.
    public static let entryAndExitReaders = """
        [[readers]]
        name = "street"
        kind = "pn532"
        side = "entry"
        [[readers]]
        name = "yard"
        kind = "osdp"
        side = "exit"
        device = "/dev/ttyUSB0"

        """

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
