#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import CDoorSafety
import DoorCore

/// Relay safety beyond the normal paths (docs/design.md: every exit path drives
/// outputs to their locked level).
public enum RelaySafety {
    /// Install the async-signal-safe handler (CDoorSafety, sigaction on an
    /// alternate stack) for SIGABRT, SIGSEGV, SIGBUS, SIGILL and SIGTRAP:
    /// Swift runtime traps arrive as SIGILL on x86_64 and SIGTRAP on arm64,
    /// and libnfc 1.8.0 calls abort() on some malformed chip answers. The
    /// handler drives every requested output line (relays and indicators,
    /// registered by `GPIOBoard`) to its safe value, then the process dies
    /// with the signal. Call early, on the main thread (its alternate stack
    /// is the calling thread's).
    public static func installCrashHandler() throws {
        let code = door_safety_install()
        if code != 0 { throw GPIOError.call(function: "sigaction", errno: code, subject: "fatal-signal handler") }
    }

    /// The warning for a kernel that keeps a released output at its last
    /// level, or nil. Raspberry Pi kernels have a `persist_gpio_outputs`
    /// parameter on their GPIO drivers (pinctrl-bcm2835, pinctrl-rp1,
    /// gpio-brcmstb), on by default; `dtparam=strict_gpiod` in config.txt
    /// turns it off so a released line returns to an input with its pull.
    /// With it on, a gateway killed without cleanup (SIGKILL, the OOM killer,
    /// power to the CPU only) leaves the relay as it was until restart.
    ///
    /// - Parameters:
    ///   - model: the device tree's model (/sys/firmware/devicetree/base/model), nil when absent.
    ///   - parameters: each /sys/module/*/parameters/persist_gpio_outputs
    ///     file, by module name, with its contents (`Y`/`N`).
    public static func persistWarning(model: String?, parameters: [String: String]) -> String? {
        guard let model, model.includes("Raspberry Pi") else { return nil }
        let persisting = parameters.filter { ["Y", "1"].contains($0.value.trimmingWhitespace) }.keys.sorted()
        guard !persisting.isEmpty else { return nil }
        return "this Raspberry Pi kernel keeps released GPIO outputs at their last level (persist_gpio_outputs=Y in "
            + persisting.joined(separator: ", ")
            + "): if the gateway is killed without cleanup a relay stays as it was until restart; add dtparam=strict_gpiod to config.txt"
    }

    /// `persistWarning(model:parameters:)` for this machine.
    public static func persistWarning() -> String? {
        // /proc/device-tree is a symlink to this; the service runs with ProcSubset=pid,
        // which hides it.
        let model = readSmallFile("/sys/firmware/devicetree/base/model").map { String($0.prefix { $0 != "\0" }) }
        var parameters: [String: String] = [:]
        var found = glob_t()
        defer { globfree(&found) }
        if glob("/sys/module/*/parameters/persist_gpio_outputs", 0, nil, &found) == 0 {
            for i in 0..<Int(found.gl_pathc) {
                guard let cPath = found.gl_pathv[i] else { continue }
                let path = String(cString: cPath)
                let module = path.split(separator: "/").dropFirst(2).first.map(String.init) ?? path
                parameters[module] = readSmallFile(path)
            }
        }
        return persistWarning(model: model, parameters: parameters)
    }

    static func readSmallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var n: Int
        repeat { n = read(fd, &buffer, buffer.count) } while n < 0 && errno == EINTR
        return n < 0 ? nil : String(decoding: buffer[0..<n], as: UTF8.self)
    }
}

extension String {
    var trimmingWhitespace: String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
