// Test support: a tiny runner, JSON helpers, and the in-memory category center.
import Foundation
import QuestionProtocol

final class Runner {
    var passed = 0
    var failed: [String] = []

    func check(_ name: String, _ ok: Bool, _ detail: @autoclosure () -> String = "") {
        if ok { passed += 1 } else { failed.append("\(name): \(detail())") }
    }

    func finish() -> Never {
        for f in failed { print("FAIL \(f)") }
        print("\(passed) passed, \(failed.count) failed")
        exit(failed.isEmpty ? 0 : 1)
    }
}

/// Canonical JSON text of a value (sorted keys), to compare JSON by value.
func canon(_ v: Any?) -> String {
    guard let v = v, !(v is NSNull) else { return "null" }
    guard let d = try? JSONSerialization.data(withJSONObject: v, options: [.sortedKeys, .fragmentsAllowed]) else {
        return "<unserializable \(v)>"
    }
    return String(data: d, encoding: .utf8)!
}

func parse(_ s: String) -> Any? {
    try? JSONSerialization.jsonObject(with: Data(s.utf8), options: [.fragmentsAllowed])
}

func text(_ v: Any?) -> String { canon(v) }

/// Every key of `expected` equals the same key of `actual`; nil when so.
func subsetMismatch(_ actual: [String: Any], _ expected: [String: Any]) -> String? {
    for (k, want) in expected where canon(actual[k]) != canon(want) {
        return "\(k): expected \(canon(want)), got \(canon(actual[k]))"
    }
    return nil
}

func iso(_ s: String) -> Date {
    let f = ISO8601DateFormatter()
    return f.date(from: s)!
}

func vectors(_ folder: String) -> [(String, [String: Any])] {
    let root = ProcessInfo.processInfo.environment["QP_VECTORS"]!
    let dir = URL(fileURLWithPath: root).appendingPathComponent(folder)
    let files = try! FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".json") }.sorted()
    var out: [(String, [String: Any])] = []
    for f in files {
        let doc = parse(try! String(contentsOf: dir.appendingPathComponent(f), encoding: .utf8)) as! [String: Any]
        for v in doc["vectors"] as! [[String: Any]] {
            out.append(("\(f): \(v["name"] as! String)", v))
        }
    }
    return out
}

/// `setNotificationCategories` semantics in memory: the set is replaced.
final class InMemoryCategoryCenter: QPCategoryCenter {
    var registered: [String]
    init(_ registered: [String]) { self.registered = registered }
    func categoryIdentifiers(_ completion: @escaping ([String]) -> Void) { completion(registered) }
    func setCategories(keep: [String], add: IosCategory, _ completion: @escaping () -> Void) {
        registered = registered.filter { keep.contains($0) } + [add.identifier]
        completion()
    }
}

final class StaticToken: TokenProvider, @unchecked Sendable {
    let value: String?
    init(_ value: String?) { self.value = value }
    func token() -> String? { value }
}

/// The app's Keychain, in memory: pairing saves the token here and the
/// phone's token provider reads it back.
final class FakeKeychain: SecureStore, TokenProvider, @unchecked Sendable {
    private let lock = NSLock()
    private var saved: [String: String] = [:]
    func saveToken(userId: String, token: String) throws {
        lock.lock(); defer { lock.unlock() }
        saved[userId] = token
    }
    func token(for user: String) -> String? {
        lock.lock(); defer { lock.unlock() }
        return saved[user]
    }
    func token() -> String? {
        lock.lock(); defer { lock.unlock() }
        return saved.values.first
    }
}

func styleName(_ s: OptionStyle) -> String {
    switch s {
    case .primary: return "primary"
    case .danger: return "danger"
    case .default: return "default"
    }
}

func stateName(_ s: QuestionState) -> String {
    switch s {
    case .pending: return "pending"
    case .answered: return "answered"
    case .expired: return "expired"
    case .cancelled: return "cancelled"
    }
}

func state(_ s: String) -> QuestionState {
    ["pending": .pending, "answered": .answered, "expired": .expired, "cancelled": .cancelled][s]!
}

/// A PushQuestion from compact-question JSON, through the decoder.
func pushQuestion(_ compact: Any) throws -> PushQuestion {
    guard case let .question(q) = try decodeApnsPayload(json: "{\"qp\":\(canon(compact))}") else {
        throw QpError.InvalidInput(detail: "not a question")
    }
    return q
}

/// The vectors' snake_case code of an error kind (`.tooLong` -> "too_long",
/// `.unsupportedInV1` -> "unsupported_in_v1").
func wire<T>(_ kind: T) -> String {
    var out = ""
    for ch in "\(kind)" {
        if ch.isUppercase { out += "_" + ch.lowercased() } else { out.append(ch) }
    }
    return out
}
