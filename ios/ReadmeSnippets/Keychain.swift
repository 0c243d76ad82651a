// The README's Keychain and sign-in code ("Connect your phone"), compiled.
// The regions between `// snippet: NAME` and `// end snippet` are the
// README's Swift blocks, verbatim (scripts/check-snippets compares them).
import Foundation
import Security
import QuestionProtocol
#if canImport(UIKit)
import UIKit
#endif

// snippet: ios-keychain
final class Keychain: TokenVault, @unchecked Sendable {   // the core's tokens, one Keychain item each
    static let shared = Keychain()
    let group = "TEAMID.com.example.shared"   // Keychain Sharing, in app and extension
    private func query(_ userId: String) -> [String: Any] {
        [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "qp",
         kSecAttrAccount as String: userId, kSecAttrAccessGroup as String: group]
    }
    func saveToken(userId: String, token: String) throws {
        SecItemDelete(query(userId) as CFDictionary)
        var add = query(userId); add[kSecValueData as String] = Data(token.utf8)
        add[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlock   // readable by the extension on the lock screen
        let status = SecItemAdd(add as CFDictionary, nil)
        if status != errSecSuccess { throw SecureStoreError.Failed(reason: "Keychain status \(status)") }
    }
    func token(userId: String) -> String? {
        var read = query(userId); read[kSecReturnData as String] = true; read[kSecMatchLimit as String] = kSecMatchLimitOne
        var out: CFTypeRef?
        guard SecItemCopyMatching(read as CFDictionary, &out) == errSecSuccess, let data = out as? Data else { return nil }
        return String(data: data, encoding: .utf8)
    }
    func forgetToken(userId: String) { SecItemDelete(query(userId) as CFDictionary) }
}
// end snippet

// snippet: ios-device-key
final class KeychainDeviceKey: DeviceKeyStore, @unchecked Sendable {   // the device's end-to-end key (32 bytes)
    private let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "qp.device-key",
                                        kSecAttrAccount as String: "device", kSecAttrAccessGroup as String: Keychain.shared.group]
    func loadDeviceKey() -> Data? {
        var read = query; read[kSecReturnData as String] = true; read[kSecMatchLimit as String] = kSecMatchLimitOne
        var out: CFTypeRef?
        return SecItemCopyMatching(read as CFDictionary, &out) == errSecSuccess ? out as? Data : nil
    }
    func saveDeviceKey(key: Data) -> Bool {
        SecItemDelete(query as CFDictionary)
        var add = query; add[kSecValueData as String] = key
        // Read by the extension on the lock screen; ThisDeviceOnly: never in a backup, never on another phone
        // (a restored phone makes a new key, registered at its next sign-in).
        add[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        return SecItemAdd(add as CFDictionary, nil) == errSecSuccess
    }
}
// end snippet

#if canImport(UIKit)
// snippet: ios-sign-in
enum AccountScreen {   // the app's account screen: sign in with the scanned pairing link, sign out
    static func signIn(_ core: PhoneCore, scanned: String) async throws -> PairedAccount {
        // No push token in hand: the one the OS handed over (before pairing too) is registered with it.
        // Its APNs environment is the signing profile's aps-environment entitlement, not the build configuration.
        try await core.signIn(linkOrCode: scanned, deviceLabel: UIDevice.current.name,
                              device: DeviceRegistration(platform: .ios, appId: Bundle.main.bundleIdentifier,
                                                         publicKey: try core.devicePublicKey(),   // sealed pushes
                                                         apnsEnvironment: QPApnsEnvironment.current()))
    }
    static func signOut(_ core: PhoneCore) async throws -> String? {
        let unsent = try core.unsentAnswers()   // ask first if > 0: signing out drops what cannot be sent
        // Tries to send them, erases the store, forgets the token, and removes the library's notifications and
        // the badge (a shared phone: the next person sees none of the previous one's questions).
        let report = try await QPAccount.signOut(core: core)
        if report.unsentAnswersDropped > 0 { return "\(report.unsentAnswersDropped) of \(unsent) answers were not sent" }
        if report.serverPending { return "Signed out. This phone may get notifications until it is next online." }
        return nil
    }
}
// end snippet
#endif
