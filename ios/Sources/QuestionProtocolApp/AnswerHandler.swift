// Apple glue, app only: an answer given on the lock screen
// (`userNotificationCenter(_:didReceive:withCompletionHandler:)`). It holds
// a background task through `UIApplication.shared`, which app extensions
// may not use, so it lives in the app product (QuestionProtocolApp), never
// in the one the Notification Service Extension links.
#if canImport(UserNotifications)
import Foundation
import UserNotifications
import QuestionProtocol
#if canImport(UIKit)
import UIKit
#endif

@available(iOSApplicationExtension, unavailable)
public enum QPNotificationResponseHandler {
    /// Commits the answer durably, sends it within `flushWithin` seconds
    /// under a background task assertion, then calls `completionHandler`
    /// exactly once (iOS may suspend the app as soon as it runs). An app
    /// launched in the background for this suspends its store before
    /// completing. A notification of ours without buttons (a resolution,
    /// the fallback of a push that could not be shown) completes at once as
    /// `.notAnAnswer` with the question it names (the core reads it from the
    /// notification): the deep link. Not ours (another category, no
    /// question named): completes at once, nil.
    /// With `uploads`, the answer goes to the system as a background upload
    /// (finished after suspension, reported to `uploads`, see
    /// `QPBackgroundAnswers`) and completion follows the hand-over; an answer
    /// that cannot be handed over (one to check against the server first)
    /// takes the usual path.
    /// The store is opened for this and closed again (launched in the
    /// background) through `session`, the one the app's lifecycle uses: a
    /// return to the foreground meanwhile keeps it open, as does other
    /// background work still using it (`QPSession.openForBackgroundWork`).
    /// Returns the work, for callers that want to await it.
    @discardableResult
    public static func handle(_ response: UNNotificationResponse, session: QPSession,
                              flushWithin: TimeInterval = QPBudgets.answerDelivery,
                              uploads: QPBackgroundAnswers? = nil,
                              completionHandler: @escaping () -> Void) -> Task<QPAnswerOutcome?, Never> {
        let category = response.notification.request.content.categoryIdentifier
        guard let questionId = QPAnswerFlow.questionId(fromCategory: category) else {
            let named = questionIdOfNotification(userInfoJson: userInfoJSON(response.notification.request.content.userInfo))
            completionHandler()
            return Task { named.map { QPAnswerOutcome.notAnAnswer(questionId: $0) } }
        }
        let text = (response as? UNTextInputNotificationResponse)?.userText
        #if canImport(UIKit)
        let app = UIApplication.shared
        let inBackground = app.applicationState == .background
        let ended = Once()
        var task = UIBackgroundTaskIdentifier.invalid
        let endTask = { if ended.claim() { app.endBackgroundTask(task) } }
        task = app.beginBackgroundTask(withName: "qp.answer", expirationHandler: { endTask() })
        #else
        let inBackground = false
        let endTask = {}
        #endif
        let content = response.notification.request.content
        return Task {
            guard let core = await session.core() else {
                completionHandler()
                endTask()
                return nil
            }
            let store = session.openForBackgroundWork(core, suspendAfter: inBackground, site: "answer")
            // The store closed (if it is the last use, in the background)
            // before the completion handler: iOS may suspend the app then.
            let complete = {
                store.end()
                completionHandler()
            }
            defer {
                store.end()
                endTask()
            }
            // iOS shows a push that skipped the extension as it came, with
            // the buttons of whatever category it names: an action counts
            // only from a notification showing the question this phone holds
            // (a forged push must not answer the real question); otherwise
            // the app opens to show it.
            let shown = reported("answer check") {
                try core.showsHeldQuestion(questionId: questionId, subtitle: content.subtitle, body: content.body)
            } ?? false
            if !shown {
                complete()
                return .needsApp(message: core.openAppToFinish(), questionId: questionId)
            }
            if let uploads = uploads {
                let outcome = QPAnswerFlow.commit(core: core, questionId: questionId,
                                                  actionIdentifier: response.actionIdentifier, typedText: text)
                // Handed over with the others only if this answer was: one
                // left behind (its question known only from a plain push)
                // is sent now, as without `uploads`.
                if case .committed = outcome, uploads.handOver().contains(where: { $0.questionId == questionId }) {
                    complete()
                    return outcome
                }
            }
            return await QPAnswerFlow.answer(core: core, questionId: questionId,
                                             actionIdentifier: response.actionIdentifier,
                                             typedText: text, flushWithin: flushWithin, completion: complete)
        }
    }

    /// Over a core: through `uploads`' session when it holds this core (the
    /// app's, shared with its lifecycle), else a session of its own (not
    /// coordinated with the lifecycle's resume and suspend).
    @discardableResult
    public static func handle(_ response: UNNotificationResponse, core: PhoneCore,
                              flushWithin: TimeInterval = QPBudgets.answerDelivery,
                              uploads: QPBackgroundAnswers? = nil,
                              completionHandler: @escaping () -> Void) -> Task<QPAnswerOutcome?, Never> {
        let session = uploads.flatMap { $0.session.openedCore === core ? $0.session : nil } ?? QPSession(core: core)
        return handle(response, session: session, flushWithin: flushWithin, uploads: uploads,
                      completionHandler: completionHandler)
    }
}
#endif
