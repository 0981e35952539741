import DoorCore

/// A control request's `params` as the daemon's methods read them: typed, a
/// wrong type or a missing key refused with a `DaemonError.request` that names it.
extension Dictionary where Key == String, Value == JSONValue {
    package func string(_ key: String, default d: String? = nil) throws -> String {
        try value(key, default: d, "a string") { $0.stringValue }
    }
    package func int(_ key: String, default d: Int? = nil) throws -> Int {
        try value(key, default: d, "an integer") { $0.intValue }
    }
    /// The key's value as `read` takes it (else "KEY must be `what`"), or
    /// the default when it is absent (else "missing KEY").
    private func value<T>(_ key: String, default d: T?, _ what: String, _ read: (JSONValue) -> T?) throws -> T {
        if let v = self[key] {
            guard let t = read(v) else { throw DaemonError.request("\(key) must be \(what)") }
            return t
        }
        if let d { return d }
        throw DaemonError.request("missing \(key)")
    }
    package func double(_ key: String, default d: Double) throws -> Double {
        guard let v = self[key] else { return d }
        if let i = v.intValue { return Double(i) }
        if case .double(let x) = v { return x }
        throw DaemonError.request("\(key) must be a number")
    }
    package func bool(_ key: String) throws -> Bool {
        guard let v = self[key] else { return false }
        guard case .bool(let b) = v else { throw DaemonError.request("\(key) must be true or false") }
        return b
    }
}
