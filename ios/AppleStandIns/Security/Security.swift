// COMPILE-TIME STAND-IN for the part of Apple's Security framework (the
// Keychain) that the README's code uses (Linux only; see ../README.md), so
// the README's Keychain snippet (ios/Snippets) is compiled as written. The
// names and signatures are Apple's; CFDictionary, CFString and CFTypeRef are
// the Swift types they bridge to, so `x as CFDictionary` reads as on iOS.
// Items are kept in memory, by class, account and access group.
import Foundation

public typealias OSStatus = Int32
public typealias CFDictionary = [String: Any]
public typealias CFString = String
public typealias CFTypeRef = AnyObject

public let errSecSuccess: OSStatus = 0
public let errSecItemNotFound: OSStatus = -25300
public let errSecDuplicateItem: OSStatus = -25299

public let kSecClass: CFString = "class"
public let kSecClassGenericPassword: CFString = "genp"
public let kSecAttrAccount: CFString = "acct"
public let kSecAttrService: CFString = "svce"
public let kSecAttrAccessGroup: CFString = "agrp"
public let kSecAttrAccessible: CFString = "pdmn"
public let kSecAttrAccessibleAfterFirstUnlock: CFString = "ck"
public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString = "cku"
public let kSecValueData: CFString = "v_Data"
public let kSecReturnData: CFString = "r_Data"
public let kSecMatchLimit: CFString = "m_Limit"
public let kSecMatchLimitOne: CFString = "m_LimitOne"

private let lock = NSLock()
private var items: [String: Data] = [:]

private func key(_ q: CFDictionary) -> String {
    [kSecClass, kSecAttrService, kSecAttrAccount, kSecAttrAccessGroup].map { "\(q[$0] ?? "")" }.joined(separator: "\u{1f}")
}

// Discardable, as C functions are when Swift imports them.
@discardableResult
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    guard let data = attributes[kSecValueData] as? Data else { return -50 } // errSecParam
    return lock.withLock {
        if items[key(attributes)] != nil { return errSecDuplicateItem }
        items[key(attributes)] = data
        return errSecSuccess
    }
}

@discardableResult
public func SecItemDelete(_ query: CFDictionary) -> OSStatus {
    lock.withLock { items.removeValue(forKey: key(query)) == nil ? errSecItemNotFound : errSecSuccess }
}

@discardableResult
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    guard let data = lock.withLock({ items[key(query)] }) else { return errSecItemNotFound }
    result?.pointee = NSData(data: data)
    return errSecSuccess
}
