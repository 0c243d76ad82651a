// COMPILE-TIME STAND-IN for Apple's BackgroundTasks framework (Linux only;
// see ../README.md): registering and scheduling an app refresh. Registered
// launch handlers and submitted requests are kept so a test can run the
// task as the system would.
import Foundation

open class BGTask: NSObject {
    open private(set) var identifier: String
    open var expirationHandler: (() -> Void)?
    private var completed: Bool?
    public init(identifier: String) { self.identifier = identifier }
    open func setTaskCompleted(success: Bool) { completed = success }
    /// Stand-in only: what `setTaskCompleted(success:)` was given, if called.
    public var completion: Bool? { completed }
}

open class BGAppRefreshTask: BGTask {}

open class BGTaskRequest: NSObject {
    open private(set) var identifier: String
    open var earliestBeginDate: Date?
    public init(identifier: String) { self.identifier = identifier }
}

open class BGAppRefreshTaskRequest: BGTaskRequest {
    public override init(identifier: String) { super.init(identifier: identifier) }
}

open class BGTaskScheduler: NSObject {
    public static let shared = BGTaskScheduler()
    private let lock = NSLock()
    private var handlers: [String: (BGTask) -> Void] = [:]
    private var pending: [String: BGTaskRequest] = [:]

    open func register(forTaskWithIdentifier identifier: String, using queue: DispatchQueue?,
                       launchHandler: @escaping (BGTask) -> Void) -> Bool {
        lock.withLock {
            if handlers[identifier] != nil { return false }
            handlers[identifier] = launchHandler
            return true
        }
    }

    open func submit(_ taskRequest: BGTaskRequest) throws {
        lock.withLock { pending[taskRequest.identifier] = taskRequest }
    }

    /// Stand-in only: the request submitted for `identifier`, if any.
    public func pendingRequest(_ identifier: String) -> BGTaskRequest? { lock.withLock { pending[identifier] } }

    /// Stand-in only: the system launching the task (returns the task given).
    public func launch(_ identifier: String) -> BGAppRefreshTask? {
        guard let handler = lock.withLock({ handlers[identifier] }) else { return nil }
        _ = lock.withLock { pending.removeValue(forKey: identifier) }
        let task = BGAppRefreshTask(identifier: identifier)
        handler(task)
        return task
    }
}
