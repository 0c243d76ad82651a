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
import Security

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

    // The README's app delegate does not crash at launch when the store
    // cannot be opened (no `try!`): no core, the entry points do nothing and
    // complete what they are handed.
    @MainActor
    func testTheReadmesAppDelegateWithoutAStoreLaunchesAndCompletes() async throws {
        let blocker = dir + "/not-a-folder"
        FileManager.default.createFile(atPath: blocker, contents: Data("x".utf8))
        AppGroup.container = URL(fileURLWithPath: blocker).appendingPathComponent("group")
        defer { AppGroup.container = URL(fileURLWithPath: dir) }
        let delegate = AppDelegate()
        XCTAssertTrue(delegate.application(UIApplication.shared, didFinishLaunchingWithOptions: nil))
        let opened = await delegate.session.core()
        XCTAssertNil(opened)
        XCTAssertNotNil(delegate.session.failure, "why, for the app to show")
        let note = UNNotification(request: UNNotificationRequest(identifier: "q_none", content: UNMutableNotificationContent(),
                                                                 trigger: nil), date: Date())
        let completions = Counter()
        delegate.userNotificationCenter(UNUserNotificationCenter.current(),
                                        didReceive: UNNotificationResponse(notification: note,
                                                                           actionIdentifier: UNNotificationDefaultActionIdentifier),
                                        withCompletionHandler: { completions.add() })
        let fetched = Fetched()
        delegate.application(UIApplication.shared, didReceiveRemoteNotification: [:], fetchCompletionHandler: { fetched.set($0) })
        for _ in 0..<250 where completions.value == 0 || fetched.value == nil {
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        XCTAssertEqual(completions.value, 1)
        XCTAssertEqual(fetched.value, .noData)
    }

    // Issue 48 (1): a question arriving while the app is open shows, as it
    // would on the lock screen (banner, list, its sound, the badge); a
    // resolution only in the list; the app's other notifications follow the
    // app's own rule. The README's app delegate, as written.
    @MainActor
    func testTheReadmesAppDelegatePresentsAQuestionArrivingInTheForeground() async throws {
        AppGroup.container = URL(fileURLWithPath: dir)
        let center = UNUserNotificationCenter.current()
        let id = "q_fore"
        let handed = await hand(PresentingService(store: dir + "/ext.sqlite", options: PresentOptions()),
                                try encodeApnsPayload(questionJson: localQuestion(id, prompt: "Ship it?")).json, id: id)
        let shown = try XCTUnwrap(handed)
        let delegate = AppDelegate()
        center.delegate = delegate
        defer { center.delegate = nil }
        let options = center.standInArriveInForeground(UNNotificationRequest(identifier: id, content: shown, trigger: nil))
        XCTAssertEqual(options, [.banner, .list, .sound, .badge])
        var onScreen: [String] = []
        center.getDeliveredNotifications { onScreen = $0.map(\.request.identifier) }
        XCTAssertEqual(onScreen, [id], "shown while the app is open")

        let resolved = QPUserNotificationCenter.content(
            QPNotificationContent(title: "Release Bot asks you", subtitle: nil, body: "Cancelled", categoryIdentifier: nil,
                                  threadIdentifier: nil, questionId: id, passive: true,
                                  presentation: iosPresentation(options: PresentOptions(), resolved: true)), base: shown)
        XCTAssertEqual(center.standInArriveInForeground(UNNotificationRequest(identifier: id, content: resolved, trigger: nil)),
                       [.list, .badge], "a resolution is quiet: in the list (the badge kept), no banner, no sound")

        let own = UNMutableNotificationContent()
        own.title = "Your reminder"
        own.userInfo = ["reminder": "r1"]
        XCTAssertEqual(center.standInArriveInForeground(UNNotificationRequest(identifier: "r1", content: own, trigger: nil)),
                       [.banner, .list], "the app's own rule for its notifications")
        XCTAssertNil(QPForegroundPresentation.options(for: UNNotification(
            request: UNNotificationRequest(identifier: "r1", content: own, trigger: nil), date: Date())))
    }

    // Issue 48 (2): the app registering its static categories at launch (the
    // README's delegate) keeps the buttons of a question already on screen;
    // setNotificationCategories would have dropped them. A question arriving
    // afterwards keeps the app's.
    @MainActor
    func testTheAppsCategoriesSetAtLaunchKeepTheButtonsOfAQuestionOnScreen() async throws {
        AppGroup.container = URL(fileURLWithPath: dir)
        let center = UNUserNotificationCenter.current()
        center.setNotificationCategories([])
        func registered() -> Set<String> {
            var ids: Set<String> = []
            center.getNotificationCategories { ids = Set($0.map(\.identifier)) }
            return ids
        }
        let store = dir + "/ext.sqlite"
        let handed = await hand(PresentingService(store: store, options: PresentOptions()),
                                try encodeApnsPayload(questionJson: localQuestion("q_c1", prompt: "Deploy?")).json, id: "q_c1")
        let first = try XCTUnwrap(handed)
        XCTAssertEqual(first.categoryIdentifier, "qp.q.q_c1")
        XCTAssertEqual(registered(), ["qp.q.q_c1"])

        let delegate = AppDelegate()
        XCTAssertTrue(delegate.application(UIApplication.shared, didFinishLaunchingWithOptions: nil))
        XCTAssertEqual(registered(), ["qp.q.q_c1", "com.example.reminder"], "the question keeps its buttons")

        _ = await hand(PresentingService(store: store, options: PresentOptions()),
                       try encodeApnsPayload(questionJson: localQuestion("q_c2", prompt: "Merge?")).json, id: "q_c2")
        XCTAssertEqual(registered(), ["qp.q.q_c1", "qp.q.q_c2", "com.example.reminder"])

        // What the library's call replaces: the app's own set, wholesale.
        QPUserNotificationCenter().setAppCategories([UNNotificationCategory(identifier: "com.example.other", actions: [],
                                                                            intentIdentifiers: [])])
        XCTAssertEqual(registered(), ["qp.q.q_c1", "qp.q.q_c2", "com.example.other"])
    }

    // Issue 48 (3): going to the background returns at once on the calling
    // (main) thread and closes the store within its bound while another
    // connection (the extension) holds the write lock; the background task
    // ends. A quick return to the foreground opens it again after the close.
    func testBackgroundReturnsAtOnceAndSuspendsWithinItsBoundWhileTheWriteLockIsHeld() async throws {
        let store = dir + "/shared.sqlite"
        let app = try PhoneCore(storePath: store, mode: .app, serverUrl: "http://127.0.0.1:9", userId: "u_me",
                                tokens: StaticToken("qpu_x"), languages: ["en"])
        _ = try app.receiveApns(json: try encodeApnsPayload(questionJson: localQuestion("q_b1", prompt: "Deploy?")).json)
        let lifecycle = QPAppLifecycle(core: app, refreshIdentifier: "test.refresh.\(UUID().uuidString)")
        let held = try StoreWriteLock(path: store)
        defer { held.release() }

        let started = Date()
        let closing = lifecycle.didEnterBackground()
        let returned = Date().timeIntervalSince(started)
        XCTAssertLessThan(returned, 0.05, "the caller (iOS's main thread) waits for nothing")
        let report = await closing.value
        let closed = Date().timeIntervalSince(started)
        XCTAssertLessThan(closed, 1.0, "closed within its bound, the lock still held")
        XCTAssertEqual(report?.storeClosed, true)
        XCTAssertTrue(isSuspended(app))
        XCTAssertEqual(UIApplication.shared.runningBackgroundTasks, [], "the background task ended")

        held.release()
        // Background then straight back: the open comes after the close.
        lifecycle.didEnterBackground()
        _ = lifecycle.willEnterForeground()
        await lifecycle.idle()
        XCTAssertFalse(isSuspended(app), "open after a quick return")
        XCTAssertNotNil(try app.question(questionId: "q_b1"), "nothing lost")
    }

    // The privacy manifest ships in the package and declares SQLite's
    // file-timestamp reads (a required-reason API) with reason C617.1, and
    // its statfs/fstatfs on Apple (disk space) with E174.1.
    func testThePrivacyManifestDeclaresTheFileTimestampAndDiskSpaceReasons() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/QuestionProtocol/PrivacyInfo.xcprivacy")
        let plist = try XCTUnwrap(PropertyListSerialization.propertyList(from: Data(contentsOf: url), format: nil)
            as? [String: Any])
        XCTAssertEqual(plist["NSPrivacyTracking"] as? Bool, false)
        let apis = try XCTUnwrap(plist["NSPrivacyAccessedAPITypes"] as? [[String: Any]])
        let timestamps = apis.first { $0["NSPrivacyAccessedAPIType"] as? String == "NSPrivacyAccessedAPICategoryFileTimestamp" }
        XCTAssertEqual(timestamps?["NSPrivacyAccessedAPITypeReasons"] as? [String], ["C617.1"])
        let disk = apis.first { $0["NSPrivacyAccessedAPIType"] as? String == "NSPrivacyAccessedAPICategoryDiskSpace" }
        XCTAssertEqual(disk?["NSPrivacyAccessedAPITypeReasons"] as? [String], ["E174.1"])
    }

    // The README's device key store keeps the key in the Keychain (this
    // device only), and the core's public key survives a new process.
    func testTheReadmesDeviceKeyStoreKeepsTheKeyInTheKeychain() throws {
        let store = dir + "/device-key.sqlite"
        SecItemDelete([kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "qp.device-key",
                       kSecAttrAccount as String: "device", kSecAttrAccessGroup as String: Keychain.shared.group] as CFDictionary)
        XCTAssertNil(KeychainDeviceKey().loadDeviceKey())
        let first = try PhoneCore.openSession(storePath: store, mode: .app, vault: Keychain.shared, languages: ["en"],
                                              deviceKeys: KeychainDeviceKey())
        let publicKey = try first.devicePublicKey()
        XCTAssertEqual(KeychainDeviceKey().loadDeviceKey()?.count, 32)
        let again = try PhoneCore.openSession(storePath: store, mode: .app, vault: Keychain.shared, languages: ["en"],
                                              deviceKeys: KeychainDeviceKey())
        XCTAssertEqual(try again.devicePublicKey(), publicKey, "the same key in the next process")
    }

    /// A provisioning profile as Xcode embeds it: a CMS envelope (binary)
    /// around the XML property list.
    func profile(aps: String?) -> Data {
        let entitlements = aps.map { "<key>aps-environment</key><string>\($0)</string>" } ?? ""
        let xml = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0"><dict><key>Name</key><string>Example</string>
        <key>Entitlements</key><dict>\(entitlements)<key>get-task-allow</key><true/></dict></dict></plist>
        """
        return Data([0x30, 0x82, 0x1f, 0x00, 0x06, 0x09]) + Data(xml.utf8) + Data([0xa0, 0x82, 0x00, 0x31])
    }

    // The APNs environment is the signing profile's aps-environment
    // entitlement, not the build configuration.
    func testTheApnsEnvironmentIsTheSigningProfilesEntitlement() {
        XCTAssertEqual(QPApnsEnvironment.of(provisioningProfile: profile(aps: "development")), .sandbox)
        XCTAssertEqual(QPApnsEnvironment.of(provisioningProfile: profile(aps: "production")), .production)
        XCTAssertEqual(QPApnsEnvironment.of(provisioningProfile: nil), .production, "App Store / TestFlight: no profile")
        XCTAssertEqual(QPApnsEnvironment.of(provisioningProfile: profile(aps: nil)), .production)
        XCTAssertEqual(QPApnsEnvironment.of(provisioningProfile: Data("not a profile".utf8)), .production)
        // This process's bundle has no profile (as an App Store build).
        XCTAssertEqual(QPApnsEnvironment.current(bundle: Bundle(for: Self.self)), .production)
    }
}
#endif
