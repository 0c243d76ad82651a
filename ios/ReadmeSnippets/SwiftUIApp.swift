// The docs' SwiftUI app, compiled: the AppDelegate of App.swift handed to
// SwiftUI (on Linux against the SwiftUI stand-in).
#if canImport(SwiftUI) && canImport(UIKit)
import QuestionProtocol
import SwiftUI
import UIKit

// snippet: ios-swiftui
// Marked @main in the app. SwiftUI makes the AppDelegate above and calls its launch, notification and
// background-upload callbacks as UIKit would: everything of the library stays in it.
struct ExampleApp: App {
    @UIApplicationDelegateAdaptor(AppDelegate.self) var appDelegate
    var body: some Scene {
        WindowGroup { QuestionsScreen(session: appDelegate.session) }
    }
}
// end snippet

/// The app's own screen (its feed of questions, over the session).
struct QuestionsScreen: View {
    let session: QPSession
    var body: some View { Text(session.openedCore == nil ? "Opening…" : "Questions") }
}
#endif
