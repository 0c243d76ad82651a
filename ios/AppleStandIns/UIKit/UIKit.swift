// COMPILE-TIME STAND-IN for the part of Apple's UIKit the glue uses (Linux
// only; see ../README.md): the application's state, background task
// assertions, the background/foreground notifications, and the background
// fetch result. Background tasks are recorded so tests can check that every
// one begun is ended.
import Foundation

public struct UIBackgroundTaskIdentifier: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let invalid = UIBackgroundTaskIdentifier(rawValue: 0)
}

open class UIApplication: NSObject {
    public enum State: Int, Sendable { case active, inactive, background }
    public enum BackgroundFetchResult: UInt, Sendable { case newData, noData, failed }

    public static let didEnterBackgroundNotification = Notification.Name("UIApplicationDidEnterBackgroundNotification")
    public static let willEnterForegroundNotification = Notification.Name("UIApplicationWillEnterForegroundNotification")

    private static let instance = UIApplication()
    open class var shared: UIApplication { instance }

    private let lock = NSLock()
    private var next = 1
    private var running: [Int: String] = [:]
    private var state: State = .active
    open var applicationState: State {
        get { lock.withLock { state } }
        set { lock.withLock { state = newValue } } // settable: the stand-in only
    }

    open func beginBackgroundTask(withName taskName: String?, expirationHandler handler: (() -> Void)? = nil)
        -> UIBackgroundTaskIdentifier {
        lock.withLock {
            defer { next += 1 }
            running[next] = taskName ?? ""
            return UIBackgroundTaskIdentifier(rawValue: next)
        }
    }

    open func endBackgroundTask(_ identifier: UIBackgroundTaskIdentifier) {
        _ = lock.withLock { running.removeValue(forKey: identifier.rawValue) }
    }

    /// Stand-in only: the names of the background tasks begun and not ended.
    public var runningBackgroundTasks: [String] { lock.withLock { Array(running.values) } }
}
