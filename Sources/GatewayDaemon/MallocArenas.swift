import CMallocArenas

/// gatewayd's threads share one malloc arena (glibc's `M_ARENA_MAX` = 1), set before
/// any thread but the main one allocates. By default glibc gives each thread that
/// meets a busy arena its own, up to 8 per core: the door's reader, door queue,
/// audit writer, control and Dispatch worker threads held 9 arenas, 2.4 MB of heap
/// for 1.6 MB in use, and each arena keeps its own free pages. The door's threads
/// allocate little and seldom at once, so one lock costs nothing measurable here, and
/// the anonymous memory after 1 500 taps is 0.2 MB less (docs/reliability.md, "RSS at
/// 10 000 taps").
enum MallocArenas {
    /// Whether glibc took the setting.
    @discardableResult
    static func limitToOne() -> Bool { door_malloc_arena_max(1) == 1 }
}
