import XCTest

/// A broker a test starts: the shipped configuration's (`MosquittoBroker`) or
/// a user's with logins (`LoginBroker`).
public protocol TestBroker: AnyObject {
    init() throws
    func start() throws
    func stop()
}

extension MosquittoBroker: TestBroker {}
extension LoginBroker: TestBroker {}

/// Tests against a `Broker` started before each test and stopped after it.
open class BrokerTestCase<Broker: TestBroker>: XCTestCase {
    public var broker: Broker!

    open override func setUpWithError() throws {
        try super.setUpWithError()
        broker = try Broker()
        try broker.start()
    }

    open override func tearDown() {
        // XCTest keeps test-case instances to the end of the run: stop the broker (its files go with it) now.
        broker?.stop()
        broker = nil
        super.tearDown()
    }
}
