// The paths the system runs while the app may be in the background (an
// answer from the lock screen, an upload's report, a silent push, a
// background refresh) open and close the store through the app's one
// `QPSession`, in step with the lifecycle's return to the foreground; and
// that return re-checks the background uploads, so an answer the system
// lost is sent without waiting for the next launch. Against the real
// `qp serve`, the system's uploads played by the stand-in.
#if os(Linux) // the lifecycle and the answer handler through the stand-ins
import Foundation
import FoundationNetworking
import XCTest
import QuestionProtocol
import QuestionProtocolApp
import UIKit
import UserNotifications

/// The stand-in system, with a moment of the test's own while an upload is
/// handed to it (the answer handler is then between its hand-over and
/// its completion).
final class HookedUploadSystem: QPUploadSystem {
    let system = StandInUploadSystem()
    var onUpload: (() -> Void)?
    func upload(_ request: URLRequest, fromFile body: URL, id: String) {
        system.upload(request, fromFile: body, id: id)
        onUpload?()
    }
    func inFlight(_ completion: @escaping ([String]) -> Void) { system.inFlight(completion) }
}

final class StoreUseTests: XCTestCase {
    private var dir = ""

    override func setUp() {
        UIApplication.shared.applicationState = .active
        dir = NSTemporaryDirectory() + "qp-store-use-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        UIApplication.shared.applicationState = .active
        try? FileManager.default.removeItem(atPath: dir)
    }

    private func phone() throws -> PhoneCore {
        try PhoneCore(storePath: dir + "/shared.sqlite", mode: .app, serverUrl: env("QP_E2E_URL"),
                      userId: env("QP_E2E_USER"), tokens: StaticToken(env("QP_E2E_USER_TOKEN")), languages: ["en"])
    }

    private func state(_ core: PhoneCore, _ id: String) -> AnswerState? {
        (try? core.answerStatus(questionId: id))?.state
    }

    // Issue 47 follow-up: an upload the system lost (missing from its list,
    // never reported) was queued again only by a reconcile at the next
    // launch or the system's next events; an app going between background
    // and foreground kept the answer waiting. Now each return to the
    // foreground reconciles before it sends: the lost answer goes out at
    // the first foreground after the core's grace.
    func testAnAnswerTheSystemLostIsSentAtTheFirstForegroundAfterTheGrace() async throws {
        try requireServer()
        let core = try phone()
        let session = QPSession(core: core)
        let system = StandInUploadSystem()
        let uploads = QPBackgroundAnswers(session: session, system: system, bodies: URL(fileURLWithPath: dir + "/up"))
        let lifecycle = QPAppLifecycle(session: session, uploads: uploads,
                                       refreshIdentifier: "test.refresh.\(UUID().uuidString)")
        let q = try await askQuestion("Store use: lost upload, foreground?")
        _ = try await core.sync()
        _ = try core.answerAction(questionId: q.id, actionId: "qp.v.approve", text: nil)
        XCTAssertEqual(uploads.handOver().count, 1)
        system.forgetAll() // the system lost it: no report will come
        // The launch (the first snapshot that misses it: within the grace).
        let launched = await lifecycle.start(notificationCenter: NotificationCenter()).value
        XCTAssertEqual(launched?.flushed?.answered ?? 0, 0, "its report may still be on the way")
        XCTAssertEqual(state(core, q.id), .handedOver)
        _ = await lifecycle.didEnterBackground().value
        // The core's grace (LOST_HAND_OVER_GRACE_MS, 10 s) passes in the background.
        try await Task.sleep(nanoseconds: 10_500_000_000)
        let back = await lifecycle.willEnterForeground().value
        XCTAssertEqual(back?.flushed?.answered, 1, "sent by the first foreground after the grace")
        XCTAssertEqual(state(core, q.id), .answered)
        let server = try await serverQuestion(q.id)
        XCTAssertEqual(server.state, "answered", server.json)
    }

    // Issue 47 follow-up: the answer handler, launched in the background,
    // opened the store and closed it again by itself. The person opening
    // the app between the two (the lifecycle's resume) was left with a
    // closed store once the handler finished: the app's screens failed
    // with "suspended" until the next return to the foreground. Now the
    // handler's close is skipped when the app came to the foreground.
    func testAnAnswerHandledInTheBackgroundLeavesTheStoreOfAnAppBackInTheForegroundOpen() async throws {
        try requireServer()
        let core = try phone()
        let session = QPSession(core: core)
        let system = HookedUploadSystem()
        let uploads = QPBackgroundAnswers(session: session, system: system, bodies: URL(fileURLWithPath: dir + "/up"))
        let lifecycle = QPAppLifecycle(session: session, refreshIdentifier: "test.refresh.\(UUID().uuidString)")
        let q = try await askQuestion("Store use: answer while coming back?")
        _ = try await core.sync()
        let content = UNMutableNotificationContent()
        content.categoryIdentifier = iosCategoryId(questionId: q.id)
        content.subtitle = "Build #4821"
        content.body = "Store use: answer while coming back?"
        let note = UNNotification(request: UNNotificationRequest(identifier: q.id, content: content, trigger: nil),
                                  date: Date())
        try core.suspend() // the app is in the background, its store closed
        UIApplication.shared.applicationState = .background
        let cameBack = Box<ForegroundReport>()
        system.onUpload = {
            // The person opens the app while the handler is between its
            // hand-over and its completion; the foreground's work is done
            // before the handler goes on.
            UIApplication.shared.applicationState = .active
            let done = DispatchSemaphore(value: 0)
            Task.detached {
                cameBack.value = await lifecycle.willEnterForeground().value
                done.signal()
            }
            XCTAssertEqual(done.wait(timeout: .now() + 20), .success)
        }
        var completions = 0
        let outcome = await QPNotificationResponseHandler.handle(
            UNNotificationResponse(notification: note, actionIdentifier: "qp.v.approve"), session: session,
            uploads: uploads) { completions += 1 }.value
        if case .committed? = outcome {} else { XCTFail("\(String(describing: outcome))") }
        XCTAssertEqual(completions, 1)
        XCTAssertNotNil(cameBack.value, "the foreground ran meanwhile")
        XCTAssertFalse(isSuspended(core), "the foreground app's store is open after the handler")
        XCTAssertEqual(state(core, q.id), .handedOver)
        await system.system.deliver(to: uploads)
        XCTAssertEqual(state(core, q.id), .answered)
    }

    // The other side of the same rule: with the app still in the
    // background, the handler keeps the store open while it works and
    // closes it before completing (iOS may suspend the app then, which
    // must not hold the store's lock).
    func testAnAnswerHandledInTheBackgroundClosesTheStoreBeforeCompleting() async throws {
        try requireServer()
        let core = try phone()
        let session = QPSession(core: core)
        let system = HookedUploadSystem()
        let uploads = QPBackgroundAnswers(session: session, system: system, bodies: URL(fileURLWithPath: dir + "/up"))
        let q = try await askQuestion("Store use: answer in the background?")
        _ = try await core.sync()
        let content = UNMutableNotificationContent()
        content.categoryIdentifier = iosCategoryId(questionId: q.id)
        content.subtitle = "Build #4821"
        content.body = "Store use: answer in the background?"
        let note = UNNotification(request: UNNotificationRequest(identifier: q.id, content: content, trigger: nil),
                                  date: Date())
        try core.suspend()
        UIApplication.shared.applicationState = .background
        var openDuringHandOver: Bool?
        system.onUpload = { openDuringHandOver = !isSuspended(core) }
        var suspendedAtCompletion: Bool?
        _ = await QPNotificationResponseHandler.handle(
            UNNotificationResponse(notification: note, actionIdentifier: "qp.v.approve"), session: session,
            uploads: uploads) { suspendedAtCompletion = isSuspended(core) }.value
        XCTAssertEqual(openDuringHandOver, true)
        XCTAssertEqual(suspendedAtCompletion, true, "closed before the completion handler")
        try core.resume()
        XCTAssertEqual(state(core, q.id), .handedOver)
    }
    // Launched into the background (Apple's order:
    // didFinishLaunching, didEnterBackground, then the event), `start()`'s
    // return to the foreground reopened the store after didEnterBackground
    // had closed it, and nothing closed it again: the upload's report left
    // the open store open and the events' completion handler let iOS
    // suspend the app holding its lock (0xdead10cc). Now a background
    // launch runs as background work and closes the store when it ends.
    func testABackgroundLaunchLeavesTheStoreClosedOnceTheEventsAreHandled() async throws {
        try requireServer()
        let core = try phone()
        let session = QPSession(core: core)
        let system = QPSystemUploads()
        let uploads = QPBackgroundAnswers(session: session, system: system, bodies: URL(fileURLWithPath: dir + "/up"))
        let q = try await askQuestion("Store use: background launch?")
        _ = try await core.sync()
        _ = try core.answerAction(questionId: q.id, actionId: "qp.v.approve", text: nil)
        XCTAssertEqual(uploads.handOver().count, 1)
        // The upload finishes; its report waits for `answers` (the relaunch).
        let end = Date().addingTimeInterval(10)
        while await withCheckedContinuation({ c in system.inFlight { c.resume(returning: $0) } }).count > 0,
              Date() < end {
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        try core.suspend() // the process before went to the background
        // The relaunch into the background.
        UIApplication.shared.applicationState = .background
        let lifecycle = QPAppLifecycle(session: session, uploads: uploads,
                                       refreshIdentifier: "test.refresh.\(UUID().uuidString)")
        let launched = lifecycle.start(notificationCenter: NotificationCenter())
        let closed = lifecycle.didEnterBackground()
        system.answers = uploads
        _ = await closed.value
        _ = await launched.value
        let suspendedThen = await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            system.handleEvents { c.resume(returning: isSuspended(core)) }
            system.urlSessionDidFinishEvents(forBackgroundURLSession: URLSession(configuration: .ephemeral))
        }
        XCTAssertEqual(suspendedThen, true, "the store is closed when iOS may suspend the app")
        try core.resume()
        XCTAssertEqual(state(core, q.id), .answered, "the report was recorded")
    }
}
#endif
