import CBrokerTLS
import CMosquitto
import MulticastDNS

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A libmosquitto client handle, shared by the link's threads.
// @unchecked: a C handle (`struct mosquitto *`) used from several threads; `mosquitto_threaded_set` makes libmosquitto lock its own state for that, and the link destroys it only once no call is in flight (`MQTTLink.clientUse`).
final class MosquittoClient: @unchecked Sendable {
    let handle: OpaquePointer
    init(_ handle: OpaquePointer) { self.handle = handle }
}

/// What the link and `gatewayctl config check --broker` (BrokerCheck) do
/// with a fresh client the same way: protocol version, login and TLS, the
/// broker's address, and libmosquitto's error texts.
enum Mosquitto {
    static func check(_ rc: Int32, _ what: String) throws {
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw MQTTError.setup("\(what): \(describe(rc))") }
    }

    /// Protocol version and TLS (files, and `insecure`) of a fresh client.
    static func configure(_ m: OpaquePointer, _ c: MQTTSettings) throws {
        let version = c.protocolVersion == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311
        try check(mosquitto_int_option(m, MOSQ_OPT_PROTOCOL_VERSION, version), "protocol version")
        if let login = c.login {
            try check(mosquitto_username_pw_set(m, login.username, login.password), "username and password")
        }
        guard c.tls.enabled else { return }
        try check(
            mosquitto_tls_set(m, c.tls.caFile, c.tls.caDirectory, c.tls.certFile, c.tls.keyFile, nil), "TLS files")
        if c.tls.insecure { try check(mosquitto_tls_insecure_set(m, true), "TLS insecure") }
        guard MulticastDNS.isLocalName(c.host), !c.tls.insecure else { return }
        // A `*.local` broker is connected to by address, and libmosquitto 2.0.11
        // checks the certificate against the host it connects to. So the link
        // brings its own TLS context, which checks the name (OpenSSL's
        // X509_VERIFY_PARAM_set1_host) with the same CA and client certificate,
        // and libmosquitto uses it as it is (MOSQ_OPT_SSL_CTX_WITH_DEFAULTS off:
        // with its defaults it would install its own verify callback, which
        // 2.0.11 cannot run for a context it did not make).
        var error = [CChar](repeating: 0, count: 320)
        guard
            let context = door_broker_tls_new(
                c.tls.caFile, c.tls.caDirectory, c.tls.certFile, c.tls.keyFile, MulticastDNS.canonical(c.host),
                &error, error.count)
        else {
            throw MQTTError.setup(
                "TLS for \(c.host): \(String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))"
            )
        }
        defer { door_broker_tls_free(context) }
        try check(mosquitto_int_option(m, MOSQ_OPT_SSL_CTX_WITH_DEFAULTS, 0), "TLS context defaults")
        try check(mosquitto_void_option(m, MOSQ_OPT_SSL_CTX, context), "TLS context")
    }

    /// What to hand libmosquitto as the host: `host` itself, or for a
    /// `*.local` name the first IPv4 address a multicast DNS answer gives.
    static func address(of host: String) throws(MulticastDNS.ResolveError) -> String {
        guard MulticastDNS.isLocalName(host) else { return host }
        return try MulticastDNS.resolveIPv4(host)[0]
    }

    static func describe(_ rc: Int32) -> String {
        if rc == MOSQ_ERR_ERRNO.rawValue { return String(cString: strerror(errno)) }
        return String(cString: mosquitto_strerror(rc))
    }

    static func topic(_ topic: String, matches filter: String) -> Bool {
        var result = false
        return mosquitto_topic_matches_sub(filter, topic, &result) == MOSQ_ERR_SUCCESS.rawValue && result
    }

    /// `text` without leading and trailing spaces and tabs.
    static func trimmed(_ text: Substring) -> String {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = text.firstIndex(where: { !blank($0) }), let last = text.lastIndex(where: { !blank($0) })
        else { return "" }
        return String(text[first...last])
    }
}

public enum MQTTError: Error, CustomStringConvertible {
    case setup(String)
    public var description: String {
        switch self {
        case .setup(let m): return "MQTT setup: \(m)"
        }
    }
}
