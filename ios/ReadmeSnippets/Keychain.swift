// The README's Keychain code ("Connect your phone"), compiled. The regions
// between `// snippet: NAME` and `// end snippet` are the README's Swift
// blocks, verbatim (scripts/check-snippets compares them).
import Foundation
import Security
import QuestionProtocol
#if canImport(UIKit)
import UIKit
#endif

// snippet: ios-keychain
final class Keychain: SecureStore, TokenProvider, @unchecked Sendable {
    static let shared = Keychain()
    let group = "TEAMID.com.example.shared"   // Keychain Sharing, in app and extension
    private var query: [String: Any] {
        [kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "qp-token",
         kSecAttrAccessGroup as String: group]
    }
    func saveToken(userId: String, token: String) throws {
        SecItemDelete(query as CFDictionary)
        var add = query; add[kSecValueData as String] = Data(token.utf8)
        add[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlock   // readable by the extension on the lock screen
        let status = SecItemAdd(add as CFDictionary, nil)
        if status != errSecSuccess { throw SecureStoreError.Failed(reason: "Keychain status \(status)") }
    }
    func token() -> String? {
        var read = query; read[kSecReturnData as String] = true; read[kSecMatchLimit as String] = kSecMatchLimitOne
        var out: CFTypeRef?
        guard SecItemCopyMatching(read as CFDictionary, &out) == errSecSuccess, let data = out as? Data else { return nil }
        return String(data: data, encoding: .utf8)
    }
}
// end snippet

#if canImport(UIKit)
func pairExample(scanned: String, apnsHex: String, bundleId: String, keychain: Keychain) async throws -> PairedAccount {
    // snippet: ios-pair
    let account = try await pairDevice(linkOrCode: scanned, serverUrl: nil, deviceLabel: UIDevice.current.name,
                                       device: DeviceRegistration(platform: .ios, pushToken: apnsHex, appId: bundleId,
                                                                  locale: Locale.preferredLanguages.first),
                                       store: keychain)
    // end snippet
    return account
}
#endif
