import DoorCore
import GatewayControl
import Glibc
import Logging
import Synchronization

/// First person in (DoorCore `FirstPersonIn`, docs/policy.md "First person
/// in"), as the door runtime keeps it: the window a grant opened, persisted
/// in the state directory (`first-person-in`, the window's end as a decimal
/// Unix time) so a restart or a reboot inside an opened window comes back in
/// passage. A file that cannot be read is no opened window (locked: fail
/// closed); one that cannot be written is logged and the door goes on, in
/// passage until the window ends or the next restart.
final class FirstPersonInKeeper: Sendable {
    private let value: Mutex<FirstPersonIn>
    let path: String
    private let log: Logger

    init(stateDirectory: String, log: Logger) {
        path = stateDirectory + "/first-person-in"
        self.log = log
        let text = Files.contents(path).map { String(decoding: $0, as: UTF8.self) } ?? ""
        value = Mutex(FirstPersonIn(persisted: text))
    }

    /// Whether `schedule`, the passage schedule, holds passage now.
    func passage(_ schedule: WeeklySchedule, active: Bool, windowEnd: Int64?) -> Bool {
        value.withLock { $0.passage(active: active, windowEnd: windowEnd, required: schedule.firstPersonIn) }
    }

    /// A valid grant: with `schedule` first-person-in and inside a window,
    /// the window opens (persisted). True when it was not open yet.
    func granted(_ schedule: WeeklySchedule, active: Bool, windowEnd: Int64?) -> Bool {
        guard schedule.firstPersonIn else { return false }
        let (changed, text) = value.withLock { v in
            (v.granted(active: active, windowEnd: windowEnd), v.persisted)
        }
        guard changed else { return false }
        let temporary = path + ".new"
        do {
            try Files.write(temporary, Array(text.utf8), mode: 0o600)
            guard rename(temporary, path) == 0 else {
                throw Files.Failure(operation: "rename", path: path, errno: errno)
            }
        } catch {
            log.error(
                "first person in: the opened window is not saved (a restart relocks until the next grant): \(error)")
        }
        return true
    }
}
