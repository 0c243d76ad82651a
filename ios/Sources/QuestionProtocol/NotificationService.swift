// Apple glue: UNNotificationServiceExtension and the answer handler, mapped
// onto the platform-neutral flows in ServiceFlow.swift. Compiled only where
// UserNotifications exists; the rest of the package builds on Linux.
#if canImport(UserNotifications)
import Foundation
import UserNotifications

/// `UNUserNotificationCenter` as a `QPCategoryCenter`: merges, never replaces.
public final class QPUserNotificationCenter: QPCategoryCenter {
    private let center = UNUserNotificationCenter.current()
    public init() {}

    public func categoryIdentifiers(_ completion: @escaping ([String]) -> Void) {
        center.getNotificationCategories { completion($0.map(\.identifier)) }
    }

    public func setCategories(keep: [String], add: IosCategory, _ completion: @escaping () -> Void) {
        center.getNotificationCategories { existing in
            var set = Set(existing.filter { keep.contains($0.identifier) })
            set.insert(Self.category(add))
            self.center.setNotificationCategories(set)
            completion()
        }
    }

    static func category(_ c: IosCategory) -> UNNotificationCategory {
        var actions: [UNNotificationAction] = c.actions.map { a in
            var options: UNNotificationActionOptions = []
            if a.destructive { options.insert(.destructive) }
            if a.authenticationRequired { options.insert(.authenticationRequired) }
            // Never .foreground: answers are handled in the background.
            return UNNotificationAction(identifier: a.identifier, title: a.title, options: options)
        }
        if let t = c.textAction {
            actions.append(UNTextInputNotificationAction(
                identifier: t.identifier, title: t.title,
                options: t.authenticationRequired ? [.authenticationRequired] : [],
                textInputButtonTitle: t.buttonTitle, textInputPlaceholder: t.placeholder))
        }
        return UNNotificationCategory(identifier: c.identifier, actions: actions, intentIdentifiers: [], options: [])
    }
}

/// Subclass this as the extension's principal class and provide `makeCore()`.
open class QPNotificationService: UNNotificationServiceExtension {
    private var contentHandler: ((UNNotificationContent) -> Void)?
    private var best: UNMutableNotificationContent?

    /// The shared core (App Group store, extension mode); nil when it cannot
    /// be opened (locked before first unlock): the push still shows.
    open func makeCore() -> PhoneCore? { nil }

    open override func didReceive(_ request: UNNotificationRequest,
                                  withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void) {
        self.contentHandler = contentHandler
        let content = (request.content.mutableCopy() as? UNMutableNotificationContent) ?? UNMutableNotificationContent()
        best = content
        let json = (try? JSONSerialization.data(withJSONObject: request.content.userInfo))
            .flatMap { String(data: $0, encoding: .utf8) } ?? "{}"
        QPServiceFlow.process(userInfoJSON: json, core: makeCore(), center: QPUserNotificationCenter()) { plain in
            content.title = plain.title
            content.subtitle = plain.subtitle ?? ""
            content.body = plain.body
            if let c = plain.categoryIdentifier { content.categoryIdentifier = c }
            if let t = plain.threadIdentifier { content.threadIdentifier = t }
            self.deliver(content)
        }
    }

    open override func serviceExtensionTimeWillExpire() {
        if let best { deliver(best) }
    }

    private func deliver(_ content: UNNotificationContent) {
        contentHandler?(content)
        contentHandler = nil // exactly once
    }
}

public enum QPNotificationResponseHandler {
    /// From `userNotificationCenter(_:didReceive:withCompletionHandler:)`:
    /// commits, calls the completion handler, then flushes in the background.
    public static func handle(_ response: UNNotificationResponse, core: PhoneCore,
                              completionHandler: @escaping () -> Void) {
        let category = response.notification.request.content.categoryIdentifier
        guard let questionId = QPAnswerFlow.questionId(fromCategory: category) else {
            completionHandler()
            return
        }
        let text = (response as? UNTextInputNotificationResponse)?.userText
        let outcome = QPAnswerFlow.handle(core: core, questionId: questionId,
                                          actionIdentifier: response.actionIdentifier,
                                          typedText: text, completion: completionHandler)
        if case .committed = outcome { QPAnswerFlow.flushInBackground(core: core) }
    }
}
#endif
