extension GatewayConfiguration.MQTT {
    /// `[mqtt] home_assistant_admin` (default false): Home Assistant as the
    /// admin screen — arm and cancel provisioning, see the issued tags and
    /// the last denied one, revoke a tag chosen by label (docs/home-assistant.md).
    /// Arming is as strong as opening: whoever holds a blank sticker at the
    /// door while it is armed gets a key. Off, none of these entities exist
    /// and their commands are refused and audited.
    static func readHomeAssistantAdmin(_ m: TableReader?) -> Bool {
        m?.bool("home_assistant_admin", false) ?? false
    }
}
