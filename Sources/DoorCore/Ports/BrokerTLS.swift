/// TLS to the broker: `[mqtt.tls]` as the configuration reads it and as the
/// MQTT transport takes it (one type, so nothing is copied field by field).
public struct BrokerTLS: Equatable, Sendable {
    public var enabled: Bool
    public var caFile: String?
    public var caDirectory: String?
    public var certFile: String?
    public var keyFile: String?
    /// Skip checking the broker's host name (the chain is still verified; tests only).
    public var insecure: Bool

    public init(
        enabled: Bool, caFile: String? = nil, caDirectory: String? = nil, certFile: String? = nil,
        keyFile: String? = nil, insecure: Bool = false
    ) {
        self.enabled = enabled
        self.caFile = caFile
        self.caDirectory = caDirectory
        self.certFile = certFile
        self.keyFile = keyFile
        self.insecure = insecure
    }
}
