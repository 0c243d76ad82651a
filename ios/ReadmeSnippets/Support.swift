// What the README's code takes from the app itself (not shown there): where
// the App Group store is, the account pairing returned, the device key's
// Keychain item. Minimal versions, so the snippets compile as written.
import Foundation
import QuestionProtocol

enum AppGroup {
    static let container = FileManager.default.temporaryDirectory   // containerURL(forSecurityApplicationGroupIdentifier:)
    static var storePath: String { container.appendingPathComponent("qp.sqlite").path }
    static var serverURL = "https://qp.example.com"
    static var userId = "usr_example"
    static var deviceId: String?
}

/// The device key, in the same Keychain access group as the token.
final class KeychainDeviceKey: DeviceKeyStore, @unchecked Sendable {
    private static var key: Data?
    func loadDeviceKey() -> Data? { Self.key }
    func saveDeviceKey(key: Data) -> Bool { Self.key = key; return true }
}
