import GatewayConfig
import GatewayMQTT
import Glibc

// The configuration as the transports take it (issue 34 Move C: gatewayd and
// gatewayctl's `config check --broker` share it, so gatewayctl need not
// import the daemon): `[mqtt]` → MQTTSettings and its login, the secret
// files passwords and tokens are read from, and the broker check.

extension MQTTSettings {
    /// `[mqtt]` as the transport needs it.
    public init(_ c: GatewayConfiguration.MQTT) {
        self.init(
            host: c.host, port: c.port, clientID: c.clientID, protocolVersion: c.protocolVersion == .v5 ? .v5 : .v311,
            tls: c.tls,
            keepaliveSeconds: c.keepaliveSeconds, topicPrefix: c.topicPrefix,
            compatCommandTopics: c.compatCommandTopics,
            homeAssistantDiscovery: c.homeAssistantDiscovery)
    }
}

extension MQTTSettings.Login {
    /// `[mqtt] username`, and the password from `password_file` (`SecretFile`).
    package static func load(_ c: GatewayConfiguration.MQTT, credentials: String?) throws -> MQTTSettings.Login? {
        guard let username = c.username else { return nil }
        guard let file = c.passwordFile else { return MQTTSettings.Login(username: username, password: nil) }
        let password = try SecretFile.contents(key: "mqtt.password_file", file, credentials: credentials)
        return MQTTSettings.Login(username: username, password: password)
    }
}

/// A password or token named in gateway.toml: an absolute path, or a bare
/// name read from `credentials` (`$CREDENTIALS_DIRECTORY`). One line, at most
/// 4 KiB; a final newline is not part of it. Errors name the key and the
/// file, never the content.
package enum SecretFile {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    package static func contents(key: String, _ file: String, credentials: String?) throws -> String {
        let path: String
        if file.hasPrefix("/") {
            path = file
        } else if let credentials, !credentials.isEmpty {
            path = credentials + "/" + file
        } else {
            throw Failure(
                description: "\(key) \"\(file)\" names a systemd credential, but there is no "
                    + "$CREDENTIALS_DIRECTORY (give gatewayd LoadCredential=\(file):/etc/doorgateway/\(file), "
                    + "or use an absolute path)")
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else {
            throw Failure(description: "\(key) \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4097)
        while bytes.count <= 4096 {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else {
                throw Failure(description: "\(key) \(path): \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        guard bytes.count <= 4096 else { throw Failure(description: "\(key) \(path): larger than 4 KiB") }
        if bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        guard !bytes.isEmpty else { throw Failure(description: "\(key) \(path) is empty") }
        guard !bytes.contains(where: { $0 == 0 || $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r") }) else {
            throw Failure(description: "\(key) \(path) must hold one line: the secret")
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

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
