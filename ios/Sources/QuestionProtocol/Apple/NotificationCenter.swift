// Apple glue: UNUserNotificationCenter as the flows' notification center.
// Kept to the calls the flows need; the decisions are the core's.
#if canImport(UserNotifications)
import Foundation
import UserNotifications

/// `UNUserNotificationCenter` as a `QPNotificationCenter`. Categories are
/// merged, never replaced wholesale. Notifications are identified by
/// question id (the push's `apns-collapse-id` is the request identifier).
public final class QPUserNotificationCenter: QPNotificationCenter {
    private let center: UNUserNotificationCenter
    public init(_ center: UNUserNotificationCenter = .current()) { self.center = center }

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

    /// The app's own categories, registered beside this library's: call it
    /// instead of `setNotificationCategories`, which replaces the whole set,
    /// and with it the buttons of the questions on screen. The app's set
    /// replaces what the app registered before; the questions' categories
    /// (the core knows them by identifier) stay. Call it at launch, before
    /// questions arrive where possible: it reads and writes the set as the
    /// extension does, and iOS offers no way to do both at once. In this
    /// process it waits for the library's own changes (a question shown, the
    /// launch's reconcile), never racing them.
    public func setAppCategories(_ categories: Set<UNNotificationCategory>, completion: (() -> Void)? = nil) {
        let center = self.center
        CategoryUpdates.enqueue { written in
            center.getNotificationCategories { existing in
                let questions = existing.filter { questionIdOfCategory(category: $0.identifier) != nil }
                center.setNotificationCategories(questions.union(categories))
                written()
                completion?()
            }
        }
    }

    /// Questions on screen, by identifier: the core says which
    /// notifications are this library's questions (a push as it came, a
    /// sealed one the extension showed, one the glue posted).
    public func questionNotificationIds(_ completion: @escaping ([String]) -> Void) {
        center.getDeliveredNotifications { delivered in
            completion(delivered.compactMap { n in
                guard let shown = Self.shown(n), !shown.resolution else { return nil }
                return n.request.identifier
            })
        }
    }

    /// Every delivered notification that is this library's (questions,
    /// resolutions, and the fallback over a push the phone could not use),
    /// known by its userInfo's keys alone: no value can keep one on screen.
    public func removeAllQuestionNotifications(_ completion: @escaping () -> Void) {
        center.getDeliveredNotifications { delivered in
            let ours = delivered.filter { n in
                isLibraryNotification(userInfoKeys: n.request.content.userInfo.keys.compactMap { $0 as? String })
            }.map(\.request.identifier)
            if !ours.isEmpty { self.center.removeDeliveredNotifications(withIdentifiers: ours) }
            completion()
        }
    }

    static func shown(_ n: UNNotification) -> ShownNotification? {
        shownNotification(userInfoJson: userInfoJSON(n.request.content.userInfo))
    }

    public func remove(identifiers: [String]) {
        if !identifiers.isEmpty { center.removeDeliveredNotifications(withIdentifiers: identifiers) }
    }

    public func post(_ content: QPNotificationContent, identifier: String) {
        let c = Self.content(content, base: nil)
        c.userInfo = postedUserInfo(questionId: identifier, resolution: content.passive)
        center.add(UNNotificationRequest(identifier: identifier, content: c, trigger: nil), withCompletionHandler: nil)
    }

    /// The system content for `plain`, over `base` (the push's own content,
    /// whose userInfo is kept) when given.
    public static func content(_ plain: QPNotificationContent, base: UNNotificationContent?) -> UNMutableNotificationContent {
        let c = (base?.mutableCopy() as? UNMutableNotificationContent) ?? UNMutableNotificationContent()
        c.title = plain.title
        c.subtitle = plain.subtitle ?? ""
        c.body = plain.body
        c.categoryIdentifier = plain.categoryIdentifier ?? ""
        if let t = plain.threadIdentifier { c.threadIdentifier = t }
        // The app's options (the core's decision), over what the push said.
        let p = plain.presentation
        c.interruptionLevel = Self.level(p.interruptionLevel)
        c.sound = Self.sound(p.sound)
        if let badge = p.badge { c.badge = NSNumber(value: badge) }
        return c
    }

    static func level(_ l: InterruptionLevel) -> UNNotificationInterruptionLevel {
        switch l {
        case .passive: return .passive
        case .active: return .active
        case .timeSensitive: return .timeSensitive
        case .critical: return .critical
        }
    }

    static func sound(_ s: NotificationSound) -> UNNotificationSound? {
        switch s {
        case .default: return .default
        case .silent: return nil
        case let .named(name): return UNNotificationSound(named: UNNotificationSoundName(rawValue: name))
        }
    }

    /// Before iOS 16 (`setBadgeCount` is iOS 16+) the badge is UIApplication's
    /// `applicationIconBadgeNumber`, which an app extension cannot reach: the
    /// app installs this (`QPAppLifecycle.start()` does), and the badge then
    /// follows on iOS 15 too (sign-out's reset, the pending count). Called on
    /// the main queue.
    public static var legacyBadgeSetter: ((Int) -> Void)?

    public func setBadgeCount(_ count: Int) {
        if #available(iOS 16.0, macOS 13.0, *) {
            center.setBadgeCount(count, withCompletionHandler: nil)
        } else if let set = Self.legacyBadgeSetter {
            DispatchQueue.main.async { set(count) }
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

/// A notification arriving while the app is in the foreground: iOS shows it
/// only as the notification center's delegate says (`willPresent`), and
/// nothing when the delegate has no such method.
public enum QPForegroundPresentation {
    /// How a notification of this library shows in the foreground: as it
    /// would in the background, with the presentation the core gave it (a
    /// banner and the list, its sound, the badge; a quiet one, such as a
    /// resolution, in the list only). Nil for another's notification: the
    /// app decides.
    public static func options(for notification: UNNotification) -> UNNotificationPresentationOptions? {
        let content = notification.request.content
        guard isLibraryNotification(userInfoKeys: content.userInfo.keys.compactMap { $0 as? String }) else { return nil }
        var options: UNNotificationPresentationOptions = content.interruptionLevel == .passive ? [.list] : [.banner, .list]
        if content.sound != nil { options.insert(.sound) }
        if content.badge != nil { options.insert(.badge) }
        return options
    }

    /// For the app delegate's `userNotificationCenter(_:willPresent:withCompletionHandler:)`:
    /// this library's notifications shown as `options(for:)` says; every
    /// other one handed to `others` (the app's own rule), or, without it,
    /// not shown (what iOS does without the method).
    public static func willPresent(_ notification: UNNotification,
                                   others: ((UNNotification, @escaping (UNNotificationPresentationOptions) -> Void) -> Void)? = nil,
                                   completionHandler: @escaping (UNNotificationPresentationOptions) -> Void) {
        if let ours = options(for: notification) { return completionHandler(ours) }
        if let others { others(notification, completionHandler) } else { completionHandler([]) }
    }
}

/// A notification's userInfo as JSON text, for the core's decoder.
package func userInfoJSON(_ userInfo: [AnyHashable: Any]) -> String {
    let strings = Dictionary(userInfo.compactMap { k, v in (k as? String).map { ($0, v) } },
                             uniquingKeysWith: { a, _ in a })
    // Handled: a userInfo that is not JSON is no payload of ours ("{}": the core's fallback).
    guard JSONSerialization.isValidJSONObject(strings),
          let data = try? JSONSerialization.data(withJSONObject: strings) else { return "{}" }
    return String(data: data, encoding: .utf8) ?? "{}"
}
#endif
