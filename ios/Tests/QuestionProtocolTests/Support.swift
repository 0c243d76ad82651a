// Test support: named checks inside XCTest cases, JSON helpers, and the
// in-memory category center.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif
import XCTest
import QuestionProtocol

/// Named checks inside one XCTest case: a vector suite runs hundreds of
/// them, each failing with its own name and detail.
final class Runner {
    var passed = 0
    var failed = 0

    func check(_ name: String, _ ok: Bool, _ detail: @autoclosure () -> String = "",
               file: StaticString = #filePath, line: UInt = #line) {
        if ok {
            passed += 1
        } else {
            failed += 1
            XCTFail("\(name): \(detail())", file: file, line: line)
        }
    }

    /// A suite that ran nothing is a failure too (a missing vector folder).
    func expectAtLeast(_ n: Int, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertGreaterThanOrEqual(passed + failed, n, "too few checks ran", file: file, line: line)
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

// ---- the e2e server (ios/run-tests starts it and exports QP_E2E_*) ----

func env(_ k: String) -> String { ProcessInfo.processInfo.environment[k] ?? "" }

/// The end-to-end cases need the server ios/run-tests starts; by hand
/// (`swift test` alone) they are skipped, and run-tests fails on any skip.
func requireServer() throws {
    if env("QP_E2E_URL").isEmpty {
        throw XCTSkip("no qp server: run ios/run-tests, which starts one and exports QP_E2E_*")
    }
    // The phone's requests go through URLSession, as in an app: installed
    // once per process, as an app does (FoundationNetworking aborts when a
    // session that saw a failed TLS handshake is deallocated: _MultiHandle
    // "deallocated with non-zero retain count").
    _ = transportInstalled
}

/// The process's transport, kept alive here as well.
let installedTransport = URLSessionTransport()
private let transportInstalled: Void = setHttpTransport(transport: installedTransport)

/// One HTTP exchange with the e2e server: status and JSON body.
func http(_ method: String, _ path: String, token: String, body: Any? = nil) async throws -> (Int, [String: Any]) {
    var req = URLRequest(url: URL(string: env("QP_E2E_URL") + path)!)
    req.httpMethod = method
    req.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
    if let body {
        req.setValue("application/json", forHTTPHeaderField: "Content-Type")
        req.httpBody = try JSONSerialization.data(withJSONObject: body)
    }
    let (data, resp) = try await URLSession.shared.data(for: req)
    let json = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
    return ((resp as? HTTPURLResponse)?.statusCode ?? 0, json)
}

/// The agent asks a direct question of the e2e user; returns its JSON text.
func askQuestion(_ prompt: String) async throws -> (id: String, json: String) {
    let (status, q) = try await http("POST", "/api/agent/rooms/OPS123/questions", token: env("QP_E2E_AGENT_TOKEN"), body: [
        "prompt": prompt, "context": "Build #4821", "target_user_id": env("QP_E2E_USER"),
        "options": [["value": "approve", "label": "Approve", "style": "primary"],
                    ["value": "deny", "label": "Deny", "style": "danger"]],
    ])
    XCTAssertEqual(status, 201, "\(q)")
    return (q["id"] as? String ?? "", canon(q))
}

/// The question as the server has it now (resolved or not), as JSON text.
func serverQuestion(_ id: String) async throws -> (state: String, json: String) {
    let (status, q) = try await http("GET", "/api/agent/questions/\(id)", token: env("QP_E2E_AGENT_TOKEN"))
    XCTAssertEqual(status, 200, "\(q)")
    return (q["state"] as? String ?? "", canon(q))
}

/// A loopback port that takes connections and never answers: a server that
/// hangs (the socket stays open for the test process's life).
func hangingServerURL() -> String {
    #if canImport(Glibc)
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
    let fd = socket(AF_INET, SOCK_STREAM, 0)
    #endif
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = 0
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
    _ = listen(fd, 16)
    _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
    return "http://127.0.0.1:\(UInt16(bigEndian: addr.sin_port))"
}
