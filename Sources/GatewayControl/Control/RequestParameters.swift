import DoorCore

/// A control request's `params` as the daemon's methods read them: typed, a
/// wrong type or a missing key refused with a `DaemonError.request` that names it.
extension Dictionary where Key == String, Value == JSONValue {
    package func string(_ key: String, default d: String? = nil) throws -> String {
        if let v = self[key] {
            guard let s = v.stringValue else { throw DaemonError.request("\(key) must be a string") }
            return s
        }
        if let d { return d }
        throw DaemonError.request("missing \(key)")
    }
    package func int(_ key: String, default d: Int? = nil) throws -> Int {
        if let v = self[key] {
            guard let i = v.intValue else { throw DaemonError.request("\(key) must be an integer") }
            return i
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
