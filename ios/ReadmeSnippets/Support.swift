// What the README's code takes from the app itself (not shown there): where
// the App Group store is. A minimal version, so the snippets compile as
// written.
import Foundation
import QuestionProtocol
#if canImport(UserNotifications)
import UserNotifications

/// The app's own notification categories (its reminders, say).
enum AppCategories {
    static let all: Set<UNNotificationCategory> = [
        UNNotificationCategory(identifier: "com.example.reminder",
                               actions: [UNNotificationAction(identifier: "snooze", title: "Snooze")], intentIdentifiers: []),
    ]
}
#endif

enum AppGroup {
    // containerURL(forSecurityApplicationGroupIdentifier:) in an app; a folder the tests set here.
    static var container = FileManager.default.temporaryDirectory
    static var storePath: String { container.appendingPathComponent("qp.sqlite").path }
    /// The bodies of background uploads (the app's own container is enough: only the app uploads).
    static var uploadsFolder: URL { container.appendingPathComponent("qp-uploads") }
}


/// The app's own background sessions, if it has any (downloads, say): their
/// events go to the app's code, never to the library's.
enum AppDownloads {
    static var handled: [String] = []
    static func handleEvents(identifier: String, completionHandler: @escaping () -> Void) {
        handled.append(identifier)
        completionHandler()
    }
}
