import Synchronization

/// The documents a link re-sends after every (re)connect, only the newest
/// per topic matters, never through the outbox: the door state, the last
/// access, and on MQTT Home Assistant's documents (retained there; core
/// NATS keeps nothing, so the link keeps them). In the order first kept,
/// the `first` topics ahead; an empty document is one too (on MQTT it
/// clears the retained topic, also after a reconnect).
public final class KeptDocuments: Sendable {
    private let documents: Mutex<[(topic: String, payload: [UInt8]?)]>
    /// Held while a document is kept and sent, and while all are re-sent at
    /// a connect: a re-sent document never overtakes a newer one sent meanwhile.
    private let order = Mutex(())

    /// `first`: topics re-sent ahead of the others (once they have a document).
    public init(first: [String] = []) {
        documents = Mutex(first.map { (topic: $0, payload: nil) })
    }

    /// Keeps `payload` as `topic`'s document and hands it to `send` (which
    /// sends it when connected), both in order with `resend`.
    public func keep(_ payload: [UInt8], on topic: String, send: (String, [UInt8]) -> Void) {
        order.withLock { _ in
            documents.withLock { d in
                if let i = d.firstIndex(where: { $0.topic == topic }) {
                    d[i].payload = payload
                } else {
                    d.append((topic, payload))
                }
            }
            send(topic, payload)
        }
    }

    /// Hands every kept document to `send`, in order (after a connect).
    public func resend(_ send: (String, [UInt8]) -> Void) {
        order.withLock { _ in
            for d in documents.withLock({ $0 }) {
                if let payload = d.payload { send(d.topic, payload) }
            }
        }
    }
}
