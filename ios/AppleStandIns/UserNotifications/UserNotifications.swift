// COMPILE-TIME STAND-IN for Apple's UserNotifications framework (Linux only;
// see ../README.md). The declarations mirror Apple's documented signatures
// for the members the glue uses; the bodies keep state in memory so tests
// can see what the glue asked of the system.
import Foundation

public let UNNotificationDefaultActionIdentifier = "com.apple.UNNotificationDefaultActionIdentifier"
public let UNNotificationDismissActionIdentifier = "com.apple.UNNotificationDismissActionIdentifier"

public struct UNNotificationActionOptions: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let authenticationRequired = UNNotificationActionOptions(rawValue: 1 << 0)
    public static let destructive = UNNotificationActionOptions(rawValue: 1 << 1)
    public static let foreground = UNNotificationActionOptions(rawValue: 1 << 2)
}

public struct UNNotificationCategoryOptions: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
}

public enum UNNotificationInterruptionLevel: UInt, Sendable {
    case passive = 0, active = 1, timeSensitive = 2, critical = 3
}

open class UNNotificationAction: NSObject {
    open private(set) var identifier: String
    open private(set) var title: String
    open private(set) var options: UNNotificationActionOptions
    public init(identifier: String, title: String, options: UNNotificationActionOptions = []) {
        self.identifier = identifier
        self.title = title
        self.options = options
    }
}

open class UNTextInputNotificationAction: UNNotificationAction {
    open private(set) var textInputButtonTitle: String
    open private(set) var textInputPlaceholder: String
    public init(identifier: String, title: String, options: UNNotificationActionOptions = [],
                textInputButtonTitle: String, textInputPlaceholder: String) {
        self.textInputButtonTitle = textInputButtonTitle
        self.textInputPlaceholder = textInputPlaceholder
        super.init(identifier: identifier, title: title, options: options)
    }
}

open class UNNotificationCategory: NSObject {
    open private(set) var identifier: String
    open private(set) var actions: [UNNotificationAction]
    open private(set) var intentIdentifiers: [String]
    open private(set) var options: UNNotificationCategoryOptions
    public init(identifier: String, actions: [UNNotificationAction], intentIdentifiers: [String],
                options: UNNotificationCategoryOptions = []) {
        self.identifier = identifier
        self.actions = actions
        self.intentIdentifiers = intentIdentifiers
        self.options = options
    }
    // Categories are equal by identifier in a Set, as the system treats them.
    open override var hash: Int { identifier.hashValue }
    open override func isEqual(_ object: Any?) -> Bool {
        (object as? UNNotificationCategory)?.identifier == identifier
    }
}

public struct UNNotificationSoundName: Hashable, RawRepresentable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
}

open class UNNotificationSound: NSObject {
    /// Stand-in only: the sound file's name; nil for the default sound.
    public let standInName: String?
    private init(standInName: String?) { self.standInName = standInName }
    open class var `default`: UNNotificationSound { UNNotificationSound(standInName: nil) }
    public convenience init(named name: UNNotificationSoundName) { self.init(standInName: name.rawValue) }
}

open class UNNotificationContent: NSObject, NSCopying, NSMutableCopying {
    open internal(set) var title: String = ""
    open internal(set) var subtitle: String = ""
    open internal(set) var body: String = ""
    open internal(set) var categoryIdentifier: String = ""
    open internal(set) var threadIdentifier: String = ""
    open internal(set) var userInfo: [AnyHashable: Any] = [:]
    open internal(set) var sound: UNNotificationSound?
    open internal(set) var interruptionLevel: UNNotificationInterruptionLevel = .active
    open internal(set) var badge: NSNumber?
    public override init() {}

    public func copy(with zone: NSZone? = nil) -> Any { fill(UNNotificationContent()) }
    public func mutableCopy(with zone: NSZone? = nil) -> Any { fill(UNMutableNotificationContent()) }
    private func fill<T: UNNotificationContent>(_ c: T) -> T {
        c.title = title; c.subtitle = subtitle; c.body = body
        c.categoryIdentifier = categoryIdentifier; c.threadIdentifier = threadIdentifier
        c.userInfo = userInfo; c.sound = sound; c.interruptionLevel = interruptionLevel
        c.badge = badge
        return c
    }
}

open class UNMutableNotificationContent: UNNotificationContent {
    open override var title: String { get { super.title } set { super.title = newValue } }
    open override var subtitle: String { get { super.subtitle } set { super.subtitle = newValue } }
    open override var body: String { get { super.body } set { super.body = newValue } }
    open override var categoryIdentifier: String { get { super.categoryIdentifier } set { super.categoryIdentifier = newValue } }
    open override var threadIdentifier: String { get { super.threadIdentifier } set { super.threadIdentifier = newValue } }
    open override var userInfo: [AnyHashable: Any] { get { super.userInfo } set { super.userInfo = newValue } }
    open override var sound: UNNotificationSound? { get { super.sound } set { super.sound = newValue } }
    open override var interruptionLevel: UNNotificationInterruptionLevel {
        get { super.interruptionLevel } set { super.interruptionLevel = newValue }
    }
    open override var badge: NSNumber? { get { super.badge } set { super.badge = newValue } }
}

open class UNNotificationTrigger: NSObject {}

open class UNNotificationRequest: NSObject {
    open private(set) var identifier: String
    open private(set) var content: UNNotificationContent
    open private(set) var trigger: UNNotificationTrigger?
    public init(identifier: String, content: UNNotificationContent, trigger: UNNotificationTrigger?) {
        self.identifier = identifier
        self.content = (content.copy() as? UNNotificationContent) ?? content
        self.trigger = trigger
    }
}

open class UNNotification: NSObject {
    open private(set) var request: UNNotificationRequest
    open private(set) var date: Date
    public init(request: UNNotificationRequest, date: Date) { self.request = request; self.date = date }
}

open class UNNotificationResponse: NSObject {
    open private(set) var notification: UNNotification
    open private(set) var actionIdentifier: String
    public init(notification: UNNotification, actionIdentifier: String) {
        self.notification = notification
        self.actionIdentifier = actionIdentifier
    }
}

open class UNTextInputNotificationResponse: UNNotificationResponse {
    open private(set) var userText: String
    public init(notification: UNNotification, actionIdentifier: String, userText: String) {
        self.userText = userText
        super.init(notification: notification, actionIdentifier: actionIdentifier)
    }
}

/// The app's handler of notification responses (the README's app delegate).
/// What the app asks the person to allow.
public struct UNAuthorizationOptions: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let badge = UNAuthorizationOptions(rawValue: 1 << 0)
    public static let sound = UNAuthorizationOptions(rawValue: 1 << 1)
    public static let alert = UNAuthorizationOptions(rawValue: 1 << 2)
    public static let criticalAlert = UNAuthorizationOptions(rawValue: 1 << 4)
}

/// How a notification arriving while the app is in the foreground shows
/// (iOS 14+ members).
public struct UNNotificationPresentationOptions: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let badge = UNNotificationPresentationOptions(rawValue: 1 << 0)
    public static let sound = UNNotificationPresentationOptions(rawValue: 1 << 1)
    public static let list = UNNotificationPresentationOptions(rawValue: 1 << 3)
    public static let banner = UNNotificationPresentationOptions(rawValue: 1 << 4)
}

/// Both methods are optional in Apple's (Objective-C) protocol; here, the
/// defaults below do what iOS does when the delegate lacks one.
public protocol UNUserNotificationCenterDelegate: AnyObject {
    func userNotificationCenter(_ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse,
                                withCompletionHandler completionHandler: @escaping () -> Void)
    func userNotificationCenter(_ center: UNUserNotificationCenter, willPresent notification: UNNotification,
                                withCompletionHandler completionHandler: @escaping (UNNotificationPresentationOptions) -> Void)
}

public extension UNUserNotificationCenterDelegate {
    func userNotificationCenter(_ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse,
                                withCompletionHandler completionHandler: @escaping () -> Void) { completionHandler() }
    /// Without the method, iOS shows nothing while the app is in the foreground.
    func userNotificationCenter(_ center: UNUserNotificationCenter, willPresent notification: UNNotification,
                                withCompletionHandler completionHandler: @escaping (UNNotificationPresentationOptions) -> Void) {
        completionHandler([])
    }
}

/// The system's notification center: categories and the notifications on
/// screen, by request identifier (a new request with the same identifier
/// replaces the old one, as on iOS).
open class UNUserNotificationCenter: NSObject {
    private static let shared = UNUserNotificationCenter()
    open class func current() -> UNUserNotificationCenter { shared }

    open weak var delegate: UNUserNotificationCenterDelegate?
    private let lock = NSLock()
    private var asked: UNAuthorizationOptions?
    /// Stand-in only: whether the person allows notifications (the answer
    /// the permission prompt gives).
    public var standInGrantsAuthorization = true

    open func requestAuthorization(options: UNAuthorizationOptions = [],
                                   completionHandler: @escaping (Bool, Error?) -> Void) {
        let granted = lock.withLock { () -> Bool in
            asked = options
            return standInGrantsAuthorization
        }
        completionHandler(granted, nil)
    }
    /// Stand-in only: the options last asked for, if any.
    public var standInRequestedAuthorization: UNAuthorizationOptions? { lock.withLock { asked } }
    private var categories = Set<UNNotificationCategory>()
    private var delivered: [UNNotification] = []

    /// Stand-in only: when above zero, `getNotificationCategories` answers
    /// this long after it is asked, on another thread, with the set as it
    /// was when asked (iOS answers on a queue of its own: the window in
    /// which two read-then-write changes race).
    public var standInCategoryReadDelay: TimeInterval {
        get { lock.withLock { categoryReadDelay } }
        set { lock.withLock { categoryReadDelay = newValue } }
    }
    private var categoryReadDelay: TimeInterval = 0

    open func getNotificationCategories(completionHandler: @escaping (Set<UNNotificationCategory>) -> Void) {
        let (now, delay) = lock.withLock { (categories, categoryReadDelay) }
        guard delay > 0 else { return completionHandler(now) }
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) { completionHandler(now) }
    }

    open func setNotificationCategories(_ categories: Set<UNNotificationCategory>) {
        lock.withLock { self.categories = categories }
    }

    open func getDeliveredNotifications(completionHandler: @escaping ([UNNotification]) -> Void) {
        completionHandler(lock.withLock { delivered })
    }

    open func removeDeliveredNotifications(withIdentifiers identifiers: [String]) {
        lock.withLock { delivered.removeAll { identifiers.contains($0.request.identifier) } }
    }

    private var badge = 0
    /// iOS 16+: the app icon's badge.
    open func setBadgeCount(_ newBadgeCount: Int, withCompletionHandler completionHandler: ((Error?) -> Void)? = nil) {
        lock.withLock { badge = newBadgeCount }
        completionHandler?(nil)
    }
    /// Stand-in only: the badge last set.
    public var standInBadgeCount: Int { lock.withLock { badge } }

    open func removeAllDeliveredNotifications() {
        lock.withLock { delivered.removeAll() }
    }

    /// Stand-in only: a notification arriving while the app is in the
    /// foreground, as iOS handles it: the delegate's `willPresent` decides;
    /// shown (kept on screen) when it asks for a banner or the list, not
    /// at all without a delegate. Returns the options it was given.
    @discardableResult
    public func standInArriveInForeground(_ request: UNNotificationRequest) -> UNNotificationPresentationOptions {
        let asked = NSLock()
        var options: UNNotificationPresentationOptions = []
        let done = DispatchSemaphore(value: 0)
        guard let delegate else { return [] }
        delegate.userNotificationCenter(self, willPresent: UNNotification(request: request, date: Date())) { o in
            asked.withLock { options = o }
            done.signal()
        }
        _ = done.wait(timeout: .now() + 5)
        let shown = asked.withLock { options }
        if !shown.isDisjoint(with: [.banner, .list]) { add(request) }
        return shown
    }

    open func add(_ request: UNNotificationRequest, withCompletionHandler completionHandler: ((Error?) -> Void)? = nil) {
        lock.withLock {
            if let i = delivered.firstIndex(where: { $0.request.identifier == request.identifier }) {
                delivered[i] = UNNotification(request: request, date: Date())
            } else {
                delivered.append(UNNotification(request: request, date: Date()))
            }
        }
        completionHandler?(nil)
    }
}

open class UNNotificationServiceExtension: NSObject {
    public override init() {}
    open func didReceive(_ request: UNNotificationRequest,
                         withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void) {
        contentHandler(request.content)
    }
    open func serviceExtensionTimeWillExpire() {}
}
