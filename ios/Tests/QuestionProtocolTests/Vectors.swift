// Replays every conformance, payload and presentation vector through the
// generated Swift bindings.
import Foundation
import XCTest
import QuestionProtocol

let defaultNow = "2026-06-27T10:30:00Z"

func contextOf(_ v: [String: Any]) -> (Date, String?) {
    let ctx = v["context"] as? [String: Any]
    let now = iso(ctx?["now"] as? String ?? defaultNow)
    if let ctx, ctx.keys.contains("default_target_user_id") {
        return (now, ctx["default_target_user_id"] as? String)
    }
    return (now, "u_owner")
}

func errorMismatch(_ error: Error, _ want: [String: Any]) -> String? {
    if case let QpError.Validation(field, code, _) = error {
        return canon(["field": field, "code": wire(code)]) == canon(want) ? nil : "error \(field)/\(code), want \(canon(want))"
    }
    return "unexpected error \(error)"
}

func runAsk(_ v: [String: Any]) -> String? {
    let (now, target) = contextOf(v)
    let expect = v["expect"] as! [String: Any]
    do {
        let out = try normalizeAskJson(bodyJson: canon(v["input"]), now: now, defaultTargetUserId: target)
        guard let want = expect["ask"] as? [String: Any] else { return "expected an error, got \(out)" }
        return subsetMismatch(parse(out) as! [String: Any], want)
    } catch {
        guard let want = expect["error"] as? [String: Any] else { return "unexpected error \(error)" }
        return errorMismatch(error, want)
    }
}

func runAnswer(_ v: [String: Any]) -> String? {
    let (now, target) = contextOf(v)
    let expect = v["expect"] as! [String: Any]
    guard let askOut = try? normalizeAskJson(bodyJson: canon(v["ask"]), now: now, defaultTargetUserId: target),
          var q = parse(askOut) as? [String: Any] else { return "the vector's ask is invalid" }
    q["id"] = "q_vector"; q["kind"] = "question"; q["state"] = v["state"] as? String ?? "pending"
    q["answer"] = NSNull(); q["created_at"] = defaultNow
    q["resolved_at"] = v["state"] != nil ? defaultNow : NSNull()
    let at = (v["now"] as? String).map(iso) ?? now
    do {
        let r = try applyAnswerJson(questionJson: canon(q), answerJson: canon(v["submission"]),
                                    responderId: "u_responder", responderName: "Responder", now: at)
        guard expect["error"] == nil else { return "expected an error, got \(r.outcome)" }
        if r.outcome != expect["outcome"] as? String { return "outcome \(r.outcome)" }
        var actual = parse(r.questionJson) as! [String: Any]
        if var a = actual["answer"] as? [String: Any], let w = expect["answer"] as? [String: Any] {
            if canon(a["responder"]) != canon(["id": "u_responder", "display_name": "Responder"]) { return "responder" }
            a = a.filter { w.keys.contains($0.key) }
            actual["answer"] = a
        }
        var want = expect; want.removeValue(forKey: "outcome")
        return subsetMismatch(actual, want)
    } catch {
        guard let want = expect["error"] as? [String: Any] else { return "unexpected error \(error)" }
        return errorMismatch(error, want)
    }
}

func runProtocol(_ r: Runner) {
    let all = vectors("protocol")
    r.check("protocol vectors found", all.count >= 80, "\(all.count)")
    for (name, v) in all {
        var problem: String?
        switch v["kind"] as! String {
        case "ask": problem = runAsk(v)
        case "answer": problem = runAnswer(v)
        case "transition":
            let got = stateTransitionAllowed(from: state(v["from"] as! String), to: state(v["to"] as! String))
            problem = got == (v["allowed"] as! Bool) ? nil : "allowed=\(got)"
        case "question_wire":
            do {
                let out = try normalizeQuestionJson(questionJson: canon(v["input"]))
                problem = subsetMismatch(parse(out) as! [String: Any], (v["expect"] as! [String: Any])["question"] as! [String: Any])
            } catch { problem = "\(error)" }
        default: problem = "unknown kind"
        }
        r.check(name, problem == nil, problem ?? "")
    }
}

func payloadError(_ error: Error, _ expect: [String: Any]) -> String? {
    guard case let QpError.Payload(kind, field, _) = error else { return "unexpected error \(error)" }
    if wire(kind) != expect["error"] as? String { return "kind \(kind)" }
    if let f = expect["field"] as? String, f != field { return "field \(field ?? "nil")" }
    return nil
}

func runPayload(_ r: Runner) {
    let all = vectors("payload")
    r.check("payload vectors found", all.count >= 60, "\(all.count)")
    for (name, v) in all {
        let expect = v["expect"] as! [String: Any]
        var problem: String?
        do {
            switch v["kind"] as! String {
            case "decode_apns", "decode_fcm":
                let decoded: DecodedPush
                if v["kind"] as! String == "decode_fcm" {
                    decoded = try decodeFcmPayload(data: v["input"] as! [String: String])
                } else {
                    decoded = try decodeApnsPayload(json: v["raw"] as? String ?? canon(v["input"]))
                }
                if expect["error"] != nil { problem = "expected an error"; break }
                let want = expect["question"] ?? expect["resolved"]
                let got = decodedPushToJson(push: decoded)
                problem = canon(parse(got)) == canon(want) ? nil : "got \(got)"
            case "encode":
                let q = canon(v["question"])
                let apns = try encodeApnsPayload(questionJson: q)
                let fcm = try encodeFcmPayload(questionJson: q)
                if let w = expect["apns"], canon(parse(apns.json)) != canon(w) { problem = "apns \(apns.json)"; break }
                if let w = expect["fcm_data"] as? [String: Any], let m = subsetMismatch(fcm.data, w) { problem = "fcm \(m)"; break }
                if let w = expect["fcm_qp"], canon(parse(fcm.data["qp"]!)) != canon(w) { problem = "fcm qp"; break }
                if canon(apns.omitted) != canon(expect["omitted"]) || canon(apns.shortened) != canon(expect["shortened"]) { problem = "report" }
            case "encode_resolved":
                let q = canon(v["question"])
                let apns = try encodeApnsResolvedPayload(questionJson: q, me: v["me"] as? String)
                let fcm = try encodeFcmResolvedPayload(questionJson: q)
                if canon(parse(apns.json)) != canon(expect["apns"]) { problem = "apns \(apns.json)" }
                else if fcm.data["type"] != "resolved" { problem = "fcm type" }
            case "encode_budget":
                let q = canon(v["question"])
                let apns = try encodeApnsPayload(questionJson: q)
                let fcm = try encodeFcmPayload(questionJson: q)
                let fcmBytes = fcm.data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
                if apns.json.utf8.count > 4096 || fcmBytes > 4096 { problem = "over 4096 bytes"; break }
                guard case let .question(back) = try decodeApnsPayload(json: apns.json) else { problem = "no question"; break }
                let source = v["question"] as! [String: Any]
                let values = (source["options"] as! [[String: Any]]).map { $0["value"] as! String }
                if back.id != source["id"] as? String || back.options.map(\.value) != values { problem = "lost an id or option" }
                else if canon(apns.shortened) != canon(expect["shortened_apns"]) || canon(fcm.shortened) != canon(expect["shortened_fcm"]) { problem = "shortened \(apns.shortened) \(fcm.shortened)" }
            default: problem = "unknown kind"
            }
        } catch {
            problem = expect["error"] == nil ? "unexpected error \(error)" : payloadError(error, expect)
        }
        r.check(name, problem == nil, problem ?? "")
    }
}

func iosDict(_ n: IosNotification) -> [String: Any] {
    let actions: [[String: Any]] = n.category.actions.map {
        ["identifier": $0.identifier, "title": $0.title, "destructive": $0.destructive,
         "authentication_required": $0.authenticationRequired, "foreground": $0.foreground]
    }
    let text: Any = n.category.textAction.map {
        ["identifier": $0.identifier, "title": $0.title, "button_title": $0.buttonTitle,
         "placeholder": $0.placeholder, "authentication_required": $0.authenticationRequired] as [String: Any]
    } ?? NSNull()
    return ["title": n.title, "subtitle": n.subtitle ?? NSNull(), "body": n.body, "thread_id": n.threadId,
            "category": ["identifier": n.category.identifier, "actions": actions, "text_action": text] as [String: Any]]
}

func androidDict(_ n: AndroidNotification) -> [String: Any] {
    let actions: [[String: Any]] = n.actions.map { a in
        let ri: Any = a.remoteInput.map {
            ["result_key": $0.resultKey, "label": $0.label, "choices": $0.choices,
             "allow_free_form_input": $0.allowFreeFormInput] as [String: Any]
        } ?? NSNull()
        return ["action_id": a.actionId, "title": a.title, "style": styleName(a.style), "remote_input": ri,
                "mutable_intent": a.mutableIntent, "authentication_required": a.authenticationRequired]
    }
    return ["channel_id": n.channelId, "tag": n.tag, "title": n.title, "text": n.text, "sub_text": n.subText ?? NSNull(),
            "group": n.group, "when_ms": n.whenMs, "timeout_after_ms": n.timeoutAfterMs, "actions": actions]
}

func runPresent(_ r: Runner) {
    let all = vectors("present")
    r.check("presentation vectors found", all.count >= 40, "\(all.count)")
    for (name, v) in all {
        let expect = v["expect"] as! [String: Any]
        var problem: String?
        do {
            switch v["kind"] as! String {
            case "present":
                let q = try pushQuestion(v["question"]!)
                let unlock = (v["options"] as! [String: Any])["require_unlock_for_danger"] as! Bool
                let ios = iosNotification(question: q, requireUnlockForDanger: unlock, languages: [])
                if canon(iosDict(ios)) != canon(expect["ios"]) { problem = "ios \(canon(iosDict(ios)))"; break }
                let android = androidNotification(question: q, now: iso(v["now"] as! String), requireUnlockForDanger: unlock, languages: [])
                var want = expect["android"] as! [String: Any]
                want["actions"] = (want["actions"] as! [[String: Any]]).map { $0.filter { $0.key != "slot" } }
                if canon(androidDict(android)) != canon(want) { problem = "android \(canon(androidDict(android)))"; break }
                let codes = Set(android.actions.map(\.requestCode) + [android.contentRequestCode])
                if codes.count != android.actions.count + 1 || android.actions.count > 3 { problem = "request codes" }
            case "copy":
                let qj = canon(v["question"])
                let q = v["question"] as! [String: Any]
                if let w = expect["title"] as? String {
                    let scope: ResponderScope = q["responder_scope"] as? String == "room" ? .room : .direct
                    if copyTitle(scope: scope, asker: "Release Bot") != w { problem = "title"; break }
                }
                if expect.keys.contains("resolution") {
                    let got = try copyResolution(questionJson: qj, me: v["me"] as? String)
                    if canon(got) != canon(expect["resolution"]) { problem = "resolution \(got ?? "nil")"; break }
                }
                if let w = expect["time_remaining"] as? String {
                    let got = copyTimeRemaining(expiresAt: iso(q["expires_at"] as! String), now: iso(v["now"] as! String))
                    if got != w { problem = "time \(got)" }
                }
            case "registry":
                let known = (v["known"] as! [[String: Any]]).map {
                    KnownQuestion(questionId: $0["question_id"] as! String, state: state($0["state"] as! String),
                                          expiresAt: iso($0["expires_at"] as! String), createdAt: iso($0["created_at"] as! String))
                }
                let plan = planIosCategories(registered: v["registered"] as! [String], newCategory: v["new"] as! String,
                                             known: known, now: iso(v["now"] as! String), max: UInt32(v["max"] as! Int))
                if canon(["keep": plan.keep, "removed": plan.removed]) != canon(expect) { problem = "\(plan)" }
            case "map_action":
                let q = try pushQuestion(v["question"]!)
                do {
                    let a = try mapNotificationAction(question: q, actionId: v["action_id"] as! String, text: v["text"] as? String)
                    let got: [String: Any] = a.value.map { ["value": $0] } ?? ["text": a.text!]
                    problem = canon(got) == canon(expect) ? nil : "got \(canon(got))"
                } catch let QpError.Action(kind, _, kept) {
                    if wire(kind) != expect["error"] as? String { problem = "error \(kind)" }
                    else if let k = expect["kept_text"] as? String, kept != k { problem = "kept text" }
                }
            default: problem = "unknown kind"
            }
        } catch {
            problem = "unexpected error \(error)"
        }
        r.check(name, problem == nil, problem ?? "")
    }
}

/// Localized copy: every language, each feed cell kind, plural boundaries,
/// fallbacks and isolates (core/tests/vectors/i18n).
func runI18n(_ r: Runner) {
    let all = vectors("i18n")
    r.check("i18n vectors found", all.count >= 400, "\(all.count)")
    for (name, v) in all {
        do {
            let got = try localizedCopy(languages: v["languages"] as! [String], kind: v["kind"] as! String,
                                        argsJson: canon(v["args"]))
            r.check(name, got == v["expect"] as? String, "got \(got)")
        } catch {
            r.check(name, false, "\(error)")
        }
    }
}

/// Every shared vector, through the generated bindings: one test case per
/// vector folder, each vector a named check.
final class VectorTests: XCTestCase {
    func testProtocolVersion() { XCTAssertEqual(protocolVersion(), "1.1") }
    func testProtocolVectors() { let r = Runner(); runProtocol(r); r.expectAtLeast(80) }
    func testPayloadVectors() { let r = Runner(); runPayload(r); r.expectAtLeast(60) }
    func testPresentVectors() { let r = Runner(); runPresent(r); r.expectAtLeast(10) }
    func testI18nVectors() { let r = Runner(); runI18n(r); r.expectAtLeast(10) }
}

/// The app's Keychain for the device key, in memory.
final class MemoryKeyStore: DeviceKeyStore, @unchecked Sendable {
    private let lock = NSLock()
    private var key: Data?
    init(_ key: Data?) { self.key = key }
    func loadDeviceKey() -> Data? { lock.withLock { key } }
    func saveDeviceKey(key: Data) -> Bool { lock.withLock { self.key = key }; return true }
}

/// Sealed pushes pinned with fixed keys (core/tests/vectors/e2e): opened
/// through the core by a phone holding the vector's key and device id.
func runE2e(_ r: Runner) {
    let all = vectors("e2e")
    r.check("e2e vectors found", all.count >= 8, "\(all.count)")
    let dir = NSTemporaryDirectory() + "qp-e2e-\(UUID().uuidString)"
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    for (name, v) in all {
        let key = (v["device_secret"] as? String).flatMap { Data(base64Encoded: $0) }
        var got: [String: Any]
        do {
            let phone = try PhoneCore(storePath: dir + "/\(v["name"] as! String).sqlite", mode: .extension,
                                      serverUrl: "http://127.0.0.1:9", userId: "u_federica", tokens: StaticToken(nil),
                                      languages: ["en"], deviceKeys: MemoryKeyStore(key), deviceId: v["device_id"] as? String)
            let push = v["format"] as? String == "fcm"
                ? try phone.receiveFcm(data: v["payload"] as! [String: String])
                : try phone.receiveApns(json: v["payload"] as! String)
            switch push {
            case let .question(q):
                got = ["kind": "question", "id": q.id, "prompt": q.prompt, "context": q.context ?? NSNull(),
                       "asker": q.asker, "room_name": q.room.name, "labels": q.options.map(\.label)]
            case let .resolved(n):
                got = ["kind": "resolved", "id": n.id, "state": stateName(n.state)]
            }
        } catch let QpError.Payload(kind, _, _) {
            got = ["error": wire(kind)]
        } catch {
            got = ["error": "\(error)"]
        }
        r.check(name, canon(got) == canon(v["expect"]), "got \(canon(got))")
    }
}

extension VectorTests {
    func testSealedPushVectors() { let r = Runner(); runE2e(r); r.expectAtLeast(9) }
}
