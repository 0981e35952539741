import DoorCore

/// The control panel (CP) for one reader on the bus, as a pure state machine: bytes and
/// time go in (`start`, `received`, `tick`), bytes to write and events come out. It owns
/// no file descriptor and reads no clock; the serial adapter does both.
///
/// The life of a link: osdp_ID → osdp_CAP → (unless the configuration names the reader
/// insecure) osdp_CHLNG/osdp_SCRYPT → online, polling every `pollInterval` with any queued
/// LED/buzzer command sent in place of the next poll (`pollInterval` from one command's send to the next's). A reply late by `replyTimeout` is asked
/// for again (same bytes, same sequence number) `retries` times, then the reader is offline:
/// reported once, and the link restarts from sequence 0 every `reconnectInterval`.
///
/// Secure Channel is enforced: a reader without it is refused (unless `.insecure`), a wrong
/// key, a bad or replayed MAC, a plaintext reply inside the session (a downgrade) all end the
/// session with a `.refused` event, and the link starts over; nothing a refused frame says
/// (a card, a key) is reported.
public struct ControlPanel: Sendable {
    public enum Security: Sendable, Equatable {
        /// Secure Channel with this reader's SCBK (16 bytes), required.
        case required(scbk: [UInt8])
        /// Install mode: Secure Channel with SCBK-D (the CP asks for it with SCB data 0x00).
        case install
        /// No Secure Channel: the configuration names this reader insecure explicitly.
        case insecure
    }

    public struct Configuration: Sendable {
        public var address: UInt8
        public var security: Security
        public var usesCRC = true
        /// Send the 0xFF mark byte before each packet (OSDP 2.2; libosdp's CP does).
        public var mark = true
        public var pollInterval: UInt64 = 50
        public var replyTimeout: UInt64 = 200
        public var retries = 2
        public var reconnectInterval: UInt64 = 1000
        public init(address: UInt8, security: Security) {
            self.address = address
            self.security = security
        }
    }

    public enum Refusal: Equatable, Sendable {
        /// The reader does not offer Secure Channel and is not named insecure.
        case noSecureChannel
        /// The reader's cryptogram does not match our key.
        case wrongKey
        case secureChannel(SecureChannelError)
        /// The reader answered a handshake command with something else (code), or a NAK.
        case handshake(code: UInt8)
    }

    public enum Event: Equatable, Sendable {
        case online(identity: DeviceIdentity, capabilities: [Capability], secure: Bool)
        case offline
        case refused(Refusal)
        case card(CardRead)
        case cardFormatted(reader: UInt8, characters: [UInt8])
        case keypad(reader: UInt8, keys: [UInt8])
        case localStatus(tamper: UInt8, power: UInt8)
        /// The reader acknowledged osdp_KEYSET inside the secure session: it holds the new key.
        case keysetAccepted
        /// The reader refused a command (NAK code).
        case nak(command: UInt8, code: UInt8)
        /// A packet that was not a frame, or not ours (dropped, counted).
        case malformed(FrameError)
        case badReply(MessageError)
    }

    public struct Output: Sendable, Equatable {
        public var send: [UInt8]?
        public var events: [Event] = []
    }

    enum Phase: Equatable {
        case idle, identify, capabilities, challenge, serverCryptogram, online, waiting
    }

    struct InFlight {
        var command: Command
        var bytes: [UInt8]
        var sentAt: UInt64
        var attempts: Int
    }

    public let configuration: Configuration
    private let random: @Sendable (Int) throws -> [UInt8]
    var phase = Phase.idle
    var sequence: UInt8 = 0
    var inFlight: InFlight?
    var nextSendAt: UInt64 = 0
    var queue: [Command] = []
    /// A command the reader answered osdp_BUSY to, sent again first.
    var retry: Command?
    var assembler = FrameAssembler()
    var session: SecureSession?
    var identity: DeviceIdentity?
    var capabilities: [Capability] = []
    var cpRandom: [UInt8] = []
    var pendingKeys: SecureChannel.SessionKeys?
    var serverCryptogram: [UInt8] = []
    public private(set) var isOnline = false
    var reportedOffline = false

    public init(
        _ configuration: Configuration,
        random: @escaping @Sendable (Int) throws -> [UInt8] = { try Crypto.randomBytes($0) }
    ) {
        self.configuration = configuration
        self.random = random
    }

    /// Whether a secure session is up (false while insecure or handshaking).
    public var isSecure: Bool { session != nil }

    /// Whether a command is on the line, its reply not in yet: on a shared bus nobody else
    /// may send until it is answered or timed out (one command at a time, half duplex).
    public var isAwaitingReply: Bool { inFlight != nil }

    /// Queues an LED, buzzer or other command for the next poll slot (online only).
    public mutating func enqueue(_ command: Command) { queue.append(command) }

    public mutating func start(now: UInt64) -> Output {
        restart(now: now)
        return tick(now: now)
    }

    /// When the caller should call `tick` again at the latest.
    public var nextDeadline: UInt64 {
        if let inFlight { return inFlight.sentAt + configuration.replyTimeout }
        return nextSendAt
    }

    public mutating func tick(now: UInt64) -> Output {
        var out = Output()
        if var flight = inFlight {
            guard now >= flight.sentAt + configuration.replyTimeout else { return out }
            if flight.attempts <= configuration.retries {
                flight.attempts += 1
                flight.sentAt = now
                inFlight = flight
                assembler.reset()
                out.send = wire(flight.bytes)
                return out
            }
            inFlight = nil
            goOffline(now: now, into: &out)
            return out
        }
        guard phase != .idle, now >= nextSendAt else { return out }
        if phase == .waiting { restart(now: now) }
        send(nextCommand(), now: now, into: &out)
        return out
    }

    public mutating func received<C: Collection>(_ bytes: C, now: UInt64) -> Output where C.Element == UInt8 {
        var out = Output()
        assembler.append(bytes)
        while let packet = assembler.next() {
            handle(packet, now: now, into: &out)
        }
        return out
    }

    // MARK: - The link

    mutating func restart(now: UInt64) {
        phase = .identify
        sequence = 0
        session = nil
        pendingKeys = nil
        inFlight = nil
        retry = nil
        assembler.reset()
        nextSendAt = now
    }

    mutating func goOffline(now: UInt64, into out: inout Output) {
        endLink(now: now, reportOffline: isOnline || !reportedOffline, into: &out)
    }

    /// A refusal ends the session and the link; it starts over after `reconnectInterval`.
    mutating func refuse(_ refusal: Refusal, now: UInt64, into out: inout Output) {
        out.events.append(.refused(refusal))
        inFlight = nil
        endLink(now: now, reportOffline: isOnline, into: &out)
    }

    /// Ends the link and its session (`.offline` first when `reportOffline`);
    /// it starts over after `reconnectInterval`.
    mutating func endLink(now: UInt64, reportOffline: Bool, into out: inout Output) {
        if reportOffline { out.events.append(.offline) }
        isOnline = false
        reportedOffline = true
        session = nil
        pendingKeys = nil
        phase = .waiting
        nextSendAt = now + configuration.reconnectInterval
    }

    mutating func nextCommand() -> Command {
        if let command = retry {
            retry = nil
            return command
        }
        switch phase {
        case .identify: return .id
        case .capabilities: return .capabilities
        case .challenge:
            cpRandom = (try? random(8)) ?? []
            return .challenge(random: cpRandom)
        case .serverCryptogram: return .serverCryptogram(serverCryptogram)
        case .online, .idle, .waiting:
            return queue.isEmpty ? .poll : queue.removeFirst()
        }
    }

    var keyIndicator: UInt8 { configuration.security == .install ? 0x00 : 0x01 }

    mutating func send(_ command: Command, now: UInt64, into out: inout Output) {
        let bytes: [UInt8]
        do {
            if var current = session {
                bytes = try current.seal(
                    address: configuration.address, sequence: sequence, usesCRC: configuration.usesCRC, command: command
                )
                session = current
            } else {
                var block: SecurityBlock?
                if case .challenge = command { block = SecurityBlock(.scs11, data: [keyIndicator]) }
                if case .serverCryptogram = command { block = SecurityBlock(.scs13, data: [keyIndicator]) }
                bytes = try Frame(
                    address: configuration.address, isReply: false, sequence: sequence, usesCRC: configuration.usesCRC,
                    securityBlock: block, code: command.code, data: command.payload
                ).encoded()
            }
        } catch {
            // Only a random source or crypto failure gets here: start over later.
            refuse(.handshake(code: command.code), now: now, into: &out)
            return
        }
        inFlight = InFlight(command: command, bytes: bytes, sentAt: now, attempts: 1)
        out.send = wire(bytes)
    }

    func wire(_ bytes: [UInt8]) -> [UInt8] { configuration.mark ? [OSDP.mark] + bytes : bytes }

    mutating func handle(_ packet: [UInt8], now: UInt64, into out: inout Output) {
        let frame: Frame
        do { frame = try Frame.parse(packet) } catch let error as FrameError {
            out.events.append(.malformed(error))
            return
        } catch { return }
        // Our own command echoed on a half-duplex line, another reader's reply, or one
        // nobody asked for: not ours.
        guard frame.isReply else { return }
        // Another reader's reply on a shared bus: not ours, not an error.
        guard frame.address == configuration.address else { return }
        guard let flight = inFlight else {
            out.events.append(.malformed(.badSequence(frame.sequence)))
            return
        }
        // osdp_BUSY (plain, sequence 0 or ours, no data): ask again after a poll interval with the
        // same sequence number. It carries nothing, so taking it in plain text grants nothing.
        if frame.code == 0x79, frame.data.isEmpty, frame.securityBlock == nil,
            frame.sequence == 0 || frame.sequence == sequence
        {
            inFlight = nil
            retry = flight.command
            nextSendAt = now + configuration.pollInterval
            return
        }
        guard frame.sequence == sequence else {
            out.events.append(.malformed(.badSequence(frame.sequence)))
            return
        }
        var code = frame.code
        var data = frame.data
        if var current = session {
            do {
                (code, data) = try current.open(frame)
                session = current
            } catch let error as SecureChannelError {
                refuse(.secureChannel(error), now: now, into: &out)
                return
            } catch { return }
        } else if let block = frame.securityBlock, block.kind.hasMAC {
            // A MAC'd reply with no session: nothing to check it with.
            refuse(.secureChannel(.unexpectedSecurityBlock(block.kind.rawValue)), now: now, into: &out)
            return
        }
        let reply: Reply
        do { reply = try Reply.decode(code: code, data: data) } catch let error as MessageError {
            out.events.append(.badReply(error))
            return
        } catch { return }
        inFlight = nil
        if reply == .busy {
            // osdp_BUSY inside the session (MAC'd): the same command again, same sequence number.
            retry = flight.command
            nextSendAt = now + configuration.pollInterval
            return
        }
        sequence = sequence >= 3 ? 1 : sequence + 1
        // A poll period, not a pause after each reply: the next command `pollInterval` after this
        // one was sent (at once if its reply took longer). A pause after the reply made the cycle
        // pollInterval + the round trip (at 9600 baud with Secure Channel ~40 ms more), and a card
        // waited for it (make bench, docs/reliability.md "OSDP card to relay").
        nextSendAt = max(now, flight.sentAt + configuration.pollInterval)
        advance(flight.command, reply, frame: frame, now: now, into: &out)
    }

    mutating func advance(_ command: Command, _ reply: Reply, frame: Frame, now: UInt64, into out: inout Output) {
        switch (phase, reply) {
        case (.identify, .identity(let id)):
            identity = id
            phase = .capabilities
        case (.capabilities, .capabilities(let caps)):
            capabilities = caps
            let secureCapable = caps.contains {
                $0.function == Capability.communicationSecurity && $0.compliance & 0x01 != 0
            }
            if configuration.security == .insecure {
                comeOnline(secure: false, into: &out)
            } else if !secureCapable {
                refuse(.noSecureChannel, now: now, into: &out)
            } else {
                phase = .challenge
            }
        case (.challenge, .clientCryptogram(_, let pdRandom, let cryptogram)):
            guard frame.securityBlock?.kind == .scs12 else {
                refuse(.handshake(code: frame.code), now: now, into: &out)
                return
            }
            let scbk: [UInt8]
            switch configuration.security {
            case .required(let key): scbk = key
            case .install, .insecure: scbk = SecureChannel.defaultKey
            }
            do {
                let keys = try SecureChannel.sessionKeys(scbk: scbk, cpRandom: cpRandom)
                let expected = try SecureChannel.clientCryptogram(keys, cpRandom: cpRandom, pdRandom: pdRandom)
                guard Crypto.constantTimeEqual(expected, cryptogram) else {
                    refuse(.wrongKey, now: now, into: &out)
                    return
                }
                pendingKeys = keys
                serverCryptogram = try SecureChannel.serverCryptogram(keys, cpRandom: cpRandom, pdRandom: pdRandom)
                phase = .serverCryptogram
            } catch let error as SecureChannelError {
                refuse(.secureChannel(error), now: now, into: &out)
            } catch {
                refuse(.handshake(code: frame.code), now: now, into: &out)
            }
        case (.serverCryptogram, .initialRMAC(let rmac)):
            guard let keys = pendingKeys, let block = frame.securityBlock, block.kind == .scs14 else {
                refuse(.handshake(code: frame.code), now: now, into: &out)
                return
            }
            guard block.data == [0x01] else {
                refuse(.secureChannel(.refusedByDevice), now: now, into: &out)
                return
            }
            guard let expected = try? SecureChannel.initialRMAC(keys, serverCryptogram: serverCryptogram),
                Crypto.constantTimeEqual(expected, rmac)
            else {
                refuse(.secureChannel(.initialRMACMismatch), now: now, into: &out)
                return
            }
            session = SecureSession(keys: keys, initialRMAC: rmac)
            pendingKeys = nil
            comeOnline(secure: true, into: &out)
        case (.online, _):
            report(command, reply, into: &out)
        default:
            // A handshake step answered with anything else (a NAK included).
            refuse(.handshake(code: frame.code), now: now, into: &out)
        }
    }

    mutating func comeOnline(secure: Bool, into out: inout Output) {
        phase = .online
        // The reader's tamper and power state once at the start; later changes come as
        // osdp_LSTATR in answer to a poll.
        queue.insert(.localStatus, at: 0)
        isOnline = true
        reportedOffline = false
        if let identity {
            out.events.append(.online(identity: identity, capabilities: capabilities, secure: secure))
        }
    }

    func report(_ command: Command, _ reply: Reply, into out: inout Output) {
        switch reply {
        case .cardRaw(let card): out.events.append(.card(card))
        case .cardFormatted(let reader, _, let characters):
            out.events.append(.cardFormatted(reader: reader, characters: characters))
        case .keypad(let reader, let keys): out.events.append(.keypad(reader: reader, keys: keys))
        case .localStatus(let tamper, let power): out.events.append(.localStatus(tamper: tamper, power: power))
        case .nak(let code, _): out.events.append(.nak(command: command.code, code: code))
        case .ack where command.code == Command.keyset(key: []).code: out.events.append(.keysetAccepted)
        default: break
        }
    }
}

// Keys never reach a log line through string interpolation or a test's failure message.
extension ControlPanel.Security: CustomStringConvertible, CustomDebugStringConvertible {
    public var description: String {
        switch self {
        case .required(let scbk): return "required(scbk: <\(scbk.count) bytes>)"
        case .install: return "install"
        case .insecure: return "insecure"
        }
    }
    public var debugDescription: String { description }
}
