// Presentation options as the glue applies them, and the deep link: the
// app's interruption level and sound on the content the extension hands
// over, the badge as the pending count, a quiet resolution, a tap that says
// which question to open, the README's app delegate routing it, and the
// package's privacy manifest. No server needed: the store is real, the
// network a closed port.
#if canImport(UserNotifications) && canImport(UIKit)
import Foundation
import XCTest
import QuestionProtocol
import QuestionProtocolApp
@testable import QuestionProtocolSnippets
import UserNotifications
import UIKit

/// A protocol question as the server would send it (pending, one hour left).
func localQuestion(_ id: String, prompt: String, room: String = "OPS") -> String {
    let q: [String: Any] = [
        "id": id, "kind": "question", "prompt": prompt, "context": NSNull(),
        "options": [["value": "approve", "label": "Approve", "style": "primary"],
                    ["value": "deny", "label": "Deny", "style": "danger"]],
        "text_input": NSNull(), "responder_scope": "room", "target_user_id": NSNull(),
        "resolution_policy": "first", "state": "pending", "answer": NSNull(),
        "expires_at": ISO8601DateFormatter().string(from: Date().addingTimeInterval(3600)),
        "resolved_at": NSNull(), "correlation_id": NSNull(), "reply_to": NSNull(), "data": NSNull(),
        "created_at": ISO8601DateFormatter().string(from: Date()),
        "room": ["code": room, "name": "Ops"],
        "asker": ["type": "agent", "id": "a_1", "display_name": "Release Bot"],
    ]
    return String(data: try! JSONSerialization.data(withJSONObject: q), encoding: .utf8)!
}

/// An extension that sets the app's presentation options.
final class PresentingService: QPNotificationService {
    let store: String
    let options: PresentOptions
    init(store: String, options: PresentOptions) { self.store = store; self.options = options }
    override func makeCore() -> PhoneCore? {
        try? PhoneCore(storePath: store, mode: .extension, serverUrl: "http://127.0.0.1:9", userId: "u_me",
                       tokens: StaticToken("qpu_x"), languages: ["en"])
    }
    override var networkBudget: TimeInterval { 1 }
    override var presentOptions: PresentOptions { options }
}

final class PresentationTests: XCTestCase {
    var dir = ""

    override func setUp() {
        UNUserNotificationCenter.current().removeAllDeliveredNotifications()
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("qp-present-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    func hand(_ service: QPNotificationService, _ payload: String, id: String) async -> UNNotificationContent? {
        let handed = Handed()
        service.didReceive(request(payload, id: id)) { handed.take($0) }
        _ = await handed.wait()
        return handed.all.first
    }

    func testTheExtensionAppliesTheAppsLevelAndSoundAndBadgesThePendingCount() async throws {
        let store = dir + "/shared.sqlite"
        let options = PresentOptions(interruptionLevel: .active, sound: .named(name: "ping.caf"))
        let first = await hand(PresentingService(store: store, options: options),
                               try encodeApnsPayload(questionJson: localQuestion("q_p1", prompt: "Deploy?")).json, id: "q_p1")
        XCTAssertEqual(first?.interruptionLevel, .active)
        XCTAssertEqual(first?.sound?.standInName, "ping.caf")
        XCTAssertEqual(first?.badge?.intValue, 1, "one question waits")
        let second = await hand(PresentingService(store: store, options: options),
                                try encodeApnsPayload(questionJson: localQuestion("q_p2", prompt: "Merge?")).json, id: "q_p2")
        XCTAssertEqual(second?.badge?.intValue, 2, "the badge is the pending count")

        // Silent and default level: no sound, time-sensitive.
        let quiet = await hand(PresentingService(store: dir + "/b.sqlite", options: PresentOptions(sound: .silent)),
                               try encodeApnsPayload(questionJson: localQuestion("q_p3", prompt: "Purge?")).json, id: "q_p3")
        XCTAssertNil(quiet?.sound)
        XCTAssertEqual(quiet?.interruptionLevel, .timeSensitive)
    }

    func testAResolutionIsQuietWhateverTheOptions() {
        let loud = PresentOptions(interruptionLevel: .critical, sound: .default)
        let p = iosPresentation(options: loud, resolved: true)
        XCTAssertEqual(p.interruptionLevel, .passive)
        XCTAssertEqual(p.sound, .silent)
        let content = QPUserNotificationCenter.content(
            QPNotificationContent(title: "t", subtitle: nil, body: "b", categoryIdentifier: nil, threadIdentifier: nil,
                                  questionId: "q", passive: true, presentation: p), base: nil)
        XCTAssertEqual(content.interruptionLevel, .passive)
        XCTAssertNil(content.sound)
    }

    // The default tap is not an answer: the outcome names the question to open.
    func testATapOnAQuestionSaysWhichQuestionToOpen() async throws {
        let store = dir + "/shared.sqlite"
        let id = "q_tap"
        let shown = await hand(PresentingService(store: store, options: PresentOptions()),
                               try encodeApnsPayload(questionJson: localQuestion(id, prompt: "Ship it?")).json, id: id)
        let note = UNNotification(request: UNNotificationRequest(identifier: id, content: try XCTUnwrap(shown), trigger: nil),
                                  date: Date())
        let app = try PhoneCore(storePath: store, mode: .app, serverUrl: "http://127.0.0.1:9", userId: "u_me",
                                tokens: StaticToken("qpu_x"), languages: ["en"])
        var completions = 0
        let outcome = await QPNotificationResponseHandler.handle(
            UNNotificationResponse(notification: note, actionIdentifier: UNNotificationDefaultActionIdentifier),
            core: app, flushWithin: 1) { completions += 1 }.value
        XCTAssertEqual(outcome, .notAnAnswer(questionId: id))
        XCTAssertEqual(completions, 1)
        XCTAssertNil(try app.answerStatus(questionId: id), "a tap answers nothing")
    }

    // The README's app delegate, as written: at launch it asks for
    // permission and registers for remote notifications; the APNs token it
    // is handed (before pairing) is kept by the core as hex; a tap routes to
    // the question (here nobody is signed in: the question still opens).
    @MainActor
    func testTheReadmesAppDelegateOpensTheTappedQuestion() async throws {
        AppGroup.container = URL(fileURLWithPath: dir)
        let store = AppGroup.storePath
        try? FileManager.default.removeItem(atPath: store)
        let id = "q_readme"
        let shown = await hand(PresentingService(store: store, options: PresentOptions()),
                               try encodeApnsPayload(questionJson: localQuestion(id, prompt: "Rotate keys?")).json, id: id)
        let note = UNNotification(request: UNNotificationRequest(identifier: id, content: try XCTUnwrap(shown), trigger: nil),
                                  date: Date())
        let registrations = UIApplication.shared.standInRemoteRegistrations
        let delegate = AppDelegate()
        XCTAssertTrue(delegate.application(UIApplication.shared, didFinishLaunchingWithOptions: nil))
        XCTAssertEqual(UNUserNotificationCenter.current().standInRequestedAuthorization, [.alert, .sound, .badge])
        for _ in 0..<250 where UIApplication.shared.standInRemoteRegistrations == registrations {
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        XCTAssertEqual(UIApplication.shared.standInRemoteRegistrations, registrations + 1, "registered for remote notifications")
        let apns = Data((0..<32).map { UInt8($0 * 7 % 256) })
        delegate.application(UIApplication.shared, didRegisterForRemoteNotificationsWithDeviceToken: apns)
        let hex = apns.map { String(format: "%02x", $0) }.joined()
        XCTAssertEqual(hex.count, 64)
        for _ in 0..<250 where Keychain.shared.token(userId: "qp.push-token") != hex {
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        XCTAssertEqual(Keychain.shared.token(userId: "qp.push-token"), hex, "kept, as hex, for the sign-in")
        Router.opened = []
        let completed = Once()
        delegate.userNotificationCenter(UNUserNotificationCenter.current(),
                                        didReceive: UNNotificationResponse(notification: note,
                                                                           actionIdentifier: UNNotificationDefaultActionIdentifier),
                                        withCompletionHandler: { _ = completed.claim() })
        for _ in 0..<250 where Router.opened.isEmpty { try await Task.sleep(nanoseconds: 20_000_000) }
        XCTAssertEqual(Router.opened, [id])
        XCTAssertFalse(completed.claim(), "the completion handler ran")
        try? FileManager.default.removeItem(atPath: store)
    }

    // The privacy manifest ships in the package and declares SQLite's
    // file-timestamp reads (a required-reason API) with reason C617.1.
    func testThePrivacyManifestDeclaresTheFileTimestampReason() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/QuestionProtocol/PrivacyInfo.xcprivacy")
        let plist = try XCTUnwrap(PropertyListSerialization.propertyList(from: Data(contentsOf: url), format: nil)
            as? [String: Any])
        XCTAssertEqual(plist["NSPrivacyTracking"] as? Bool, false)
        let apis = try XCTUnwrap(plist["NSPrivacyAccessedAPITypes"] as? [[String: Any]])
        let timestamps = apis.first { $0["NSPrivacyAccessedAPIType"] as? String == "NSPrivacyAccessedAPICategoryFileTimestamp" }
        XCTAssertEqual(timestamps?["NSPrivacyAccessedAPITypeReasons"] as? [String], ["C617.1"])
    }
}
#endif
