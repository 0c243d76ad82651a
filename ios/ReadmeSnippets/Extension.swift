// The README's Notification Service Extension, compiled. It imports only
// the extension-safe product; ios/run-tests also compiles it with the
// application-extension restriction.
import Foundation
import QuestionProtocol

// snippet: ios-extension
// The Notification Service Extension target links the QuestionProtocol product only.
// Info.plist: NSExtension > NSExtensionPrincipalClass = $(PRODUCT_MODULE_NAME).NotificationService
final class NotificationService: QPNotificationService {
    override func makeCore() -> PhoneCore? {
        URLSessionTransport.install()   // the core's requests go through URLSession (ephemeral), as the app's
        // The app's session, read from the shared store: who is signed in (nobody: a neutral
        // notification, nothing recorded) and this device's current id (for sealed pushes).
        // openHere also keeps the store's files readable on the lock screen (QPDataProtection).
        do {
            return try QPSession.openHere(storePath: AppGroup.storePath, mode: .extension, vault: Keychain.shared,
                                          languages: Locale.preferredLanguages, deviceKeys: KeychainDeviceKey())
        } catch {   // before the first unlock after a restart, say: the push shows as it came
            reportGlueFailure(site: "extension: open the session", error: "\(error)")
            return nil
        }
    }
}
// end snippet
