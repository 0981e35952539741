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

final class MemoryOutbox: Outbox, @unchecked Sendable {
    private struct Rows {
        var next: Int64 = 1
        var rows: [OutboxRow] = []
    }
    private let rows = Mutex(Rows())
    func commit(_ messages: [OutgoingMessage]) throws {
        rows.withLock { r in
            for m in messages {
                r.rows.append(OutboxRow(seq: r.next, topic: m.topic, payload: m.make(r.next), retain: m.retain))
                r.next += 1
            }
        }
    }
    func waiting(after seq: Int64, limit: Int) throws -> [OutboxRow] {
        rows.withLock { Array($0.rows.lazy.filter { $0.seq > seq }.prefix(limit)) }
    }
    func acknowledge(_ seqs: [Int64]) throws {
        let done = Set(seqs)
        rows.withLock { $0.rows.removeAll { done.contains($0.seq) } }
    }
    func depth() throws -> Int { rows.withLock { $0.rows.count } }
}

final class RecordingHandler: RemoteCommandHandler, @unchecked Sendable {
    let messages = Mutex<[RemoteMessage]>([])
    func received(_ message: RemoteMessage) { messages.withLock { $0.append(message) } }
}

/// Every log line, to assert on (and to check no secret is ever in one).
final class LogCapture: @unchecked Sendable {
    let lines = Mutex<[String]>([])
    var logger: Logger {
        var logger = Logger(label: "test", factory: { _ in Handler(capture: self) })
        logger.logLevel = .trace
        return logger
    }
    var all: [String] { lines.withLock { $0 } }

    struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            capture.lines.withLock { $0.append("\(event.level) \(event.message)") }
        }
    }
}

/// `{"seq":N,...}` → N.
func sequenceNumber(_ payload: String) -> Int? {
    guard let o = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any] else { return nil }
    return o["seq"] as? Int
}
