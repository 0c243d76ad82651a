// COMPILE-TIME STAND-IN for the part of Apple's UIKit the glue uses (Linux
// only; see ../README.md): the application's state, background task
// assertions, the background/foreground notifications, and the background
// fetch result; for the README's code, the app delegate's types and
// UIDevice. Background tasks are recorded so tests can check that every
// one begun is ended.
import Foundation

public struct UIBackgroundTaskIdentifier: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let invalid = UIBackgroundTaskIdentifier(rawValue: 0)
}

/// Top level, as in UIKit (there is no `UIApplication.BackgroundFetchResult`).
public enum UIBackgroundFetchResult: UInt, Sendable { case newData, noData, failed }

open class UIApplication: NSObject {
    public enum State: Int, Sendable { case active, inactive, background }

    public static let didEnterBackgroundNotification = Notification.Name("UIApplicationDidEnterBackgroundNotification")
    public static let willEnterForegroundNotification = Notification.Name("UIApplicationWillEnterForegroundNotification")

    public struct LaunchOptionsKey: Hashable, RawRepresentable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
    }

    private static let instance = UIApplication()
    // As in Apple's UIKit: app extensions may not use it. Swift on Linux
    // ignores iOSApplicationExtension availability (it is not compiling for
    // iOS), so ios/run-tests compiles this stand-in with
    // QP_APPLICATION_EXTENSION defined when it builds the extension product
    // the way Xcode builds an extension: then every use is an error.
    #if QP_APPLICATION_EXTENSION
    @available(*, unavailable, message: "Use view controller based solutions where appropriate instead. (UIApplication.shared is unavailable in application extensions for iOS)")
    open class var shared: UIApplication { instance }
    #else
    @available(iOSApplicationExtension, unavailable)
    open class var shared: UIApplication { instance }
    #endif

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

    private var badgeNumber = 0
    /// The app icon's badge (iOS 15's way; iOS 16+ sets it through
    /// UNUserNotificationCenter).
    open var applicationIconBadgeNumber: Int {
        get { lock.withLock { badgeNumber } }
        set { lock.withLock { badgeNumber = newValue } }
    }

    private var remoteRegistrations = 0
    /// Asks APNs for this app's device token: the delegate's
    /// `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`
    /// gets it (the stand-in only counts the calls).
    open func registerForRemoteNotifications() { lock.withLock { remoteRegistrations += 1 } }
    /// Stand-in only: how many times `registerForRemoteNotifications()` was called.
    public var standInRemoteRegistrations: Int { lock.withLock { remoteRegistrations } }
}

open class UIResponder: NSObject {
    // required: the SwiftUI stand-in's UIApplicationDelegateAdaptor makes the app's delegate from its type.
    public required override init() {}
}

public protocol UIApplicationDelegate: AnyObject {
    func application(_ application: UIApplication,
                     didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]?) -> Bool
    func application(_ application: UIApplication, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data)
    func application(_ application: UIApplication, didFailToRegisterForRemoteNotificationsWithError error: Error)
}

public extension UIApplicationDelegate {
    func application(_ application: UIApplication,
                     didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]?) -> Bool { true }
    func application(_ application: UIApplication, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data) {}
    func application(_ application: UIApplication, didFailToRegisterForRemoteNotificationsWithError error: Error) {}
}

/// The device; `name` is the user-assigned name.
open class UIDevice: NSObject {
    private static let instance = UIDevice()
    open class var current: UIDevice { instance }
    open var name: String { "Stand-in iPhone" }
}
