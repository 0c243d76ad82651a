// The session through the Apple glue, against the real `qp serve` that
// ios/run-tests starts: the APNs token handed over before pairing and
// registered by the sign-in, once; a new token (a new device id) and a
// sealed push opened by an extension that was running all along (no device
// id stored by the app); signing out after one last send, with the
// extension then acting on nothing; a tap on a notification without
// buttons naming its question; the lifecycle started with nobody signed in.
#if os(Linux) // drives the glue through the stand-ins, which exist only on Linux
import Foundation
import XCTest
import QuestionProtocol
import QuestionProtocolApp
import UserNotifications
import UIKit
import BackgroundTasks

/// The README's extension, as an app writes it: the session from the
/// shared store, no user or device id given. `keep`: one core for every
/// push, as a process iOS keeps running between pushes.
final class SessionService: QPNotificationService {
    let store: String
    let vault: TokenVault
    let keys: DeviceKeyStore
    let keep: Bool
    private var core: PhoneCore?
    init(store: String, vault: TokenVault, keys: DeviceKeyStore, keep: Bool = false) {
        self.store = store; self.vault = vault; self.keys = keys; self.keep = keep
    }
    override func makeCore() -> PhoneCore? {
        if keep, let core { return core }
        core = try? PhoneCore.openSession(storePath: store, mode: .extension, vault: vault, languages: ["en"],
                                          deviceKeys: keys)
        return core
    }
    override var networkBudget: TimeInterval { 2 }
}

final class SessionGlueTests: XCTestCase {
    let center = UNUserNotificationCenter.current()
    var dir = ""

    override func setUp() {
        center.removeAllDeliveredNotifications()
        UIApplication.shared.applicationState = .active
        dir = env("QP_E2E_STORE_DIR") + "/session-glue-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    func hand(_ service: QPNotificationService, _ payload: String, id: String) async -> UNNotificationContent? {
        let handed = Handed()
        service.didReceive(request(payload, id: id)) { handed.take($0) }
        let arrived = await handed.wait()
        XCTAssertTrue(arrived, "the extension handed nothing over")
        return handed.all.first
    }

    // Issue 31: the OS hands the APNs token over at launch, before the
    // person pairs; the sign-in registers it (in the pairing call), once.
    func testAPushTokenHandedOverBeforePairingIsRegisteredBySignInOnce() async throws {
        try requireServer()
        let vault = FakeVault()
        let phone = try PhoneCore.openSession(storePath: dir + "/app.sqlite", mode: .app, vault: vault, languages: ["en"])
        let apns = String(repeating: "c3", count: 32)
        let kept = try await phone.updatePushToken(pushToken: apns)
        XCTAssertFalse(kept, "signed out: kept, nothing sent")
        XCTAssertEqual(vault.token(userId: "qp.push-token"), apns, "kept in the Keychain, not in the store")
        let account = try await phone.signIn(linkOrCode: try await freshPairLink(), deviceLabel: "iPhone (token first)",
                                             device: DeviceRegistration(platform: .ios, appId: "io.questionprotocol.test",
                                                                        apnsEnvironment: .sandbox))
        let deviceId = try XCTUnwrap(account.deviceId, "registered in the pairing call")
        XCTAssertEqual(try phone.sessionStatus().deviceId, deviceId)
        let again = try await phone.updatePushToken(pushToken: apns)
        XCTAssertFalse(again, "the same token: not sent again")
        XCTAssertEqual(try phone.sessionStatus().deviceId, deviceId, "still the one registration")
        // The device exists on the server: removing it is a 204 (not 404).
        let token = try XCTUnwrap(vault.token(userId: account.userId))
        let (removed, _) = try await http("DELETE", "/api/devices/\(deviceId)", token: token)
        XCTAssertEqual(removed, 204)
        _ = try await phone.signOut()
    }

    // Issue 31: a new token is a new device id; the extension, running
    // since before (the app stored no id for it), opens the push sealed to
    // the new id. Then signing out: one last send first, and the extension
    // acts on no push after it.
    func testANewTokenThenASealedPushOpenedByTheRunningExtensionThenSignOut() async throws {
        try requireServer()
        let vault = FakeVault()
        let keys = MemoryKeyStore(nil)
        let store = dir + "/shared.sqlite"
        let app = try PhoneCore.openSession(storePath: store, mode: .app, vault: vault, languages: ["en"], deviceKeys: keys)
        let extensionProcess = SessionService(store: store, vault: vault, keys: keys, keep: true)
        let publicKey = try app.devicePublicKey()
        let account = try await app.signIn(linkOrCode: try await freshPairLink(), deviceLabel: "iPhone (sealed)",
                                           device: DeviceRegistration(platform: .ios, pushToken: String(repeating: "d4", count: 32),
                                                                      appId: "io.questionprotocol.test", publicKey: publicKey))
        let first = try XCTUnwrap(account.deviceId)
        // A first push: the extension's process starts (and stays).
        let q1 = try await askQuestion("First, before the new token?")
        let before = await hand(extensionProcess, try encodeApnsSealedPayload(questionJson: q1.json, deviceId: first,
                                                                             publicKey: publicKey).json, id: q1.id)
        XCTAssertEqual(before?.body, "First, before the new token?")

        let changed = try await app.updatePushToken(pushToken: String(repeating: "e5", count: 32))
        XCTAssertTrue(changed)
        let second = try XCTUnwrap(try app.sessionStatus().deviceId)
        XCTAssertNotEqual(first, second, "a new token is a new device on the server")
        let q2 = try await askQuestion("Sealed to the new device?")
        let shown = await hand(extensionProcess, try encodeApnsSealedPayload(questionJson: q2.json, deviceId: second,
                                                                            publicKey: publicKey).json, id: q2.id)
        XCTAssertEqual(shown?.title, "Release Bot asks you")
        XCTAssertEqual(shown?.body, "Sealed to the new device?")
        XCTAssertEqual(shown?.categoryIdentifier, "qp.q.\(q2.id)", "the question, with its buttons")

        // An answer committed and not sent yet: signing out sends it first.
        _ = try app.answerInApp(questionId: q2.id, value: "approve", text: nil)
        XCTAssertEqual(try app.unsentAnswers(), 1)
        let token = try XCTUnwrap(vault.token(userId: account.userId))
        // On screen: a question the glue posted, a push iOS showed as it
        // came, a resolution, and one of the app's own; the badge at 2.
        for (id, info) in [("q-posted", ["qp_question_id": "q-posted"]), ("q-push", ["qp": "{}"]),
                           ("q-resolved", ["qp_resolved_id": "q-resolved"]), ("app-own", ["chat": "1"])] {
            let content = UNMutableNotificationContent()
            content.title = id
            content.userInfo = info
            center.add(UNNotificationRequest(identifier: id, content: content, trigger: nil))
        }
        center.setBadgeCount(2)
        // Signing out through the glue (the README's AccountScreen): the
        // previous person's questions leave the screen, the badge is 0.
        let out = try await QPAccount.signOut(core: app, center: QPUserNotificationCenter(center))
        XCTAssertEqual(delivered().map(\.request.identifier), ["app-own"], "only the app's own notification is left")
        XCTAssertEqual(center.standInBadgeCount, 0)
        XCTAssertEqual(out.unsentAnswersDropped, 0, "\(out)")
        XCTAssertTrue(out.deviceRemoved && out.tokenRevoked && !out.serverPending, "\(out)")
        let (state, _) = try await serverQuestion(q2.id)
        XCTAssertEqual(state, "answered", "the last send reached the asker")
        let (revoked, _) = try await http("DELETE", "/api/devices/\(second)", token: token)
        XCTAssertEqual(revoked, 401, "the sign-in is revoked on the server")

        // The running extension, after the sign-out: the neutral words, no
        // buttons, nothing recorded.
        let q3 = try await askQuestion("After signing out?")
        let after = await hand(extensionProcess, try encodeApnsSealedPayload(questionJson: q3.json, deviceId: second,
                                                                            publicKey: publicKey).json, id: q3.id)
        XCTAssertEqual(after?.title, "New question")
        XCTAssertEqual(after?.body, "Open the app to answer.")
        XCTAssertEqual(after?.categoryIdentifier, "", "no buttons")
        let plain = await hand(SessionService(store: store, vault: vault, keys: MemoryKeyStore(nil)),
                               try encodeApnsPayload(questionJson: q3.json).json, id: q3.id)
        XCTAssertEqual(plain?.title, "New question", "a plain push's own words are not shown either")
        XCTAssertNil(try app.question(questionId: q3.id))
        XCTAssertTrue(try app.feed().isEmpty)
        // Leave no question pending for the other suites of this server.
        for id in [q1.id, q3.id] {
            let (cancelled, _) = try await http("POST", "/api/agent/questions/\(id)/cancel", token: env("QP_E2E_AGENT_TOKEN"),
                                                body: [String: Any]())
            XCTAssertEqual(cancelled, 200)
        }
    }

    // A tap on a notification without buttons (a resolution replacing its
    // question, or the fallback of a push this phone could not open) opens
    // the app at the question it names; a notification showing other words
    // than the held question's needs the app, at that question.
    func testATapOnAResolutionOrAFallbackOpensItsQuestion() async throws {
        let app = try PhoneCore.openSession(storePath: dir + "/tap.sqlite", mode: .app, vault: FakeVault(), languages: ["en"])
        func tap(_ content: UNMutableNotificationContent, _ action: String = UNNotificationDefaultActionIdentifier)
            async -> QPAnswerOutcome? {
            var completions = 0
            let note = UNNotification(request: UNNotificationRequest(identifier: "x", content: content, trigger: nil), date: Date())
            let outcome = await QPNotificationResponseHandler.handle(UNNotificationResponse(notification: note, actionIdentifier: action),
                                                                     core: app) { completions += 1 }.value
            XCTAssertEqual(completions, 1)
            return outcome
        }
        // The resolution the glue posted (reconciliation).
        let resolved = QPUserNotificationCenter.content(
            QPNotificationContent(title: "Deploy?", subtitle: "Approve, by Federica", body: "", categoryIdentifier: nil,
                                  threadIdentifier: nil, questionId: "q_done", passive: true), base: nil)
        resolved.userInfo = ["qp_resolved_id": "q_done"]
        let r1 = await tap(resolved)
        XCTAssertEqual(r1, .notAnAnswer(questionId: "q_done"))
        // The server's resolution push, as it came.
        let pushed = UNMutableNotificationContent()
        pushed.userInfo = userInfo(#"{"aps":{"alert":{"title":"Deploy?","body":"Approve, by Federica"}},"qp_resolved":{"v":1,"id":"q_pushed","state":"answered"}}"#)
        let r2 = await tap(pushed)
        XCTAssertEqual(r2?.questionToOpen, "q_pushed")
        // A sealed push this phone could not open: the fallback, its push's userInfo kept.
        let sealed = UNMutableNotificationContent()
        sealed.title = "New question"
        sealed.userInfo = userInfo(#"{"aps":{"alert":{"title":"New question"}},"qp_e2e":{"v":1,"kind":"question","id":"q_sealed","device":"dev_1","enc":"x","ct":"y"}}"#)
        let r3 = await tap(sealed)
        XCTAssertEqual(r3, .notAnAnswer(questionId: "q_sealed"))
        // Not ours: nothing to open.
        let other = UNMutableNotificationContent()
        other.userInfo = ["chat": "hello"]
        let r4 = await tap(other)
        XCTAssertNil(r4)
        // Our category over words that are not the held question's: not an
        // answer, and the app opens at that question.
        let forged = UNMutableNotificationContent()
        forged.categoryIdentifier = "qp.q.q_forged"
        forged.body = "Allow Bash: git status"
        let r5 = await tap(forged, "qp.v.approve")
        guard case let .needsApp(_, questionId)? = r5 else { return XCTFail("\(String(describing: r5))") }
        XCTAssertEqual(questionId, "q_forged")
        XCTAssertEqual(r5?.questionToOpen, "q_forged")
    }

    // The lifecycle at launch with nobody signed in (before pairing, or
    // after signing out): the refresh is registered (iOS requires it during
    // launch), the refresh finds nothing to do and posts nothing, the
    // background refresh completes, and the app goes on working.
    func testTheLifecycleStartsWithNobodySignedIn() async throws {
        let app = try PhoneCore.openSession(storePath: dir + "/signed-out.sqlite", mode: .app, vault: FakeVault(),
                                            languages: ["en"])
        XCTAssertEqual(try app.sessionStatus().state, .signedOut)
        let lifecycle = QPAppLifecycle(core: app, refreshIdentifier: "test.refresh.\(UUID().uuidString)")
        let events = NotificationCenter()
        let started = await lifecycle.start(notificationCenter: events).value
        let report = try XCTUnwrap(started)
        XCTAssertNil(report.synced, "nothing to sync while signed out")
        XCTAssertEqual(report.session?.state, .signedOut, "the report says why")
        XCTAssertTrue(delivered().isEmpty, "nothing posted")
        XCTAssertEqual(center.standInBadgeCount, 0)
        // The refresh was registered at launch: the system can run it.
        let task = try XCTUnwrap(BGTaskScheduler.shared.launch(lifecycle.refreshIdentifier))
        for _ in 0..<100 where task.completion == nil { try await Task.sleep(nanoseconds: 50_000_000) }
        XCTAssertEqual(task.completion, false, "completed (nothing fetched)")
        XCTAssertNotNil(BGTaskScheduler.shared.pendingRequest(lifecycle.refreshIdentifier), "the next one scheduled")
        // Background and foreground still suspend and resume the store.
        events.post(name: UIApplication.didEnterBackgroundNotification, object: nil)
        await lifecycle.idle() // off the posting thread
        XCTAssertTrue(isSuspended(app))
        events.post(name: UIApplication.willEnterForegroundNotification, object: nil)
        await lifecycle.idle()
        XCTAssertFalse(isSuspended(app))
        XCTAssertEqual(UIApplication.shared.runningBackgroundTasks, [])
        XCTAssertEqual(try app.sessionStatus().state, .signedOut)
        // iOS 15 has no UNUserNotificationCenter.setBadgeCount: the app's
        // start installs UIApplication's badge for the library's badge calls.
        let legacy = try XCTUnwrap(QPUserNotificationCenter.legacyBadgeSetter, "iOS 15's badge setter installed")
        UIApplication.shared.applicationIconBadgeNumber = 4
        legacy(0)
        XCTAssertEqual(UIApplication.shared.applicationIconBadgeNumber, 0)
    }

    func delivered() -> [UNNotification] {
        var out: [UNNotification] = []
        center.getDeliveredNotifications { out = $0 }
        return out
    }
}
#endif
