// Apple glue: the Notification Service Extension. Subclass
// `QPNotificationService` as the extension's principal class and override
// `makeCore()`; the rest is QPServiceFlow.run.
#if canImport(UserNotifications)
import Foundation
import UserNotifications

open class QPNotificationService: UNNotificationServiceExtension {
    private let lock = NSLock()
    private var contentHandler: ((UNNotificationContent) -> Void)?
    /// What to hand over if time runs out: the push as it came, then the
    /// presented content once known.
    private var best: UNNotificationContent?
    private var core: PhoneCore?

    /// The shared core (App Group store, `.extension` mode); nil when it
    /// cannot be opened (locked before the first unlock): the push still shows.
    open func makeCore() -> PhoneCore? { nil }
    /// Seconds of network (sending queued answers) per push, well inside
    /// the extension's ~30 s: the core's budget (`QPBudgets`).
    open var networkBudget: TimeInterval { QPBudgets.extensionNetwork }
    open var requireUnlockForDanger: Bool { false }
    /// How loud a question is (interruption level, sound); the badge is
    /// the pending count. Use the same options in the app (QPAppLifecycle).
    open var presentOptions: PresentOptions { PresentOptions() }
    open func makeCenter() -> QPNotificationCenter { QPUserNotificationCenter() }

    open override func didReceive(_ request: UNNotificationRequest,
                                  withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void) {
        initLogging() // once per process (oslog)
        let original = request.content
        let core = makeCore()
        lock.withLock {
            self.contentHandler = contentHandler
            self.best = original
            self.core = core
        }
        QPServiceFlow.run(userInfoJSON: userInfoJSON(original.userInfo), core: core, center: makeCenter(),
                          budget: networkBudget, options: presentOptions, requireUnlockForDanger: requireUnlockForDanger,
                          presented: { plain in
                              let content = QPUserNotificationCenter.content(plain, base: original)
                              self.lock.withLock { self.best = content }
                          },
                          deliver: { plain in
                              self.deliver(QPUserNotificationCenter.content(plain, base: original))
                          })
    }

    /// Out of time: the best content is handed over first (iOS may end
    /// the extension soon after this returns), then the store is closed.
    open override func serviceExtensionTimeWillExpire() {
        let (best, core) = lock.withLock { (self.best, self.core) }
        if let best { deliver(best) }
        reported("serviceExtensionTimeWillExpire") { try core?.suspend() }
    }

    /// Exactly once, whichever comes first: the flow or the deadline.
    private func deliver(_ content: UNNotificationContent) {
        let handler: ((UNNotificationContent) -> Void)? = lock.withLock {
            defer { contentHandler = nil }
            return contentHandler
        }
        handler?(content)
    }
}
#endif
