// The README's app delegate, compiled: the app target links both products.
#if canImport(UIKit)
import Foundation
import QuestionProtocol
import QuestionProtocolApp
import UIKit
import UserNotifications

// snippet: ios-app
// The app target links QuestionProtocol and QuestionProtocolApp.
final class AppDelegate: UIResponder, UIApplicationDelegate, UNUserNotificationCenterDelegate {
    // One per process, from launch (signed in or not); the store in the App Group container is shared with the extension.
    // It opens off the main thread (SQLite may wait for the extension's write lock; iOS ends an app whose launch stalls),
    // and every entry point below waits for it off the main thread. Its core is nil only when the store cannot be opened
    // (the App Group missing from the entitlements, the disk full): session.failure says why; the entry points do nothing.
    lazy var session: QPSession = {
        // The core's requests go through URLSession: the system's proxies, trust store (MDM roots), VPN apply.
        URLSessionTransport.install()
        return QPSession(storePath: AppGroup.storePath, mode: .app, vault: Keychain.shared,
                         languages: Locale.preferredLanguages, deviceKeys: KeychainDeviceKey())
    }()
    // At launch and each return to the foreground, answers the system lost go back to the outbox before it is sent.
    lazy var lifecycle = QPAppLifecycle(session: session, uploads: uploads, refreshIdentifier: "com.example.app.qp-refresh")
    // Answers from notification actions go as background uploads: the system finishes them after suspension
    // and reports to this process or to the one it relaunches; the outbox learns each outcome once.
    // Made with the delegate (the system may report at once); reports before `answers` is set are held for it.
    let uploadSystem = QPSystemUploads()
    lazy var uploads: QPBackgroundAnswers = {
        let answers = QPBackgroundAnswers(session: session, system: uploadSystem, bodies: AppGroup.uploadsFolder)
        uploadSystem.answers = answers
        return answers
    }()

    func application(_ app: UIApplication, didFinishLaunchingWithOptions o: [UIApplication.LaunchOptionsKey: Any]?) -> Bool {
        UNUserNotificationCenter.current().delegate = self
        // The app's own categories, if it has any: beside the questions', never setNotificationCategories (it drops their buttons)
        QPUserNotificationCenter().setAppCategories(AppCategories.all)
        lifecycle.start()   // registers the background refresh, observes background/foreground, refreshes once open
        UNUserNotificationCenter.current().requestAuthorization(options: [.alert, .sound, .badge]) { granted, _ in
            if granted { DispatchQueue.main.async { app.registerForRemoteNotifications() } }   // at every launch
        }
        return true
    }
    // The APNs token, at every launch, before pairing too: kept by the core, registered at sign-in and when it changes
    func application(_ app: UIApplication, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data) {
        let hex = deviceToken.map { String(format: "%02x", $0) }.joined()
        Task { [session] in
            do { _ = try await session.core()?.updatePushToken(pushToken: hex) } catch {   // the next launch tries again
                reportGlueFailure(site: "push token", error: "\(error)")
            }
        }
    }
    // Answers from the lock screen, in the background; a tap opens the question
    func userNotificationCenter(_ c: UNUserNotificationCenter, didReceive r: UNNotificationResponse,
                                withCompletionHandler done: @escaping () -> Void) {
        // Through the session: its store opened and closed in step with the lifecycle (done at once without a store)
        let work = QPNotificationResponseHandler.handle(r, session: session, uploads: uploads, completionHandler: done)
        Task { @MainActor in
            if let questionId = await work.value?.questionToOpen { Router.open(question: questionId) }
        }
    }
    // The system relaunched the app to report background uploads: the library's session, or one of the app's own
    func application(_ app: UIApplication, handleEventsForBackgroundURLSession identifier: String,
                     completionHandler: @escaping () -> Void) {
        guard identifier == QPSystemUploads.identifier else {
            return AppDownloads.handleEvents(identifier: identifier, completionHandler: completionHandler)
        }
        _ = uploads   // the reports' destination, made in this process
        uploadSystem.handleEvents(completionHandler: completionHandler)   // called once every report is recorded
    }
    // In the foreground too: questions show as they would on the lock screen; the app's other notifications, its own rule
    func userNotificationCenter(_ c: UNUserNotificationCenter, willPresent n: UNNotification,
                                withCompletionHandler done: @escaping (UNNotificationPresentationOptions) -> Void) {
        QPForegroundPresentation.willPresent(n, others: { _, show in show([.banner, .list]) }, completionHandler: done)
    }
    // Optional: silent pushes, if the app also sends its own
    func application(_ app: UIApplication, didReceiveRemoteNotification info: [AnyHashable: Any],
                     fetchCompletionHandler done: @escaping (UIBackgroundFetchResult) -> Void) {
        lifecycle.didReceiveRemoteNotification(info, fetchCompletionHandler: done)   // .noData without a store
    }
}
// end snippet

/// The app's navigation (its own): shows one question of the feed.
@MainActor enum Router {
    static var opened: [String] = []
    static func open(question id: String) { opened.append(id) }
}
#endif
