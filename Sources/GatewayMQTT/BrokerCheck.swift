import CMosquitto
import DoorCore
import RemoteLink
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `gatewayctl config check --broker`: one round trip through the broker with
/// the door's own identity — connect (TLS, client certificate), subscribe to
/// `<prefix>/check`, publish a nonce there at QoS 1, and wait for it to come
/// back. Under MQTT 3.1.1 a broker acknowledges a publish its ACL denies, so
/// only the message coming back proves the door may write (and read) its
/// prefix; under MQTT 5 the PUBACK's reason code says so as well.
public enum BrokerCheck {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Lines to print on success; throws `Failure` with the reason otherwise.
    public static func run(settings c: MQTTSettings, timeout: Duration = .seconds(5)) throws -> [String] {
        mosquitto_lib_init()
        let probe = Probe()
        let pointer = Unmanaged.passUnretained(probe).toOpaque()
        guard let m = mosquitto_new(c.clientID + "-check-\(getpid())", true, pointer) else {
            throw Failure(description: "mosquitto_new failed")
        }
        defer { mosquitto_destroy(m) }
        do { try Mosquitto.configure(m, c) } catch { throw Failure(description: "\(error)") }
        mosquitto_connect_callback_set(m) { _, obj, rc in Probe.from(obj).event(.connected(rc)) }
        mosquitto_log_callback_set(m) { _, obj, level, message in
            guard level & Int32(MOSQ_LOG_ERR) != 0, let message else { return }
            let text = String(cString: message)
            guard text.hasPrefix("OpenSSL Error") else { return }
            let reason = text.split(separator: ":").last.map { Mosquitto.trimmed($0) } ?? text
            Probe.from(obj).tlsReason.withLock { if $0 == nil { $0 = reason } }
        }
        mosquitto_subscribe_callback_set(m) { _, obj, _, count, granted in
            let first = count > 0 ? granted?.pointee ?? 0x80 : 0x80
            Probe.from(obj).event(.subscribed(first))
        }
        mosquitto_publish_v5_callback_set(m) { _, obj, _, reason, _ in Probe.from(obj).event(.acknowledged(reason)) }
        mosquitto_message_callback_set(m) { _, obj, message in
            guard let message, message.pointee.payloadlen > 0 else { return }
            let bytes = Array(
                UnsafeRawBufferPointer(start: message.pointee.payload, count: Int(message.pointee.payloadlen)))
            Probe.from(obj).event(.message(bytes))
        }
        let started = ContinuousClock.now
        let address: String
        do { address = try Mosquitto.address(of: c.host) } catch { throw Failure(description: "\(error)") }
        var rc = mosquitto_connect(m, address, Int32(c.port), Int32(c.keepaliveSeconds))
        guard rc == MOSQ_ERR_SUCCESS.rawValue else {
            let tls = probe.tlsReason.withLock { $0 }.map { " (TLS: \($0))" } ?? ""
            throw Failure(description: "connect to \(c.host):\(c.port): \(Mosquitto.describe(rc))\(tls)")
        }
        guard mosquitto_loop_start(m) == MOSQ_ERR_SUCCESS.rawValue else {
            throw Failure(description: "libmosquitto network thread did not start")
        }
        defer {
            mosquitto_disconnect(m)
            mosquitto_loop_stop(m, false)
        }
        let proto = c.protocolVersion == .v5 ? "MQTT 5" : "MQTT 3.1.1"
        let security =
            c.tls.enabled ? (c.tls.certFile != nil ? "TLS with a client certificate" : "TLS") : "plain TCP"
        guard case .connected(let code)? = probe.wait(until: started + timeout, for: { $0.isConnect }) else {
            if let reason = probe.tlsReason.withLock({ $0 }) {
                throw Failure(description: "connect to \(c.host):\(c.port): TLS: \(reason) (\(security))")
            }
            throw Failure(description: "no answer from \(c.host):\(c.port) within \(timeout) (\(security))")
        }
        guard code == 0 else {
            throw Failure(
                description: "the broker refused the connection: \(String(cString: mosquitto_connack_string(code)))")
        }
        var lines = ["broker: connected to \(c.host):\(c.port) (\(proto), \(security))"]
        let topic = c.topicPrefix + "/check"
        rc = mosquitto_subscribe(m, nil, topic, 1)
        guard rc == MOSQ_ERR_SUCCESS.rawValue,
            case .subscribed(let granted)? = probe.wait(until: ContinuousClock.now + timeout, for: { $0.isSubscribe })
        else { throw Failure(description: "subscribe to \(topic): no SUBACK") }
        guard granted < 0x80 else {
            throw Failure(description: "the broker refused the subscription to \(topic): check its ACL for this device")
        }
        let nonce = Array("check \(Hex.encode((try? Crypto.randomBytes(8)) ?? []))".utf8)
        let sent = ContinuousClock.now
        rc = mosquitto_publish(m, nil, topic, Int32(nonce.count), nonce, 1, false)
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw Failure(description: "publish: \(Mosquitto.describe(rc))") }
        let deadline = sent + timeout
        if case .acknowledged(let reason)? = probe.wait(until: deadline, for: { $0.isAck }), reason >= 0x80 {
            throw Failure(
                description: "the broker refused the publish to \(topic): "
                    + "\(String(cString: mosquitto_reason_string(reason))); check its ACL for this device")
        }
        guard probe.wait(until: deadline, for: { $0.carries(nonce) }) != nil else {
            throw Failure(
                description: "\(topic): published but not received back within \(timeout): the broker's ACL "
                    + "does not let this certificate write and read \(c.topicPrefix)/# (under MQTT 3.1.1 a broker "
                    + "acknowledges a denied publish, so only the round trip shows it)")
        }
        let ms = Int(((ContinuousClock.now - sent) / .milliseconds(1)).rounded())
        lines.append("broker: \(topic): published and received back in \(ms) ms; the ACL lets this door use its prefix")
        return lines
    }

    /// Callback events, handed from libmosquitto's thread to the caller.
    final class Probe: Sendable {
        enum Event {
            case connected(Int32), subscribed(Int32), acknowledged(Int32), message([UInt8])
            var isConnect: Bool { if case .connected = self { return true } else { return false } }
            var isSubscribe: Bool { if case .subscribed = self { return true } else { return false } }
            var isAck: Bool { if case .acknowledged = self { return true } else { return false } }
            func carries(_ payload: [UInt8]) -> Bool {
                if case .message(let bytes) = self { return bytes == payload } else { return false }
            }
        }
        private let events = Condition([Event]())
        /// OpenSSL's reason for a failed handshake (libmosquitto logs it).
        let tlsReason = Mutex<String?>(nil)

        static func from(_ pointer: UnsafeMutableRawPointer?) -> Probe {
            Unmanaged<Probe>.fromOpaque(pointer!).takeUnretainedValue()
        }

        func event(_ e: Event) {
            events.update { $0.append(e) }
        }

        /// The first event matching `match`, removed; nil at the deadline.
        func wait(until deadline: ContinuousClock.Instant, for match: (Event) -> Bool) -> Event? {
            let left = max(deadline - ContinuousClock.now, .zero)
            guard events.wait(for: left, until: { $0.contains(where: match) }) else { return nil }
            return events.update { list in list.firstIndex(where: match).map { list.remove(at: $0) } }
        }
    }
}
