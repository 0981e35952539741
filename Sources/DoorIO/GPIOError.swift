#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Every libgpiod failure (DEVELOPERS.md "Conventions" §7): the C function and errno are kept;
/// the common cases get their own message.
public enum GPIOError: Error, Equatable, CustomStringConvertible {
    /// gpiod_chip_open_lookup found nothing by that name, path, label or number.
    case chipNotFound(spec: String, available: [String])
    /// gpiod_chip_find_line / gpiod_chip_get_line found no such line.
    case lineNotFound(chip: String, line: LineSpec)
    /// The request failed with EBUSY; `consumer` is gpiod_line_consumer's answer.
    case lineBusy(chip: String, line: LineSpec, consumer: String?)
    /// Any other failing call.
    case call(function: String, errno: Int32, subject: String)

    public var description: String {
        switch self {
        case .chipNotFound(let spec, let available):
            let list = available.isEmpty ? "no GPIO chips are present" : "present: " + available.joined(separator: ", ")
            return "GPIO chip '\(spec)' not found (by name, /dev path, label or number); \(list)"
        case .lineNotFound(let chip, let line):
            return "GPIO line '\(line)' not found on chip \(chip)"
        case .lineBusy(let chip, let line, let consumer):
            let who = consumer.map { "'\($0)'" } ?? "another process"
            return "GPIO line '\(line)' on chip \(chip) is busy: already requested by \(who)"
        case .call(let function, let code, let subject):
            return "\(function) failed for \(subject): \(String(cString: strerror(code))) (errno \(code))"
        }
    }
}

/// Run a libgpiod call that returns -1 and sets errno on failure, retrying
/// EINTR. Returns the result, or throws `.call` unless `handle` maps the errno.
@discardableResult
func gpiodCall(
    _ function: String, _ subject: @autoclosure () -> String,
    handle: (Int32) -> GPIOError? = { _ in nil },
    _ body: () -> Int32
) throws -> Int32 {
    while true {
        let r = body()
        if r >= 0 { return r }
        let code = errno
        if code == EINTR { continue }
        throw handle(code) ?? .call(function: function, errno: code, subject: subject())
    }
}
