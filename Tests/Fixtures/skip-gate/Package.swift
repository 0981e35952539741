// swift-tools-version:6.0
// The skip gate's fixture (scripts/check-skip-gate.sh, run by `make test`): one
// test that passes and one of each kind that skips, XCTest and Swift Testing.
import PackageDescription

let package = Package(
    name: "SkipGate",
    targets: [.testTarget(name: "SkipGateTests")]
)
