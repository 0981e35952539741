// swift-tools-version:6.0
import PackageDescription

// One system-library target per C library (DEVELOPERS.md "Conventions" §5), a pure core, and
// adapters at the edge. See DEVELOPERS.md "Layout" for where each piece lives.
let package = Package(
    name: "DoorGateway",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "gateway", targets: ["gateway"]),
        .executable(name: "pn532-sim", targets: ["pn532-sim"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2")
    ],
    targets: [
        // MARK: C libraries
        .systemLibrary(
            name: "COpenSSL", pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(
            name: "CNFC", pkgConfig: "libnfc",
            providers: [.apt(["libnfc-dev", "libusb-dev"])]),
        .systemLibrary(
            name: "CGPIOD", pkgConfig: "libgpiod",
            providers: [.apt(["libgpiod-dev"])]),
        .systemLibrary(
            name: "CMosquitto", pkgConfig: "libmosquitto",
            providers: [.apt(["libmosquitto-dev"])]),
        .systemLibrary(
            name: "CNATS", pkgConfig: "libnats",
            providers: [.apt(["libnats-dev"])]),
        .systemLibrary(
            name: "CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "CQRencode", pkgConfig: "libqrencode",
            providers: [.apt(["libqrencode-dev"])]),

        // MARK: Pure core: tag formats, crypto wrapper, verdicts, state machine, config model
        .target(name: "DoorCore", dependencies: ["COpenSSL"]),
        // MARK: OSDP v2.2 control panel (issue 35): framing, messages, Secure Channel, the CP state machine;
        // pure (bytes and time in, bytes and events out), AES through DoorCore's Crypto; gatewayd's OSDPReaders drives it.
        .target(name: "OSDP", dependencies: ["DoorCore"]),
        // MARK: Configuration file (TOML) loading and the example file
        .target(
            name: "GatewayConfig",
            dependencies: ["DoorCore"]),
        // MARK: The store (SQLite's C API through a small wrapper, GatewayStore/SQLite.swift)
        .target(name: "GatewayStore", dependencies: ["DoorCore", "CSQLite"]),
        // MARK: Adapters: the only code that touches libnfc / libgpiod
        .target(
            name: "NFCReader",
            dependencies: [
                "DoorCore", "CNFC",
            ]),
        // MARK: MQTT adapter: the only code that touches libmosquitto. A transport: the
        // daemon gives it settings, an outbox and a command handler; decisions are DoorCore's.
        // The remote link core both transports compose: their threads, the outbox round, status
        // counters and error notes, kept documents, and the transport-neutral payloads (events, telemetry).
        .target(
            name: "RemoteLink", dependencies: ["DoorCore", .product(name: "Logging", package: "swift-log")]),
        // `*.local` broker names by a one-shot multicast DNS query (the static binary's NSS does
        // not do mDNS), and a TLS context that checks the broker's name while connecting by address.
        .target(name: "MulticastDNS"),
        .target(name: "CBrokerTLS", linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]),
        .target(
            name: "GatewayMQTT",
            dependencies: [
                "DoorCore", "CMosquitto", "RemoteLink", "MulticastDNS", "CBrokerTLS",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // MARK: NATS adapter: the only code that touches libnats; a transport like GatewayMQTT
        // (the same DoorCore ports), chosen by `[remote] transport`.
        .target(
            name: "GatewayNATS",
            dependencies: [
                "DoorCore", "CNATS", "COpenSSL", "RemoteLink", "MulticastDNS",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // Async-signal-safe relay lock on fatal signals (C: sigaction + libgpiod).
        .target(name: "CDoorSafety", dependencies: ["CGPIOD"]),
        // adjtimex(2), read-only: whether the wall clock is synchronised.
        .target(name: "CClockSync"),
        // glibc's NSS pinned to the sources built into the static binary (C: __nss_configure_lookup).
        .target(name: "CStaticNSS"),
        // glibc's malloc arenas, one for all of gatewayd's threads (C: mallopt M_ARENA_MAX).
        .target(name: "CMallocArenas"),
        // Share links and keys as QR codes in the terminal (libqrencode).
        .target(name: "TerminalQR", dependencies: ["CQRencode"]),
        .target(
            name: "DoorIO",
            dependencies: [
                "DoorCore", "CGPIOD", "CDoorSafety",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // MARK: PN532 + NTAG21x emulator (library, and the pn532-sim executable)
        .target(name: "PN532Emulator", dependencies: ["DoorCore"]),
        // posix_openpt & co. for the emulator's pseudo-terminal (C: _XOPEN_SOURCE).
        .target(name: "CPseudoTerminal"),
        .executableTarget(
            name: "pn532-sim",
            dependencies: [
                "PN532Emulator", "DoorCore", "CPseudoTerminal",
                "Arguments",
            ]),
        // MARK: gatewayctl / gatewayd command tree
        // The command-line parser: swift-argument-parser's API subset, without Foundation.
        .target(name: "Arguments"),
        // The control socket's protocol (requests, answers, accounts, sd_notify) and the plumbing both
        // sides share (files, threads, time zones, the audit key file, policy explanations).
        .target(
            name: "GatewayControl",
            dependencies: [
                "DoorCore", "GatewayConfig", "GatewayStore", "Arguments",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The configuration as the transports take it: [mqtt] → MQTTSettings and its login, secret
        // files, the broker check (gatewayd and gatewayctl's config check --broker).
        .target(name: "RemoteSettings", dependencies: ["GatewayConfig", "GatewayMQTT"]),
        // gatewayd: the door's runtime, reader loop, transports' wiring, control methods.
        .target(
            name: "GatewayDaemon",
            dependencies: [
                "GatewayControl", "DoorCore", "GatewayConfig", "GatewayStore", "NFCReader", "DoorIO", "GatewayMQTT",
                "GatewayNATS", "RemoteLink", "RemoteSettings", "TerminalQR", "CClockSync", "CMallocArenas", "Arguments",
                "OSDP",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // gatewayctl: the admin commands; never the daemon's target (what both need is in
        // GatewayControl and RemoteSettings).
        .target(
            name: "GatewayCtl",
            dependencies: [
                "GatewayControl", "DoorCore", "GatewayConfig", "GatewayStore", "NFCReader", "DoorIO",
                "GatewayMQTT", "GatewayNATS", "RemoteSettings", "TerminalQR", "Arguments",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The multi-call entry: the name it runs as picks gatewayd or gatewayctl.
        .target(name: "GatewayCLI", dependencies: ["GatewayDaemon", "GatewayCtl", "GatewayControl", "Arguments"]),
        .executableTarget(name: "gateway", dependencies: ["GatewayCLI", "CStaticNSS"]),
        // MARK: Benchmarks (make bench)
        .executableTarget(
            name: "reader-bench", dependencies: ["NFCReader", "DoorCore"], path: "Benchmarks/ReaderBench"),
        .executableTarget(
            name: "mqtt-bench",
            dependencies: [
                "GatewayMQTT", "RemoteLink", "GatewayStore", "DoorCore",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/MQTTBench"),

        // MARK: Fuzzing (make fuzz, scripts/fuzz.sh): one libFuzzer entry for every parser fed with
        // outside bytes; in a normal build the same executable replays corpus files (FuzzCorpusTests).
        // The reader target answers NFCReader's libnfc calls itself (CFuzzLibnfc), so nothing else links it.
        .target(name: "CFuzzLibnfc"),
        .executableTarget(
            name: "fuzz-targets",
            dependencies: [
                "DoorCore", "GatewayConfig", "GatewayStore", "NFCReader", "GatewayMQTT", "GatewayNATS",
                "GatewayControl", "CFuzzLibnfc", "CNFC", "MulticastDNS", "OSDP",
                .product(name: "Logging", package: "swift-log"),
            ]),

        // MARK: Tests
        .target(
            name: "TestSupport", dependencies: ["DoorCore", .product(name: "Logging", package: "swift-log")],
            path: "Tests/TestSupport"),
        .testTarget(name: "DoorCoreTests", dependencies: ["DoorCore", "TestSupport"]),
        .testTarget(name: "OSDPTests", dependencies: ["OSDP", "DoorCore", "TestSupport"]),
        .testTarget(name: "GatewayConfigTests", dependencies: ["GatewayConfig", "TestSupport"]),
        .testTarget(
            name: "GatewayStoreTests", dependencies: ["GatewayStore", "TestSupport"], exclude: ["Fixtures"]),
        .testTarget(name: "NFCReaderTests", dependencies: ["NFCReader", "PN532Emulator", "TestSupport"]),
        .testTarget(name: "DoorIOTests", dependencies: ["DoorIO", "TestSupport"]),
        .testTarget(name: "PN532EmulatorTests", dependencies: ["PN532Emulator", "TestSupport"]),
        .testTarget(
            name: "GatewayMQTTTests",
            dependencies: [
                "GatewayMQTT", "RemoteLink", "GatewayConfig", "GatewayDaemon", "GatewayStore", "TestSupport",
            ]),
        .testTarget(
            name: "GatewayNATSTests", dependencies: ["GatewayNATS", "RemoteLink", "GatewayConfig", "TestSupport"]),
        .testTarget(name: "TerminalQRTests", dependencies: ["TerminalQR", "CQRencode"]),
        .testTarget(name: "EndToEndTests", dependencies: ["DoorCore", "GatewayStore", "NFCReader", "TestSupport"]),
        .testTarget(
            name: "GatewayCLITests",
            dependencies: ["GatewayCLI", "GatewayDaemon", "GatewayCtl", "GatewayControl", "TestSupport", "OSDP"]),
        .testTarget(name: "ArgumentsTests", dependencies: ["Arguments"]),
        .testTarget(name: "MulticastDNSTests", dependencies: ["MulticastDNS"]),
        .testTarget(
            name: "RemoteLinkTests",
            dependencies: ["RemoteLink", "TestSupport", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "FuzzCorpusTests", dependencies: ["TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
