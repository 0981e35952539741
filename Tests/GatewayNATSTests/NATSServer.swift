import DoorCore
import Foundation
import GatewayNATS
import Logging
import Synchronization
import TestSupport

extension NATSServer {
    var credentials: NATSCredentialFiles { NATSCredentialFiles(directory: path("state/nats")) }

    /// `accountKeys`: the keys a pushed JWT must be signed by (default: the doors' account).
    func settings(refreshFraction: Double = 0.75, jetStream: Bool = false, accountKeys: [String]? = nil) -> NATSSettings
    {
        NATSSettings(
            servers: ["tls://localhost:\(port)"], prefix: Self.prefix,
            tls: .init(enabled: true, caFile: path("ca.crt"), certFile: path("door.crt"), keyFile: path("door.key")),
            credentials: credentials,
            accountKeys: accountKeys ?? [(try? UserJWT(credentials.readJWT()))?.issuer].compactMap { $0 },
            jetStream: jetStream, reconnectWaitMilliseconds: 500,
            refreshFraction: refreshFraction,
            name: "door-under-test")
    }
}

final class RecordingHandler: RemoteCommandHandler, Sendable {
    let messages = Mutex<[RemoteMessage]>([])
    func received(_ message: RemoteMessage) { messages.withLock { $0.append(message) } }
}

/// `{"seq":N,...}` → N.
func sequenceNumber(_ payload: String) -> Int? {
    guard let o = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any] else { return nil }
    return o["seq"] as? Int
}
