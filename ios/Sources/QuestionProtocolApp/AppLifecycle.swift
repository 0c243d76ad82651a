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
    /// The session, opened off the main thread; every store call below
    /// waits for it on the store queue, never on the caller's thread.
    public let session: QPSession
    /// The session if open now (nil while opening, or when it could not be opened).
    public var core: PhoneCore? { session.openedCore }
    public let center: QPNotificationCenter
    /// The BGTaskScheduler identifier (also listed in Info.plist under
    /// `BGTaskSchedulerPermittedIdentifiers`).
    public let refreshIdentifier: String
    /// How soon the system may run the next refresh: the core's
    /// (`phoneBudgets().refreshIntervalMs`), the same on both platforms.
    public var refreshInterval: TimeInterval = TimeInterval(phoneBudgets().refreshIntervalMs) / 1000
    /// How loud the questions it posts are (the extension's `presentOptions`).
    public var presentOptions = PresentOptions()
    /// The app's background answers, if it sends answers that way: at
    /// launch and at each return to the foreground, before the outbox is
    /// sent, answers the system lost go back to it
    /// (`QPBackgroundAnswers.reconcile`), so a lost answer goes out at the
    /// first foreground after the core's grace, not at the next launch.
    public let uploads: QPBackgroundAnswers?
    private var observers: [NSObjectProtocol] = []

    /// At launch: `session` may still be opening (`QPSession(storePath:…)`
    /// opens off the main thread); the refresh is registered at once, as iOS
    /// requires before launch ends, and the store calls wait for the open.
    public init(session: QPSession, center: QPNotificationCenter = QPUserNotificationCenter(),
                uploads: QPBackgroundAnswers? = nil,
                refreshIdentifier: String = "io.questionprotocol.refresh") {
        initLogging() // once per process (oslog)
        self.session = session
        self.uploads = uploads
        self.center = center
        self.refreshIdentifier = refreshIdentifier
    }

    /// Over a session already open.
    public convenience init(core: PhoneCore, center: QPNotificationCenter = QPUserNotificationCenter(),
                            uploads: QPBackgroundAnswers? = nil,
                            refreshIdentifier: String = "io.questionprotocol.refresh") {
        self.init(session: uploads?.session ?? QPSession(core: core), center: center, uploads: uploads,
                  refreshIdentifier: refreshIdentifier)
    }

    /// From `application(_:didFinishLaunchingWithOptions:)`: registers the
    /// background refresh (it must be registered before launch ends),
    /// observes background/foreground, and comes to the foreground once
    /// (the core's first call in the process is the launch's: it also
    /// queues again what a crash cut short), once the session is open. The
    /// task's report says what each step did: `session?.line` is the line
    /// to show when the person must sign in again, `failures` what went
    /// wrong; nil when the session could not be opened. Through the store
    /// queue, as a return to the foreground (`willEnterForeground`): work in
    /// the background that ends meanwhile leaves the store open.
    @discardableResult
    public func start(notificationCenter: NotificationCenter = .default) -> Task<ForegroundReport?, Never> {
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
        guard UIApplication.shared.applicationState == .background else { return willEnterForeground() }
        return launchedInBackground()
    }

    /// A launch into the background (the system relaunched the app for an
    /// upload's report, a push, a refresh; `didEnterBackground` follows at
    /// once): the launch's work runs as background work, in a background
    /// task, and closes the store when it ends unless the app came to the
    /// foreground meanwhile. As a foreground's, it reopened the store after
    /// `didEnterBackground` had closed it and nothing closed it again: iOS
    /// then suspended the app holding the store's lock (0xdead10cc).
    private func launchedInBackground() -> Task<ForegroundReport?, Never> {
        let (center, options, uploads, session) = (self.center, presentOptions, self.uploads, self.session)
        let app = UIApplication.shared
        let ended = Once()
        var task = UIBackgroundTaskIdentifier.invalid
        let end = { if ended.claim() { app.endBackgroundTask(task) } }
        task = app.beginBackgroundTask(withName: "qp.launch", expirationHandler: { end() })
        // On the store queue, before a close asked for after it.
        let opened = onStoreQueue { core -> (PhoneCore, BackgroundStoreUse)? in
            (core, session.openForBackgroundWork(core, suspendAfter: true, site: "launch in the background"))
        }
        return Task {
            guard let opened = await opened.value else { end(); return nil }
            let (core, use) = opened
            _ = await uploads?.reconciled()
            let report = await QPReconciler.cameToForeground(core: core, center: center, options: options)
            use.end()
            end()
            return report
        }
    }

    deinit {
        observers.forEach { NotificationCenter.default.removeObserver($0) }
    }

    /// The store calls the system's callbacks ask for (close, open), off
    /// the main thread and in the order they were asked: a quick return to
    /// the foreground must not find its open overtaken by the close before it.
    private let storeQueue = DispatchQueue(label: "io.questionprotocol.lifecycle", qos: .utility)

    /// `work` on the store queue, after what was queued before it and
    /// after the session's open (nil when it could not be opened).
    /// `finally` runs on the queue after it, with or without a session,
    /// and before the result is handed on: whoever awaits the result finds
    /// the background task already ended.
    private func onStoreQueue<T>(_ work: @escaping (PhoneCore) -> T?,
                                 finally: @escaping () -> Void = {}) -> Task<T?, Never> {
        let result = QueuedResult<T?>()
        let session = self.session
        storeQueue.async {
            let value = session.waitForCore().flatMap(work)
            finally()
            result.set(value)
        }
        return Task { await result.value() }
    }

    /// Waits until the store calls asked for so far are done (tests, or an
    /// app that reads the store right after a lifecycle callback).
    public func idle() async {
        _ = await onStoreQueue { _ in () }.value
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
        return onStoreQueue({ [session] core in
            session.usingStore { reported("didEnterBackground") { try core.enteringBackground(platform: .ios) } }
        }, finally: end)
    }

    /// The core's `cameToForeground` (resume, send, sync, reconcile), its
    /// plan applied. The store is opened first, off the main thread, after
    /// any close still in progress; with `uploads`, answers the system lost
    /// go back to the outbox before it is sent. The task's report: as
    /// `start`'s.
    @discardableResult
    public func willEnterForeground() -> Task<ForegroundReport?, Never> {
        let (center, options, uploads) = (self.center, presentOptions, self.uploads)
        let session = self.session
        let opened = onStoreQueue { core -> PhoneCore? in
            // Background work in progress (a report, an answer) then
            // leaves the store open when it ends.
            session.comingToForeground { _ = reported("willEnterForeground") { try core.resume() } }
            return core
        }
        return Task {
            guard let core = await opened.value else { return nil }
            _ = await uploads?.reconciled()
            return await QPReconciler.cameToForeground(core: core, center: center, options: options)
        }
    }

    /// A silent (`content-available`) push, when one arrives: a resolution
    /// the server confirms replaces the notification on screen. The store
    /// is read off the calling thread.
    public func didReceiveRemoteNotification(_ userInfo: [AnyHashable: Any],
                                             fetchCompletionHandler completion: @escaping (UIBackgroundFetchResult) -> Void) {
        let (center, options) = (self.center, presentOptions)
        let json = userInfoJSON(userInfo)
        let inBackground = UIApplication.shared.applicationState == .background
        let session = self.session
        // After the lifecycle's store calls queued before it.
        let opened = onStoreQueue { core -> PhoneCore? in core }
        Task {
            guard let core = await opened.value else { return completion(.noData) }
            // The store opened for this and closed after only if nothing
            // else uses it then (`withStoreOpen`): a return to the
            // foreground meanwhile keeps it open.
            let result = await session.withStoreOpen(core, suspendAfter: inBackground, site: "silent push") {
                () async -> UIBackgroundFetchResult in
                let received = reported("didReceiveRemoteNotification") { try core.receiveApns(json: json) }
                guard case let .resolved(notice)? = received else { return .noData }
                // A push's resolution is a claim: the server's answer is recorded
                // first, and reconciliation replaces only what it made terminal.
                // Not confirmed (offline), the next sync decides.
                _ = await reported("silent push confirm") { try await core.confirmResolution(questionId: notice.id) }
                await QPReconciler.reconcile(core: core, center: center, options: options)
                return .newData
            }
            completion(result)
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
        let session = self.session
        let complete = { (ok: Bool) in
            if completed.claim() { task.setTaskCompleted(success: ok) }
        }
        // Expired: the app is about to be suspended, which it must not be
        // holding the store's file lock; the work still running fails fast.
        task.expirationHandler = {
            session.usingStore { reported("refresh expired: suspend") { try session.openedCore?.suspend() } }
            complete(false)
        }
        scheduleRefresh()
        let (center, options) = (self.center, presentOptions)
        Task {
            guard let core = await session.core() else { return complete(false) }
            let report = await session.withStoreOpen(core, suspendAfter: true, site: "refresh") {
                await QPReconciler.refresh(core: core, center: center, options: options)
            }
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
