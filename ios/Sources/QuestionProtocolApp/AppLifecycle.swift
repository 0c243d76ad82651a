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
    /// How soon the system may run the next refresh: the core's
    /// (`phoneBudgets().refreshIntervalMs`), the same on both platforms.
    public var refreshInterval: TimeInterval = TimeInterval(phoneBudgets().refreshIntervalMs) / 1000
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

    /// The store calls the system's callbacks ask for (close, open), off
    /// the main thread and in the order they were asked: a quick return to
    /// the foreground must not find its open overtaken by the close before it.
    private let storeQueue = DispatchQueue(label: "io.questionprotocol.lifecycle", qos: .utility)

    /// `work` on the store queue, after what was queued before it.
    private func onStoreQueue<T>(_ work: @escaping () -> T) -> Task<T, Never> {
        let result = QueuedResult<T>()
        storeQueue.async { result.set(work()) }
        return Task { await result.value() }
    }

    /// Waits until the store calls asked for so far are done (tests, or an
    /// app that reads the store right after a lifecycle callback).
    public func idle() async {
        await onStoreQueue {}.value
    }

    /// The core's `enteringBackground` (it waits for the store work in
    /// flight, then closes the store, waiting at most a moment for the
    /// extension's lock) off the calling thread, inside a background task:
    /// iOS calls this on the main thread, which must not wait on a file
    /// lock. The next refresh is scheduled. The task's value: the core's
    /// report (nil when it failed; the failure is reported).
    @discardableResult
    public func didEnterBackground() -> Task<BackgroundReport?, Never> {
        let app = UIApplication.shared
        let ended = Once()
        var task = UIBackgroundTaskIdentifier.invalid
        let end = { if ended.claim() { app.endBackgroundTask(task) } }
        task = app.beginBackgroundTask(withName: "qp.suspend", expirationHandler: { end() })
        scheduleRefresh()
        let core = self.core
        return onStoreQueue {
            defer { end() }
            return reported("didEnterBackground") { try core.enteringBackground(platform: .ios) }
        }
    }

    /// The core's `cameToForeground` (resume, send, sync, reconcile), its
    /// plan applied. The store is opened first, off the main thread, after
    /// any close still in progress. The task's report: as `start`'s.
    @discardableResult
    public func willEnterForeground() -> Task<ForegroundReport, Never> {
        let (core, center, options) = (self.core, self.center, presentOptions)
        let opened = onStoreQueue {
            reported("willEnterForeground") { try core.resume() }
        }
        return Task {
            await opened.value
            return await QPReconciler.cameToForeground(core: core, center: center, options: options)
        }
    }

    /// A silent (`content-available`) push, when one arrives: a resolution
    /// the server confirms replaces the notification on screen. The store
    /// is read off the calling thread.
    public func didReceiveRemoteNotification(_ userInfo: [AnyHashable: Any],
                                             fetchCompletionHandler completion: @escaping (UIBackgroundFetchResult) -> Void) {
        let (core, center, options) = (self.core, self.center, presentOptions)
        let json = userInfoJSON(userInfo)
        let inBackground = UIApplication.shared.applicationState == .background
        let opened = onStoreQueue { () -> ResolvedPush? in
            reported("didReceiveRemoteNotification") { () throws -> ResolvedPush? in
                try core.resume()
                guard case let .resolved(notice) = try core.receiveApns(json: json) else { return nil }
                return notice
            } ?? nil
        }
        Task {
            guard let notice = await opened.value else {
                completion(.noData)
                return
            }
            // A push's resolution is a claim: the server's answer is recorded
            // first, and reconciliation replaces only what it made terminal.
            // Not confirmed (offline), the next sync decides.
            _ = await reported("silent push confirm") { try await core.confirmResolution(questionId: notice.id) }
            await QPReconciler.reconcile(core: core, center: center, options: options)
            if inBackground { reported("silent push suspend") { try core.suspend() } }
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
        reported("schedule refresh") { try BGTaskScheduler.shared.submit(request) }
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
                reported("refresh suspend") { try core.suspend() }
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
/// A value computed on a queue, awaited from a task.
private final class QueuedResult<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var result: T?
    private var waiter: CheckedContinuation<T, Never>?

    func set(_ value: T) {
        let w: CheckedContinuation<T, Never>? = lock.withLock {
            if let w = waiter { waiter = nil; return w }
            result = value
            return nil
        }
        w?.resume(returning: value)
    }

    func value() async -> T {
        await withCheckedContinuation { (c: CheckedContinuation<T, Never>) in
            let ready: T? = lock.withLock {
                if let r = result { return r }
                waiter = c
                return nil
            }
            if let ready { c.resume(returning: ready) }
        }
    }
}
#endif
