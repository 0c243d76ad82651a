// The Apple glue itself (Sources/QuestionProtocol/Apple), compiled on Linux
// against the API stand-ins (AppleStandIns/) and driven as iOS would drive
// it: the extension subclass gets a request and a content handler, the
// response handler gets a UNNotificationResponse, the lifecycle gets the
// background/foreground notifications and the registered refresh task. A
// real `qp serve` (ios/run-tests) answers on loopback; "the system showing a
// notification" is the stand-in center keeping it by identifier.
#if os(Linux) // drives the glue through the stand-ins, which exist only on Linux
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
import QuestionProtocol
import QuestionProtocolApp
import UserNotifications
import UIKit
import BackgroundTasks

/// The extension as an app would subclass it, keeping the core it made so
/// the test can check it was suspended.
final class TestService: QPNotificationService {
    let url: String
    let store: String
    let budget: TimeInterval
    let keys: DeviceKeyStore?
    let deviceId: String?
    let userId: String
    var made: PhoneCore?
    init(url: String, store: String, budget: TimeInterval = 5, keys: DeviceKeyStore? = nil,
         deviceId: String? = nil, userId: String = env("QP_E2E_USER")) {
        self.url = url; self.store = store; self.budget = budget
        self.keys = keys; self.deviceId = deviceId; self.userId = userId
    }
    override func makeCore() -> PhoneCore? {
        made = try? PhoneCore(storePath: store, mode: .extension, serverUrl: url, userId: userId,
                              tokens: StaticToken(env("QP_E2E_USER_TOKEN")), languages: ["en"],
                              deviceKeys: keys, deviceId: deviceId)
        return made
    }
    override var networkBudget: TimeInterval { budget }
}

/// Collects what the extension hands to the system.
final class Handed: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [UNNotificationContent] = []
    private let arrived = DispatchSemaphore(value: 0)
    func take(_ c: UNNotificationContent) {
        lock.withLock { items.append(c) }
        arrived.signal()
    }
    var all: [UNNotificationContent] { lock.withLock { items } }
    /// Waits for the next hand-over (false on timeout).
    func wait(_ seconds: Double = 30) async -> Bool {
        await withCheckedContinuation { c in
            DispatchQueue.global().async { c.resume(returning: self.arrived.wait(timeout: .now() + seconds) == .success) }
        }
    }
}

func userInfo(_ json: String) -> [AnyHashable: Any] {
    (parse(json) as? [String: Any]) ?? [:]
}

/// A push as the system gives it to the extension: the alert fields set
/// from `aps`, the whole payload as userInfo, the collapse id as identifier.
func request(_ payload: String, id: String) -> UNNotificationRequest {
    let c = UNMutableNotificationContent()
    let aps = (parse(payload) as? [String: Any])?["aps"] as? [String: Any]
    let alert = aps?["alert"] as? [String: Any]
    c.title = alert?["title"] as? String ?? ""
    c.subtitle = alert?["subtitle"] as? String ?? ""
    c.body = alert?["body"] as? String ?? ""
    c.categoryIdentifier = aps?["category"] as? String ?? ""
    c.interruptionLevel = aps?["interruption-level"] as? String == "passive" ? .passive : .timeSensitive
    c.sound = aps?["sound"] == nil ? nil : .default
    c.userInfo = userInfo(payload)
    return UNNotificationRequest(identifier: id, content: c, trigger: nil)
}

/// The question's state on the server, from a synchronous context (a
/// completion handler).
func blockingServerState(_ id: String) -> String {
    var req = URLRequest(url: URL(string: env("QP_E2E_URL") + "/api/agent/questions/\(id)")!)
    req.setValue("Bearer \(env("QP_E2E_AGENT_TOKEN"))", forHTTPHeaderField: "Authorization")
    final class Box: @unchecked Sendable { var state = "unreachable" }
    let done = DispatchSemaphore(value: 0)
    let box = Box()
    URLSession.shared.dataTask(with: req) { data, _, _ in
        if let data, let q = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] {
            box.state = q["state"] as? String ?? "?"
        }
        done.signal()
    }.resume()
    _ = done.wait(timeout: .now() + 10)
    return box.state
}

func isSuspended(_ core: PhoneCore?) -> Bool {
    do { _ = try core?.feed(); return false } catch QpError.Storage(let kind, _) { return kind == .suspended } catch { return false }
}

final class GlueTests: XCTestCase {
    let center = UNUserNotificationCenter.current()
    var dir = ""

    override func setUp() {
        center.removeAllDeliveredNotifications()
        center.setNotificationCategories([])
        UIApplication.shared.applicationState = .active
        dir = env("QP_E2E_STORE_DIR") + "/glue-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    func delivered() -> [UNNotification] {
        var out: [UNNotification] = []
        center.getDeliveredNotifications { out = $0 }
        return out
    }

    func categories() -> [String] {
        var out: [String] = []
        center.getNotificationCategories { out = $0.map(\.identifier) }
        return out
    }

    func core(_ url: String, _ store: String, mode: StoreMode = .app) throws -> PhoneCore {
        try PhoneCore(storePath: store, mode: mode, serverUrl: url, userId: env("QP_E2E_USER"),
                      tokens: StaticToken(env("QP_E2E_USER_TOKEN")), languages: ["en"])
    }

    /// Runs the extension on one push and shows what it hands over, as the
    /// system does (same identifier: replaced in place).
    func runExtension(_ service: TestService, _ payload: String, id: String) async -> [UNNotificationContent] {
        let handed = Handed()
        service.didReceive(request(payload, id: id)) { handed.take($0) }
        let arrived = await handed.wait()
        XCTAssertTrue(arrived, "the extension handed nothing over")
        if let c = handed.all.first {
            center.add(UNNotificationRequest(identifier: id, content: c, trigger: nil))
        }
        return handed.all
    }

    /// Asks on the server and shows the question as the system would (its
    /// push through the extension, which has no network here).
    func showQuestion(_ prompt: String, store: String) async throws -> (id: String, json: String, note: UNNotification) {
        let q = try await askQuestion(prompt)
        _ = await runExtension(TestService(url: env("QP_E2E_DEAD_URL"), store: store),
                               try encodeApnsPayload(questionJson: q.json).json, id: q.id)
        let note = try XCTUnwrap(delivered().first { $0.request.identifier == q.id })
        return (q.id, q.json, note)
    }

    // The extension: a question is presented with its own category, the
    // outbox is sent first, the store is left suspended, the handler runs once.
    func testExtensionPresentsSendsQueuedAnswersSuspendsAndCompletesOnce() async throws {
        try requireServer()
        let store = dir + "/shared.sqlite"
        // An answer left queued by an earlier run (the server was unreachable).
        let earlier = try await askQuestion("Earlier question?")
        let offline = try core(env("QP_E2E_DEAD_URL"), store)
        _ = try offline.receiveApns(json: try encodeApnsPayload(questionJson: earlier.json).json)
        _ = try offline.answerAction(questionId: earlier.id, actionId: "qp.v.approve", text: nil)
        _ = try? await offline.flush() // fails: queued, retried after a short backoff
        try await Task.sleep(nanoseconds: 4_200_000_000) // past the first backoff (2-4 s)

        let q = try await askQuestion("Deploy v1.4.0 to production?")
        let service = TestService(url: env("QP_E2E_URL"), store: store)
        let handed = await runExtension(service, try encodeApnsPayload(questionJson: q.json).json, id: q.id)
        XCTAssertEqual(handed.count, 1)
        let c = try XCTUnwrap(handed.first)
        XCTAssertEqual(c.title, "Release Bot asks you")
        XCTAssertEqual(c.subtitle, "Build #4821")
        XCTAssertEqual(c.categoryIdentifier, "qp.q.\(q.id)")
        XCTAssertTrue(categories().contains("qp.q.\(q.id)"), "\(categories())")
        // Sent before the hand-over: the server has the earlier answer.
        let (state, _) = try await serverQuestion(earlier.id)
        XCTAssertEqual(state, "answered")
        XCTAssertTrue(isSuspended(service.made), "the extension's store is closed before it completes")
        // Time running out afterwards changes nothing: once only.
        service.serviceExtensionTimeWillExpire()
        XCTAssertEqual(handed.count, 1)
    }

    // Out of time while the network hangs: the best content (the question,
    // with its buttons) is handed over once, and the store is suspended.
    func testTimeWillExpireHandsOverTheQuestionOnce() async throws {
        try requireServer()
        let store = dir + "/shared.sqlite"
        let q = try await askQuestion("Rotate the keys?")
        let first = try core(env("QP_E2E_DEAD_URL"), store)
        // Something to send, so the extension goes to the (hanging) network.
        let other = try await askQuestion("Restart the queue?")
        _ = try first.receiveApns(json: try encodeApnsPayload(questionJson: other.json).json)
        _ = try first.answerAction(questionId: other.id, actionId: "qp.v.deny", text: nil)

        let service = TestService(url: hangingServerURL(), store: store, budget: 2)
        let handed = Handed()
        var suspendedAtHandOver: Bool?
        service.didReceive(request(try encodeApnsPayload(questionJson: q.json).json, id: q.id)) {
            suspendedAtHandOver = isSuspended(service.made)
            handed.take($0)
        }
        try await Task.sleep(nanoseconds: 500_000_000) // presented; the flush hangs
        XCTAssertTrue(handed.all.isEmpty, "not yet: still sending")
        service.serviceExtensionTimeWillExpire()
        XCTAssertEqual(handed.all.count, 1)
        XCTAssertEqual(suspendedAtHandOver, false, "handed over first (iOS may end the extension then), closed after")
        XCTAssertEqual(handed.all.first?.categoryIdentifier, "qp.q.\(q.id)", "the question with its buttons")
        XCTAssertTrue(isSuspended(service.made))
        try await Task.sleep(nanoseconds: 2_500_000_000) // the flow's own end, after its budget
        XCTAssertEqual(handed.all.count, 1, "handed over exactly once")
    }

    // A resolution (answered on the person's other phone, or cancelled)
    // replaces the question's notification in place once the server
    // confirms it: quiet, no buttons, the resolved words.
    func testResolutionReplacesTheNotificationInPlaceOnceTheServerConfirmsIt() async throws {
        try requireServer()
        let store = dir + "/shared.sqlite"
        let server = env("QP_E2E_URL") // the extension asks it (a resolution push is a claim the server confirms)
        let answered = try await showQuestion("Ship the hotfix?", store: store)
        let cancelled = try await showQuestion("Drain the node?", store: store)
        XCTAssertEqual(delivered().count, 2)

        // Answered elsewhere (the user's Android phone), and cancelled by the agent.
        let (s1, _) = try await http("POST", "/api/questions/\(answered.id)/answer", token: env("QP_E2E_USER_TOKEN"),
                                     body: ["value": "approve"])
        XCTAssertEqual(s1, 200)
        let (s2, _) = try await http("POST", "/api/agent/questions/\(cancelled.id)/cancel", token: env("QP_E2E_AGENT_TOKEN"))
        XCTAssertEqual(s2, 200)
        for (q, words) in [(answered, "You answered: Approve"), (cancelled, "Cancelled")] {
            let now = try await serverQuestion(q.id)
            let payload = try encodeApnsResolvedPayload(questionJson: now.json, me: env("QP_E2E_USER")).json
            let service = TestService(url: server, store: store)
            let handed = await runExtension(service, payload, id: q.id)
            XCTAssertEqual(handed.count, 1)
            let c = try XCTUnwrap(handed.first)
            XCTAssertEqual(c.subtitle, words)
            XCTAssertEqual(c.body, q.id == answered.id ? "Ship the hotfix?" : "Drain the node?")
            XCTAssertEqual(c.categoryIdentifier, "", "no buttons")
            XCTAssertEqual(c.interruptionLevel, .passive)
            XCTAssertNil(c.sound)
            let cell = try XCTUnwrap(try self.core(server, store).feed().first { $0.questionId == q.id })
            XCTAssertEqual(cell.resolution, words)
        }
        let shown = delivered()
        XCTAssertEqual(shown.count, 2, "replaced, not added")
        XCTAssertEqual(Set(shown.map { $0.request.content.subtitle }), ["You answered: Approve", "Cancelled"])
    }

    // Issue 32, finding 1: a resolution push for a question still pending on
    // the server (a forged one) does not replace it: the question is shown
    // again with its buttons, and stays pending in the feed.
    func testAnUnconfirmedResolutionShowsTheQuestionAgain() async throws {
        try requireServer()
        let store = dir + "/shared.sqlite"
        let q = try await showQuestion("Rotate the database password?", store: store)
        let claim = try encodeApnsResolvedPayload(
            questionJson: q.json.replacingOccurrences(of: "\"state\":\"pending\"", with: "\"state\":\"cancelled\"")
                .replacingOccurrences(of: "\"resolved_at\":null", with: "\"resolved_at\":\"2026-06-27T10:40:00Z\""),
            me: nil).json
        let handed = await runExtension(TestService(url: env("QP_E2E_URL"), store: store), claim, id: q.id)
        let c = try XCTUnwrap(handed.first)
        XCTAssertEqual(c.categoryIdentifier, "qp.q.\(q.id)", "the question with its buttons")
        XCTAssertEqual(c.body, "Rotate the database password?")
        let cell = try XCTUnwrap(try core(env("QP_E2E_URL"), store).feed().first { $0.questionId == q.id })
        XCTAssertNil(cell.resolution, "still pending here")
        let (status, _) = try await http("POST", "/api/questions/\(q.id)/answer", token: env("QP_E2E_USER_TOKEN"),
                                         body: ["value": "deny"]) // leaves nothing pending for the other tests
        XCTAssertEqual(status, 200)
    }

    // Launch: the push of one question never came and another was resolved
    // while its notification stayed on screen; the app posts the first (with
    // its category) and replaces the second.
    func testLaunchReconcilesTheScreenWithTheServer() async throws {
        try requireServer()
        let store = dir + "/shared.sqlite"
        let shown = try await showQuestion("Promote the canary?", store: store)
        let missed = try await askQuestion("Scale the workers?")
        let (s, _) = try await http("POST", "/api/questions/\(shown.id)/answer", token: env("QP_E2E_USER_TOKEN"),
                                    body: ["value": "deny"])
        XCTAssertEqual(s, 200)

        let app = try core(env("QP_E2E_URL"), store)
        let lifecycle = QPAppLifecycle(core: app, refreshIdentifier: "test.refresh.\(UUID().uuidString)")
        _ = await lifecycle.start(notificationCenter: NotificationCenter()).value
        let byId = Dictionary(delivered().map { ($0.request.identifier, $0.request.content) }, uniquingKeysWith: { a, _ in a })
        XCTAssertEqual(byId[shown.id]?.subtitle, "You answered: Deny")
        XCTAssertEqual(byId[shown.id]?.categoryIdentifier, "")
        XCTAssertEqual(byId[missed.id]?.body, "Scale the workers?")
        XCTAssertEqual(byId[missed.id]?.categoryIdentifier, "qp.q.\(missed.id)")
        XCTAssertTrue(categories().contains("qp.q.\(missed.id)"))

        // The registered background refresh runs as the system would run it:
        // it completes (successfully) once and schedules the next.
        let task = try XCTUnwrap(BGTaskScheduler.shared.launch(lifecycle.refreshIdentifier))
        for _ in 0..<100 where task.completion == nil { try await Task.sleep(nanoseconds: 50_000_000) }
        XCTAssertEqual(task.completion, true)
        XCTAssertNotNil(BGTaskScheduler.shared.pendingRequest(lifecycle.refreshIdentifier))
        XCTAssertTrue(isSuspended(app), "a refresh ends with the store closed")
    }

    // The core's foreground call through the glue (issue 26): an answer
    // given while the server was unreachable is sent once when the app comes
    // to the foreground, its notification then shows the resolved copy, and
    // the report says what each step did, in the core's order.
    func testAnAnswerQueuedOfflineIsSentOnceWhenTheAppComesToTheForeground() async throws {
        try requireServer()
        let store = dir + "/shared.sqlite"
        let q = try await showQuestion("Flush the edge cache?", store: store)
        let offline = try core(env("QP_E2E_DEAD_URL"), store)
        _ = try offline.answerAction(questionId: q.id, actionId: "qp.v.approve", text: nil) // committed, not sent
        let app = try core(env("QP_E2E_URL"), store)
        let screen = QPUserNotificationCenter(center)
        let first = await QPReconciler.cameToForeground(core: app, center: screen)
        XCTAssertEqual(first.steps, [.resume, .requeue, .flush, .sync, .reconcile, .badge, .session])
        XCTAssertTrue(first.failures.isEmpty, "\(first.failures)")
        XCTAssertEqual(first.flushed?.answered, 1)
        let state = try await serverQuestion(q.id).state
        XCTAssertEqual(state, "answered")
        let shown = delivered().first { $0.request.identifier == q.id }?.request.content
        XCTAssertEqual(shown?.subtitle, "You answered: Approve", "replaced by its resolved copy")
        XCTAssertEqual(shown?.categoryIdentifier, "", "no buttons")
        XCTAssertNotNil(first.badge, "the badge set from the core's count")
        // The next return to the foreground: no requeue, nothing sent again.
        let again = await QPReconciler.cameToForeground(core: app, center: screen)
        XCTAssertFalse(again.steps.contains(.requeue))
        XCTAssertEqual(again.flushed?.answered, 0, "sent once")
    }

    // Background: the store is closed inside a background task that is
    // ended; foreground: open again and refreshed.
    func testBackgroundSuspendsAndForegroundResumes() async throws {
        try requireServer()
        let app = try core(env("QP_E2E_URL"), dir + "/shared.sqlite")
        let lifecycle = QPAppLifecycle(core: app, refreshIdentifier: "test.refresh.\(UUID().uuidString)")
        let events = NotificationCenter()
        _ = await lifecycle.start(notificationCenter: events).value
        events.post(name: UIApplication.didEnterBackgroundNotification, object: nil)
        await lifecycle.idle() // off the posting thread
        XCTAssertTrue(isSuspended(app))
        XCTAssertEqual(UIApplication.shared.runningBackgroundTasks, [], "every background task begun is ended")
        XCTAssertNotNil(BGTaskScheduler.shared.pendingRequest(lifecycle.refreshIdentifier), "a refresh is scheduled")
        events.post(name: UIApplication.willEnterForegroundNotification, object: nil)
        await lifecycle.idle()
        XCTAssertFalse(isSuspended(app))
    }

    // The lock-screen answer: the completion handler runs once, after the
    // send (the server has the answer by then); launched in the background,
    // the store is closed before completing.
    func testAnswerCompletesOnceAfterTheSend() async throws {
        try requireServer()
        let store = dir + "/shared.sqlite"
        let q = try await showQuestion("Merge the release branch?", store: store)
        let note = q.note
        UIApplication.shared.applicationState = .background
        let app = try core(env("QP_E2E_URL"), store)
        var serverStateAtCompletion: [String] = []
        let work = QPNotificationResponseHandler.handle(
            UNNotificationResponse(notification: note, actionIdentifier: "qp.v.approve"), core: app) {
            // What the asker sees at the moment iOS may suspend the app.
            serverStateAtCompletion.append(blockingServerState(q.id))
        }
        let outcome = await work.value
        if case .committed? = outcome {} else { XCTFail("\(String(describing: outcome))") }
        XCTAssertEqual(serverStateAtCompletion, ["answered"], "completion exactly once, after the send")
        XCTAssertTrue(isSuspended(app), "launched in the background: closed before completing")
        XCTAssertEqual(UIApplication.shared.runningBackgroundTasks, [])
    }

    // Server down: the answer stays queued (tried once before completion),
    // and the next extension run, for any push, delivers it.
    func testServerDownTheAnswerWaitsForTheNextExtensionRun() async throws {
        try requireServer()
        let store = dir + "/shared.sqlite"
        let q = try await showQuestion("Purge the CDN?", store: store)
        let note = q.note
        let offline = try core(env("QP_E2E_DEAD_URL"), store)
        var atCompletion: [MyAnswer?] = []
        _ = await QPNotificationResponseHandler.handle(
            UNNotificationResponse(notification: note, actionIdentifier: "qp.v.deny"), core: offline) {
            atCompletion.append(try? offline.answerStatus(questionId: q.id))
        }.value
        XCTAssertEqual(atCompletion.count, 1)
        XCTAssertEqual(atCompletion.first??.state, .queued)
        XCTAssertEqual(atCompletion.first??.canRetry, true, "a send was attempted before completion")
        let state1 = try await serverQuestion(q.id).state
        XCTAssertEqual(state1, "pending")

        try await Task.sleep(nanoseconds: 4_200_000_000) // past the first backoff (2-4 s)
        let next = try await askQuestion("Another question")
        _ = await runExtension(TestService(url: env("QP_E2E_URL"), store: store),
                               try encodeApnsPayload(questionJson: next.json).json, id: next.id)
        let state2 = try await serverQuestion(q.id).state
        XCTAssertEqual(state2, "answered")
    }

    // An end-to-end encrypted push (the pinned vector): the extension opens
    // it and shows the real question with its buttons; with another key it
    // shows the generic notification the push carries, and never crashes.
    // The core says which notifications on screen are this library's
    // questions (what reconciliation replaces once they are answered): a
    // sealed question the extension showed, its push's userInfo kept, is
    // one as a plain one is; resolutions and the app's own are not. Before,
    // the glue's own key test missed the sealed ones.
    func testTheQuestionsOnScreenIncludeSealedOnesAndNotResolutions() {
        let envelope = #""v":1,"device":"dev_1","enc":"x","ct":"y""#
        let screen: [(String, [AnyHashable: Any])] = [
            ("q_plain", userInfo(#"{"aps":{},"qp":{"id":"q_plain"}}"#)),
            ("q_sealed", userInfo(#"{"aps":{},"qp_e2e":{"kind":"question","id":"q_sealed",\#(envelope)}}"#)),
            ("q_sealed_done", userInfo(#"{"aps":{},"qp_e2e":{"kind":"resolved","id":"q_sealed_done",\#(envelope)}}"#)),
            ("q_pushed_done", userInfo(#"{"aps":{},"qp_resolved":{"id":"q_pushed_done","state":"answered"}}"#)),
            ("q_posted", postedUserInfo(questionId: "q_posted", resolution: false)),
            ("q_posted_done", postedUserInfo(questionId: "q_posted_done", resolution: true)),
            ("chat", ["chat": "1"]),
            // Ours, with a value JSON cannot hold: sign-out still removes it.
            ("q_dated", ["qp_question_id": "q_dated", "when": Date()]),
        ]
        for (id, info) in screen {
            let content = UNMutableNotificationContent()
            content.userInfo = info
            center.add(UNNotificationRequest(identifier: id, content: content, trigger: nil))
        }
        var ids: [String] = []
        QPUserNotificationCenter(center).questionNotificationIds { ids = $0 }
        XCTAssertEqual(Set(ids), ["q_plain", "q_sealed", "q_posted"])
        QPUserNotificationCenter(center).removeAllQuestionNotifications {}
        XCTAssertEqual(delivered().map(\.request.identifier), ["chat"], "only the app's own is left")
    }

    func testASealedPushShowsTheQuestionAndAnUnopenableOneTheGenericWords() async throws {
        let sealed = vectors("e2e").first { $0.1["name"] as? String == "question_apns" }!.1
        let payload = sealed["payload"] as! String
        let key = Data(base64Encoded: sealed["device_secret"] as! String)!
        let dead = "http://127.0.0.1:9"
        let opened = await runExtension(TestService(url: dead, store: dir + "/a.sqlite", keys: MemoryKeyStore(key),
                                                    deviceId: "dev_vector", userId: "u_federica"),
                                        payload, id: "q_e2e_vector")
        XCTAssertEqual(opened.first?.title, "Release Bot asks you")
        XCTAssertEqual(opened.first?.body, "Rotate the production database password?")
        XCTAssertEqual(opened.first?.categoryIdentifier, "qp.q.q_e2e_vector")
        let other = await runExtension(TestService(url: dead, store: dir + "/b.sqlite",
                                                   keys: MemoryKeyStore(Data(repeating: 0x52, count: 32)),
                                                   deviceId: "dev_vector", userId: "u_federica"),
                                       payload, id: "q_e2e_vector")
        XCTAssertEqual(other.first?.title, "New question")
        XCTAssertEqual(other.first?.body, "Open the app to answer.")
        XCTAssertEqual(other.first?.categoryIdentifier, "", "no buttons: a tap opens the app")
    }

    // Issue 32, finding 1: iOS shows a push that skips the extension as it
    // came, with the buttons of the category it names. An injector's words
    // over a held question's buttons do not answer it; the notification the
    // extension showed still does.
    func testAnActionFromANotificationNotShowingTheHeldQuestionIsNotAnAnswer() async throws {
        try requireServer()
        let store = dir + "/shared.sqlite"
        let q = try await showQuestion("Drop the customers table?", store: store)
        let forged = UNMutableNotificationContent()
        forged.categoryIdentifier = "qp.q.\(q.id)"
        forged.body = "Allow Bash: git status"
        let note = UNNotification(request: UNNotificationRequest(identifier: q.id, content: forged, trigger: nil), date: Date())
        let app = try core(env("QP_E2E_URL"), store)
        let outcome = await QPNotificationResponseHandler.handle(
            UNNotificationResponse(notification: note, actionIdentifier: "qp.v.approve"), core: app) {}.value
        if case let .needsApp(_, id)? = outcome, id == q.id {} else { XCTFail("\(String(describing: outcome))") }
        XCTAssertNil(try app.answerStatus(questionId: q.id))
        let pending = try await serverQuestion(q.id).state
        XCTAssertEqual(pending, "pending")
        let real = await QPNotificationResponseHandler.handle(
            UNNotificationResponse(notification: q.note, actionIdentifier: "qp.v.deny"), core: app) {}.value
        if case .committed? = real {} else { XCTFail("\(String(describing: real))") }
    }

    // Not ours: a response in another category completes at once, untouched.
    func testAResponseOfAnotherCategoryCompletesAtOnce() throws {
        let content = UNMutableNotificationContent()
        content.categoryIdentifier = "app.chat"
        let note = UNNotification(request: UNNotificationRequest(identifier: "x", content: content, trigger: nil), date: Date())
        var completions = 0
        let app = try core("http://127.0.0.1:9", dir + "/other.sqlite")
        QPNotificationResponseHandler.handle(UNNotificationResponse(notification: note, actionIdentifier: "reply"),
                                             core: app) { completions += 1 }
        XCTAssertEqual(completions, 1)
    }
}
#endif
