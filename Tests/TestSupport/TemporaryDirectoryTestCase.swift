import Foundation
import XCTest

/// Tests that keep files under paths of their own, each removed after the test.
open class TemporaryDirectoryTestCase: XCTestCase {
    private var paths: [String] = []

    /// A new path in the temporary directory, `prefix-<UUID>` (not created:
    /// the store makes its directory), removed after the test.
    public func temporaryPath(_ prefix: String) -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)").path
        paths.append(path)
        return path
    }

    /// A new directory in the temporary directory, made, removed after the test.
    public func temporaryDirectory(_ prefix: String) throws -> URL {
        let url = URL(fileURLWithPath: temporaryPath(prefix))
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    open override func tearDownWithError() throws {
        for path in paths { try? FileManager.default.removeItem(atPath: path) }
        paths = []
        try super.tearDownWithError()
    }
}
