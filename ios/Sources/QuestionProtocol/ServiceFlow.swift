// The Notification Service Extension's flow, without UserNotifications: it
// runs the same on Linux (tests) and on Apple platforms, where
// NotificationService.swift maps it onto UNNotificationServiceExtension.
import Foundation

/// What the extension hands back to the system, as plain values.
public struct QPNotificationContent: Equatable {
    public var title: String
    public var subtitle: String?
    public var body: String
    /// The per-question category; nil for the fallback (a tap opens the app).
    public var categoryIdentifier: String?
    public var threadIdentifier: String?
    public var questionId: String?
}

/// The notification center's category API (`getNotificationCategories`,
/// `setNotificationCategories`), behind a protocol.
public protocol QPCategoryCenter: AnyObject {
    func categoryIdentifiers(_ completion: @escaping ([String]) -> Void)
    /// Registers exactly `keep` (identifiers already registered) plus `add`.
    func setCategories(keep: [String], add: IosCategory, _ completion: @escaping () -> Void)
}

/// Reads `aps.alert.title` / `body` out of a payload, for the fallback.
func alertTexts(_ json: String) -> (String?, String?) {
    guard let data = json.data(using: .utf8),
          let obj = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
          let aps = obj["aps"] as? [String: Any] else { return (nil, nil) }
    if let alert = aps["alert"] as? [String: Any] {
        return (alert["title"] as? String, alert["body"] as? String)
    }
    return (nil, aps["alert"] as? String)
}

public enum QPServiceFlow {
    /// The plain notification shown when a payload cannot be decoded, in
    /// the person's language.
    public static func fallbackContent(userInfoJSON: String,
                                       languages: [String] = Locale.preferredLanguages) -> QPNotificationContent {
        let (title, body) = alertTexts(userInfoJSON)
        let f = fallbackNotification(title: title, body: body, languages: languages)
        return QPNotificationContent(title: f.title, subtitle: nil, body: f.body,
                                     categoryIdentifier: nil, threadIdentifier: nil, questionId: nil)
    }

    /// Decodes the push through the core (recording it in the shared store
    /// when `core` is available), registers the question's category merged
    /// with what is registered, reads the set back, then calls `deliver`
    /// exactly once. An undecodable payload still delivers a notification.
    public static func process(userInfoJSON: String,
                               core: PhoneCore?,
                               center: QPCategoryCenter,
                               requireUnlockForDanger: Bool = false,
                               maxCategories: UInt32 = maxIosCategories(),
                               languages: [String] = Locale.preferredLanguages,
                               deliver: @escaping (QPNotificationContent) -> Void) {
        let decoded: DecodedPush
        do {
            decoded = try core?.receiveApns(json: userInfoJSON) ?? decodeApnsPayload(json: userInfoJSON)
        } catch {
            deliver(fallbackContent(userInfoJSON: userInfoJSON, languages: languages))
            return
        }
        guard case let .question(question) = decoded else {
            // A resolution is silent; nothing to show.
            deliver(fallbackContent(userInfoJSON: userInfoJSON, languages: languages))
            return
        }
        // In the person's language: the core's (it was created with them), or these.
        let n = core?.iosNotification(question: question, requireUnlockForDanger: requireUnlockForDanger)
            ?? iosNotification(question: question, requireUnlockForDanger: requireUnlockForDanger, languages: languages)
        let content = QPNotificationContent(title: n.title, subtitle: n.subtitle, body: n.body,
                                            categoryIdentifier: n.category.identifier,
                                            threadIdentifier: n.threadId, questionId: question.id)
        center.categoryIdentifiers { registered in
            // The core plans from what its store knows; without a store,
            // from nothing (ours are then kept up to the bound).
            let plan = (try? core?.planIosCategories(registered: registered, newCategory: n.category.identifier,
                                                     now: Date(), max: maxCategories))
                ?? planIosCategories(registered: registered, newCategory: n.category.identifier,
                                     known: [], now: Date(), max: maxCategories)
            center.setCategories(keep: plan.keep.filter { $0 != n.category.identifier }, add: n.category) {
                // Read the set back: on some iOS versions a category set in the
                // extension is not active yet when the content is handed over.
                center.categoryIdentifiers { _ in deliver(content) }
            }
        }
    }
}

/// What became of a notification action.
public enum QPAnswerOutcome: Equatable {
    /// Committed durably; it will be sent (now or when online).
    case committed(CommittedAnswer)
    /// Not an answer (the default tap, a dismiss): open the app as usual.
    case notAnAnswer
    /// Needs the app: e.g. typed text over the limit (kept as a draft there).
    case needsApp(message: String)
}

public enum QPAnswerFlow {
    /// The question id of one of our category identifiers (the core decides).
    public static func questionId(fromCategory category: String) -> String? {
        questionIdOfCategory(category: category)
    }

    /// Commits the answer before calling `completion` (so the system may
    /// suspend the app right after), then returns; call `flushInBackground`
    /// next.
    public static func handle(core: PhoneCore, questionId: String, actionIdentifier: String,
                              typedText: String?, completion: () -> Void) -> QPAnswerOutcome {
        defer { completion() }
        do {
            return .committed(try core.answerAction(questionId: questionId, actionId: actionIdentifier, text: typedText))
        } catch let QpError.Action(kind, message, _) {
            return kind == .unknownAction ? .notAnAnswer : .needsApp(message: message)
        } catch {
            return .needsApp(message: "\(error)")
        }
    }

    /// Sends what is queued; failures stay queued for the next try.
    @discardableResult
    public static func flushInBackground(core: PhoneCore) -> Task<FlushReport?, Never> {
        Task.detached { try? await core.flush() }
    }
}
