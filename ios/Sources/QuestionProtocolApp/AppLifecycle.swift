// Apple glue: the app's side of the lifecycle, the core's two calls. The
// store lives in the App Group container, so going to the background
// (`enteringBackground`, inside a background task) closes it (no file lock
// held); each return to the foreground (`cameToForeground`) resumes it,
// sends, syncs and reconciles the notifications on screen, in the core's
// order; a background app refresh does the same while the app is not in
// use. This file only applies what the core returns. App only (`UIApplication.shared`, background
// tasks): the app product, QuestionProtocolApp.
#if canImport(UIKit) && canImport(UserNotifications)
import Foundation
import UIKit
import UserNotifications
import QuestionProtocol
#if canImport(BackgroundTasks)
import BackgroundTasks
#endif

@available(iOSApplicationExtension, unavailable)
public final class QPAppLifecycle {
    public let core: PhoneCore
    public let center: QPNotificationCenter
    /// The BGTaskScheduler identifier (also listed in Info.plist under
    /// `BGTaskSchedulerPermittedIdentifiers`).
    public let refreshIdentifier: String
    /// How soon the system may run the next refresh.
    public var refreshInterval: TimeInterval = 15 * 60
    /// How loud the questions it posts are (the extension's `presentOptions`).
    public var presentOptions = PresentOptions()
    private var observers: [NSObjectProtocol] = []

    public init(core: PhoneCore, center: QPNotificationCenter = QPUserNotificationCenter(),
                refreshIdentifier: String = "io.questionprotocol.refresh") {
        initLogging() // once per process (oslog)
        self.core = core
        self.center = center
        self.refreshIdentifier = refreshIdentifier
    }

    /// From `application(_:didFinishLaunchingWithOptions:)`: registers the
    /// background refresh (it must be registered before launch ends),
    /// observes background/foreground, and comes to the foreground once
    /// (the core's first call in the process is the launch's: it also
    /// queues again what a crash cut short). The task's report says what
    /// each step did: `session?.line` is the line to show when the person
    /// must sign in again, `failures` what went wrong.
    @discardableResult
    public func start(notificationCenter: NotificationCenter = .default) -> Task<ForegroundReport, Never> {
        registerRefresh()
        // iOS 15's badge: only the app can set it (see legacyBadgeSetter).
        QPUserNotificationCenter.legacyBadgeSetter = { UIApplication.shared.applicationIconBadgeNumber = $0 }
        observers.append(notificationCenter.addObserver(forName: UIApplication.didEnterBackgroundNotification,
                                                        object: nil, queue: nil) { [weak self] _ in
            self?.didEnterBackground()
        })
        observers.append(notificationCenter.addObserver(forName: UIApplication.willEnterForegroundNotification,
                                                        object: nil, queue: nil) { [weak self] _ in
            self?.willEnterForeground()
        })
        let (core, center, options) = (self.core, self.center, presentOptions)
        return Task { await QPReconciler.cameToForeground(core: core, center: center, options: options) }
    }

    deinit {
        observers.forEach { NotificationCenter.default.removeObserver($0) }
    }

    /// The core's `enteringBackground` inside a background task (it waits
    /// for the store work in flight, then closes the store), and the next
    /// refresh scheduled.
    public func didEnterBackground() {
        let app = UIApplication.shared
        let ended = Once()
        var task = UIBackgroundTaskIdentifier.invalid
        let end = { if ended.claim() { app.endBackgroundTask(task) } }
        task = app.beginBackgroundTask(withName: "qp.suspend", expirationHandler: { end() })
        _ = try? core.enteringBackground(platform: .ios)
        scheduleRefresh()
        end()
    }

    /// The core's `cameToForeground` (resume, send, sync, reconcile), its
    /// plan applied. The store is opened at once too, so what the app reads
    /// while the rest runs finds it open. The task's report: as `start`'s.
    @discardableResult
    public func willEnterForeground() -> Task<ForegroundReport, Never> {
        try? core.resume()
        let (core, center, options) = (self.core, self.center, presentOptions)
        return Task { await QPReconciler.cameToForeground(core: core, center: center, options: options) }
    }

    /// A silent (`content-available`) push, when one arrives: a resolution
    /// the server confirms replaces the notification on screen.
    public func didReceiveRemoteNotification(_ userInfo: [AnyHashable: Any],
                                             fetchCompletionHandler completion: @escaping (UIBackgroundFetchResult) -> Void) {
        try? core.resume()
        guard case let .resolved(notice)? = try? core.receiveApns(json: userInfoJSON(userInfo)) else {
            completion(.noData)
            return
        }
        let (core, center, options) = (self.core, self.center, presentOptions)
        let inBackground = UIApplication.shared.applicationState == .background
        Task {
            // A push's resolution is a claim: the server's answer is recorded
            // first, and reconciliation replaces only what it made terminal.
            _ = try? await core.confirmResolution(questionId: notice.id)
            await QPReconciler.reconcile(core: core, center: center, options: options)
            if inBackground { try? core.suspend() }
            completion(.newData)
        }
    }

    // ---- background app refresh ----

    @discardableResult
    func registerRefresh() -> Bool {
        #if canImport(BackgroundTasks)
        return BGTaskScheduler.shared.register(forTaskWithIdentifier: refreshIdentifier, using: nil) { [weak self] task in
            guard let self else { task.setTaskCompleted(success: false); return }
            self.runRefresh(task)
        }
        #else
        return false
        #endif
    }

    public func scheduleRefresh() {
        #if canImport(BackgroundTasks)
        let request = BGAppRefreshTaskRequest(identifier: refreshIdentifier)
        request.earliestBeginDate = Date(timeIntervalSinceNow: refreshInterval)
        try? BGTaskScheduler.shared.submit(request)
        #endif
    }

    #if canImport(BackgroundTasks)
    /// Sends, syncs and reconciles; then schedules the next, suspends, and
    /// completes the task exactly once (also when the system expires it).
    func runRefresh(_ task: BGTask) {
        let completed = Once()
        let core = self.core
        let complete = { (ok: Bool) in
            if completed.claim() {
                try? core.suspend()
                task.setTaskCompleted(success: ok)
            }
        }
        task.expirationHandler = { complete(false) }
        scheduleRefresh()
        let (center, options) = (self.center, presentOptions)
        Task {
            let report = await QPReconciler.refresh(core: core, center: center, options: options)
            complete(report != nil)
        }
    }
    #endif
}
#endif
