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
        try? PhoneCore(storePath: AppGroup.storePath, mode: .extension,
                       serverUrl: AppGroup.serverURL, userId: AppGroup.userId, tokens: Keychain.shared,
                       languages: Locale.preferredLanguages,
                       deviceKeys: KeychainDeviceKey(), deviceId: AppGroup.deviceId)  // sealed pushes
    }
}
// end snippet
