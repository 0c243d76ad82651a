// Apple glue: an answer given on the lock screen
// (`userNotificationCenter(_:didReceive:withCompletionHandler:)`).
#if canImport(UserNotifications)
import Foundation
import UserNotifications
#if canImport(UIKit)
import UIKit
#endif

public enum QPNotificationResponseHandler {
    /// Commits the answer durably, sends it within `flushWithin` seconds
    /// under a background task assertion, then calls `completionHandler`
    /// exactly once (iOS may suspend the app as soon as it runs). An app
    /// launched in the background for this suspends its store before
    /// completing. Not one of ours (another category): completes at once.
    /// Returns the work, for callers that want to await it.
    @discardableResult
    public static func handle(_ response: UNNotificationResponse, core: PhoneCore, flushWithin: TimeInterval = 8,
                              completionHandler: @escaping () -> Void) -> Task<QPAnswerOutcome?, Never> {
        let category = response.notification.request.content.categoryIdentifier
        guard let questionId = QPAnswerFlow.questionId(fromCategory: category) else {
            completionHandler()
            return Task { nil }
        }
        let text = (response as? UNTextInputNotificationResponse)?.userText
        #if canImport(UIKit)
        let app = UIApplication.shared
        let inBackground = app.applicationState == .background
        let ended = Once()
        var task = UIBackgroundTaskIdentifier.invalid
        let end = { if ended.claim() { app.endBackgroundTask(task) } }
        task = app.beginBackgroundTask(withName: "qp.answer", expirationHandler: { end() })
        #endif
        return Task {
            let outcome = await QPAnswerFlow.answer(core: core, questionId: questionId,
                                                    actionIdentifier: response.actionIdentifier,
                                                    typedText: text, flushWithin: flushWithin) {
                #if canImport(UIKit)
                if inBackground { try? core.suspend() }
                #endif
                completionHandler()
            }
            #if canImport(UIKit)
            end()
            #endif
            return outcome
        }
    }
}
#endif
