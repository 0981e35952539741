import DoorCore
import GatewayStore
import Glibc

/// The audit key (docs/security.md "L4"): at least 32 raw bytes in a file
/// only root reads, `/etc/doorgateway/audit.key` (the package makes it with
/// `head -c 32 /dev/urandom`, root:root 0400).
///
/// gatewayd takes it from `DOORGATEWAY_AUDIT_KEY`:
/// - `stdin`: standard input, which systemd opens as root before it drops to
///   the `doorgateway` user (`StandardInput=file:/etc/doorgateway/audit.key`
///   in the unit). It is read once, then `/dev/null` replaces fd 0, so the
///   daemon keeps no way back to the file (its user cannot open it);
/// - an absolute path: that file (tests and runs by hand);
/// - unset or empty: no key; the log is chained unkeyed, and gatewayd says so.
///
/// `gatewayctl log --verify` reads the file itself (as root).
package enum AuditKeyFile {
    package static let defaultPath = "/etc/doorgateway/audit.key"
    package static let variable = "DOORGATEWAY_AUDIT_KEY"
    /// More is not a key file (a wrong StandardInput=, a log file).
    static let maximumLength = 4096

    package struct Problem: Error, CustomStringConvertible {
        package let description: String
    }

    /// The key gatewayd was given, nil when none was asked for.
    package static func forDaemon(environment: [String: String]) throws(Problem) -> [UInt8]? {
        guard let source = environment[variable], !source.isEmpty else { return nil }
        if source == "stdin" {
            var info = stat()
            guard fstat(0, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
                throw Problem(
                    description:
                        "\(variable)=stdin, but standard input is not a file (the unit's StandardInput=file:\(defaultPath))"
                )
            }
            let bytes = FD.readToEnd(0)
            // Drop the only handle on the root-only file.
            let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
            if null >= 0 {
                dup2(null, 0)
                close(null)
            } else {
                close(0)
            }
            return try check(bytes, from: "standard input")
        }
        guard source.hasPrefix("/") else {
            throw Problem(description: "\(variable) is \"stdin\" or an absolute path")
        }
        return try read(source)
    }

    /// The key in `path`.
    package static func read(_ path: String) throws(Problem) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw Problem(description: "cannot read the audit key \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        return try check(FD.readToEnd(fd), from: path)
    }

    private static func check(_ bytes: [UInt8]?, from source: String) throws(Problem) -> [UInt8] {
        guard let bytes else { throw Problem(description: "cannot read the audit key from \(source)") }
        guard bytes.count >= GatewayStore.auditKeyLength, bytes.count <= maximumLength else {
            throw Problem(
                description:
                    "the audit key from \(source) is \(bytes.count) bytes; it must be \(GatewayStore.auditKeyLength) to \(maximumLength) (head -c 32 /dev/urandom)"
            )
        }
        return bytes
    }

    /// Overwrites a key the process no longer needs (best effort: Swift may
    /// have copied it on the way).
    package static func wipe(_ key: inout [UInt8]) {
        key.withUnsafeMutableBytes { raw in
            if let base = raw.baseAddress { memset(base, 0, raw.count) }
        }
        key = []
    }
}

/// `log --verify`'s answer, from the daemon (links only) or from gatewayctl
/// with the key (every MAC): what was checked and how.
package enum AuditReport {
    package static func json(_ check: AuditCheck, keyFile: String?) -> JSONValue {
        var fields: [(String, JSONValue)] = []
        switch check.verification {
        case .intact(let rows, let from):
            fields += [("intact", .bool(true)), ("rows", .int(rows)), ("first", from.map { .int(Int($0)) } ?? .null)]
        case .broken(let id, let why):
            fields += [("intact", .bool(false)), ("row", .int(Int(id))), ("why", .string(why))]
        }
        fields.append(("keyed_from", check.keyedFrom.map { .int(Int($0)) } ?? .null))
        if let f = check.keyFingerprint { fields.append(("key_fingerprint", .string(f))) }
        fields.append(("macs_checked", .bool(check.macsChecked)))
        if let id = check.headID, let hash = check.headHash {
            fields += [("head_row", .int(Int(id))), ("head_hash", .string(Hex.encode(hash)))]
        }
        fields.append(("how", .string(how(check, keyFile: keyFile))))
        return .object(fields)
    }

    static func how(_ check: AuditCheck, keyFile: String?) -> String {
        var parts: [String] = []
        if let from = check.keyedFrom {
            // Only when such rows are left (retention may have trimmed them all).
            var firstRow: Int64 = 1
            if case .intact(_, let first?) = check.verification { firstRow = first }
            if from > firstRow {
                parts.append("rows before \(from): unkeyed SHA-256 links (written before the audit key)")
            }
            if check.macsChecked {
                parts.append(
                    "rows from \(from): HMAC-SHA256 under the ratcheted audit key"
                        + (keyFile.map { " from \($0)" } ?? "") + " (fingerprint \(check.keyFingerprint ?? "?"))")
            } else {
                parts.append(
                    "rows from \(from): links only, their MACs NOT checked (they need the audit key: run "
                        + "gatewayctl log --verify as root, which reads \(AuditKeyFile.defaultPath))")
            }
        } else {
            parts.append("unkeyed SHA-256 links: anyone who can write the database can recompute them")
        }
        parts.append(
            "a cut-off tail or rows trimmed off the front do not show here: compare head_hash with the "
                + "audit head the door published (telemetry)")
        return parts.joined(separator: "; ")
    }
}
