/// What a restarted door keeps of the fire alarm (docs/policy.md "Fire
/// alarm"; issue 36's follow-up): an alarm not yet reset, and whether the
/// site's signal still holds it. Before, a gatewayd restarted during the
/// site's alarm (a watchdog, a crash, an upgrade) started locked while the
/// fire was still on.
///
/// The machine asks for it to be saved (`DoorEffect.saveFire`) each time it
/// changes, after the outputs moved: the release waits for no store. The
/// daemon hands a starting machine the saved one (`DoorSettings.restoreFire`).
/// The door's own input is not kept as a holder: the board reads it again at
/// start, so an alarm it held starts `cleared` (released, waiting for the
/// reset) and goes back to `alarm` if the input still reads so.
public struct FireLatch: Equatable, Hashable, Sendable {
    /// `.normal`: nothing to keep; `.alarm` or `.cleared`: an alarm not yet reset.
    public var state: FireState
    /// The site's signed signal holds the alarm (its clear is still needed).
    public var site: Bool

    public init(state: FireState = .normal, site: Bool = false) {
        self.state = state
        self.site = site && state == .alarm
    }

    public static let normal = FireLatch()

    /// A store that cannot say (the fail-safe side): a fire may be on, so the
    /// `release` outputs start released, waiting for an operator's reset; the
    /// site's clear is not waited for (nobody could tell whether it came).
    public static let unknown = FireLatch(state: .cleared)
}

extension DoorSettings {
    /// A starting machine takes the saved latch: released from its first
    /// effect on, in `alarm` while the site's signal holds, else `cleared`.
    public mutating func restoreFire(_ latch: FireLatch) {
        guard latch.state != .normal else { return }
        initialFire = latch.site ? .alarm : .cleared
        initialFireSources = latch.site ? ["site"] : []
    }
}

extension DoorMachine {
    /// What a restart must keep of the alarm now.
    public var fireLatch: FireLatch { FireLatch(state: fire, site: fireSources.contains("site")) }
}
