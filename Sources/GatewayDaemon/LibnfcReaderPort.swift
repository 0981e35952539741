import DoorCore
import GatewayControl
import Logging
import NFCReader

extension ReaderError: ReaderPortError {}

/// The daemon's reader port over the libnfc adapter.
final class LibnfcReaderPort: TagReaderPort {
    let reader: NFCReader
    let authLimit: Int

    init(connstring: String, authLimit: Int, log: Logger) {
        reader = NFCReader(connstring: connstring)
        self.authLimit = authLimit
    }

    func open() throws { try reader.open() }
    func close() { reader.close() }

    func waitForTag(timeout: Duration) throws -> ReadTag? {
        guard let tag = try reader.poll() else { return nil }
        return ReadTag(uid: tag.uid, message: tag.message, typeName: tag.type?.rawValue ?? "unknown")
    }

    func isPresent(_ uid: TagUID) throws -> Bool { try reader.isPresent(uid) }

    func write(_ message: NDEFMessage, to uid: TagUID, overwrite: Bool, deviceKey: [UInt8], protect: Bool) throws {
        // A tag protected earlier is authenticated with the device key's
        // password even when this write does not ask for protection.
        let options = WriteOptions(
            overwrite: overwrite, password: NTAGPassword.derive(deviceKey: deviceKey, uid: uid), protect: protect,
            authLimit: authLimit)
        try reader.write(message, to: uid, options: options)
    }

    var healthText: String { reader.health.description }
}
