// What the README's code takes from the app itself (not shown there): where
// the App Group store is, the device key's Keychain item. Minimal versions,
// so the snippets compile as written.
import Foundation
import QuestionProtocol

enum AppGroup {
    // containerURL(forSecurityApplicationGroupIdentifier:) in an app; a folder the tests set here.
    static var container = FileManager.default.temporaryDirectory
    static var storePath: String { container.appendingPathComponent("qp.sqlite").path }
}

/// The device key, in the same Keychain access group as the token.
final class KeychainDeviceKey: DeviceKeyStore, @unchecked Sendable {
    private static let lock = NSLock()
    private static var key: Data?
    func loadDeviceKey() -> Data? { Self.lock.withLock { Self.key } }
    func saveDeviceKey(key: Data) -> Bool { Self.lock.withLock { Self.key = key }; return true }
}
