// Answers handed to the system as background uploads, against the real
// `qp serve`. The system's background session cannot exist on Linux
// (`URLSessionConfiguration.background` is unavailable there), so a
// stand-in plays the system: it keeps the uploads across a "relaunch",
// sends them with a real URLSession upload from the body file when told,
// and reports to whichever app process is running then, as iOS does.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
import QuestionProtocol
import QuestionProtocolApp
#if os(Linux)
import UserNotifications
#endif

/// The system's background transfer service, as far as these tests need it.
final class StandInUploadSystem: QPUploadSystem {
    struct Upload { let request: URLRequest; let file: URL; let id: String }
    private(set) var held: [Upload] = []

    func upload(_ request: URLRequest, fromFile body: URL, id: String) {
        held.append(Upload(request: request, file: body, id: id))
    }

    func inFlight(_ completion: @escaping ([String]) -> Void) { completion(held.map(\.id)) }

    /// The system lost its uploads (the app was deleted and restored, the
    /// device wiped its transfer store).
    func forgetAll() { held.removeAll() }

    /// What the system will report of an upload it finished.
    struct Report { let id: String; let body: Data?; let response: URLResponse?; let error: Error? }

    /// The system sends every upload now; its reports wait (the app is not
    /// running, or has not made its session yet). The uploads leave the
    /// system's list, as finished tasks do.
    func sendHoldingReports() async -> [Report] {
        let uploads = held
        held.removeAll()
        var reports: [Report] = []
        for u in uploads {
            let (body, response, error) = await withCheckedContinuation { c in
                URLSession(configuration: .ephemeral).uploadTask(with: u.request, fromFile: u.file) { d, r, e in
                    c.resume(returning: (d, r, e))
                }.resume()
            }
            reports.append(Report(id: u.id, body: body, response: response, error: error))
        }
        return reports
    }

    /// The system sends every upload now and reports each to `app`.
    func deliver(to app: QPBackgroundAnswers) async {
        for r in await sendHoldingReports() {
            app.completed(id: r.id, response: r.response, body: r.body, error: r.error)
        }
    }

    /// The system reports a failure for every upload (no network).
    func failAll(to app: QPBackgroundAnswers) {
        let uploads = held
        held.removeAll()
        for u in uploads {
            app.completed(id: u.id, response: nil, body: nil, error: URLError(.notConnectedToInternet))
        }
    }
}

final class BackgroundAnswersTests: XCTestCase {
    private var dir = ""

    override func setUp() {
        dir = NSTemporaryDirectory() + "qp-background-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    /// One app process: a phone over the shared store and its glue.
    private func launch(_ system: QPUploadSystem) throws -> (PhoneCore, QPBackgroundAnswers) {
        let core = try PhoneCore(storePath: dir + "/shared.sqlite", mode: .app, serverUrl: env("QP_E2E_URL"),
                                 userId: env("QP_E2E_USER"), tokens: StaticToken(env("QP_E2E_USER_TOKEN")),
                                 languages: ["en"])
        return (core, QPBackgroundAnswers(core: core, system: system,
                                          bodies: URL(fileURLWithPath: dir + "/uploads")))
    }

    /// A question the phone read from the server, answered from its notification.
    private func answered(_ prompt: String, _ core: PhoneCore) async throws -> String {
        let q = try await askQuestion(prompt)
        _ = try await core.sync()
        _ = try core.answerAction(questionId: q.id, actionId: "qp.v.approve", text: nil)
        return q.id
    }

    private func state(_ core: PhoneCore, _ id: String) -> AnswerState? {
        (try? core.answerStatus(questionId: id))?.state
    }

    func testAHandedOverAnswerIsConfirmedAfterARelaunch() async throws {
        try requireServer()
        let system = StandInUploadSystem()
        var id = ""
        do {
            let (core, app) = try launch(system)
            id = try await answered("Background: deploy?", core)
            XCTAssertEqual(app.handOver().count, 1)
            XCTAssertEqual(state(core, id), .handedOver)
            // The app's own flush leaves it to the system.
            let flushed = try await core.flush()
            XCTAssertEqual(flushed.answered + flushed.willRetry, 0)
        } // the process is killed while the system uploads

        let (core, app) = try launch(system) // relaunched for the report
        _ = try core.requeueInterrupted()
        var requeued: UInt32 = 99
        app.reconcile { requeued = $0 }
        XCTAssertEqual(requeued, 0, "the system still holds it")
        XCTAssertEqual(state(core, id), .handedOver)
        await system.deliver(to: app)
        XCTAssertEqual(state(core, id), .answered)
        let server = try await serverQuestion(id)
        XCTAssertEqual(server.state, "answered", server.json)
        // Nothing left to send, nothing sent twice.
        let again = try await core.flush()
        XCTAssertEqual(again.answered, 0)
        XCTAssertTrue(FileManager.default.enumerator(atPath: dir + "/uploads")?.allObjects.isEmpty ?? true)
    }

    func testAReportArrivingWhileTheStoreIsSuspendedIsRecordedAndTheStoreSuspendedAgain() async throws {
        try requireServer()
        let system = StandInUploadSystem()
        let (core, app) = try launch(system)
        let id = try await answered("Background: while suspended?", core)
        XCTAssertEqual(app.handOver().count, 1)
        try core.suspend() // the app went to the background; the system wakes it for the report
        await system.deliver(to: app)
        XCTAssertThrowsError(try core.answerStatus(questionId: id), "suspended again after the report")
        try core.resume()
        XCTAssertEqual(state(core, id), .answered)
        let server = try await serverQuestion(id)
        XCTAssertEqual(server.state, "answered", server.json)
    }

    func testAFailedUploadIsRetriedByTheFlushOnce() async throws {
        try requireServer()
        let system = StandInUploadSystem()
        let (core, app) = try launch(system)
        let id = try await answered("Background: retry me?", core)
        XCTAssertEqual(app.handOver().count, 1)
        system.failAll(to: app)
        XCTAssertEqual(state(core, id), .queued)
        XCTAssertTrue((try core.answerStatus(questionId: id))?.status.contains("offline") ?? false)
        _ = try core.retry(questionId: id)
        let report = try await core.flush()
        XCTAssertEqual(report.answered, 1)
        XCTAssertEqual(state(core, id), .answered)
        // A late second report of the same upload changes nothing.
        XCTAssertEqual(app.completed(id: id, response: nil, body: nil, error: URLError(.timedOut)),
                       FlushReport(answered: 0, alreadyResolved: 0, rejected: 0, willRetry: 0, withdraw: [],
                                   unauthorized: false))
        XCTAssertEqual(state(core, id), .answered)
    }

    func testAnUploadTheSystemLostGoesBackToTheOutbox() async throws {
        try requireServer()
        let system = StandInUploadSystem()
        var id = ""
        do {
            let (core, app) = try launch(system)
            id = try await answered("Background: lost?", core)
            XCTAssertEqual(app.handOver().count, 1)
        }
        system.forgetAll()
        let (core, app) = try launch(system)
        var requeued: UInt32 = 99
        app.reconcile { requeued = $0 }
        XCTAssertEqual(requeued, 0, "missing once: its report may still be on the way")
        XCTAssertEqual(state(core, id), .handedOver)
        // Still missing after the core's grace (LOST_HAND_OVER_GRACE_MS, 10 s): lost.
        try await Task.sleep(nanoseconds: 10_500_000_000)
        app.reconcile { requeued = $0 }
        XCTAssertEqual(requeued, 1)
        let report = try await core.flush()
        XCTAssertEqual(report.answered, 1)
        XCTAssertEqual(state(core, id), .answered)
    }
}

extension BackgroundAnswersTests {
    // Issue 47: the system delivered the upload while the app was not
    // running; the relaunched app's reconcile runs before the session hands
    // it the report. The answer is not queued again (and sent twice): the
    // report, when it comes, is its one final state.
    func testAnUploadDeliveredWithItsReportStillOnTheWayIsNotSentAgain() async throws {
        try requireServer()
        let system = StandInUploadSystem()
        var id = ""
        do {
            let (core, app) = try launch(system)
            id = try await answered("Background: delivered, report pending?", core)
            XCTAssertEqual(app.handOver().count, 1)
        } // killed; the system uploads
        let reports = await system.sendHoldingReports()
        XCTAssertEqual(reports.count, 1)
        let delivered = try await serverQuestion(id)
        XCTAssertEqual(delivered.state, "answered", delivered.json)

        let (core, app) = try launch(system)
        _ = try core.requeueInterrupted()
        var requeued: UInt32 = 99
        app.reconcile { requeued = $0 }
        XCTAssertEqual(requeued, 0, "the report may still come")
        let flushed = try await core.flush()
        XCTAssertEqual(flushed.answered + flushed.alreadyResolved + flushed.willRetry, 0, "nothing sent again")
        for r in reports {
            let report = app.completed(id: r.id, response: r.response, body: r.body, error: r.error)
            XCTAssertEqual(report?.answered, 1)
        }
        XCTAssertEqual(state(core, id), .answered)
        app.reconcile { requeued = $0 }
        XCTAssertEqual(requeued, 0)
        let again = try await core.flush()
        XCTAssertEqual(again.answered + again.alreadyResolved, 0)
    }
}

#if os(Linux) // builds the notification through the stand-ins
final class BackgroundAnswerHandlerTests: XCTestCase {
    // The lock-screen answer handed to the system: the completion handler
    // runs once, after the hand-over and before any send; the system's
    // report then confirms it.
    func testTheHandlerHandsTheAnswerOverThenCompletesOnce() async throws {
        try requireServer()
        let dir = NSTemporaryDirectory() + "qp-handler-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let core = try PhoneCore(storePath: dir + "/shared.sqlite", mode: .app, serverUrl: env("QP_E2E_URL"),
                                 userId: env("QP_E2E_USER"), tokens: StaticToken(env("QP_E2E_USER_TOKEN")),
                                 languages: ["en"])
        let q = try await askQuestion("Handler: hand it over?")
        _ = try await core.sync() // the question as the server has it
        let content = UNMutableNotificationContent()
        content.categoryIdentifier = iosCategoryId(questionId: q.id)
        content.subtitle = "Build #4821"
        content.body = "Handler: hand it over?"
        let note = UNNotification(request: UNNotificationRequest(identifier: q.id, content: content, trigger: nil),
                                  date: Date())
        let system = StandInUploadSystem()
        let uploads = QPBackgroundAnswers(core: core, system: system, bodies: URL(fileURLWithPath: dir + "/up"))
        var completions = 0
        let outcome = await QPNotificationResponseHandler.handle(
            UNNotificationResponse(notification: note, actionIdentifier: "qp.v.approve"), core: core,
            uploads: uploads) { completions += 1 }.value
        if case .committed? = outcome {} else { XCTFail("\(String(describing: outcome))") }
        XCTAssertEqual(completions, 1)
        XCTAssertEqual(system.held.count, 1)
        try? core.resume()
        XCTAssertEqual((try? core.answerStatus(questionId: q.id))?.state, .handedOver)
        let before = try await serverQuestion(q.id)
        XCTAssertEqual(before.state, "pending", "nothing sent by the app itself")
        await system.deliver(to: uploads)
        XCTAssertEqual((try? core.answerStatus(questionId: q.id))?.state, .answered)
        let after = try await serverQuestion(q.id)
        XCTAssertEqual(after.state, "answered")
    }
    // The handler took any hand-over as its own: an
    // older answer handed over while this one (its question known only from
    // a plain push, which waits for the server's check) stayed queued, and
    // the handler completed without sending it. Now it looks for its own
    // question among those handed over, and sends it otherwise.
    func testAnAnswerLeftOutOfTheHandOverIsSentByTheHandler() async throws {
        try requireServer()
        let dir = NSTemporaryDirectory() + "qp-handler-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let core = try PhoneCore(storePath: dir + "/shared.sqlite", mode: .app, serverUrl: env("QP_E2E_URL"),
                                 userId: env("QP_E2E_USER"), tokens: StaticToken(env("QP_E2E_USER_TOKEN")),
                                 languages: ["en"])
        let older = try await askQuestion("Handler: the older answer?")
        _ = try await core.sync()
        _ = try core.answerAction(questionId: older.id, actionId: "qp.v.approve", text: nil) // due, not sent
        let q = try await askQuestion("Handler: known from a plain push?")
        _ = try core.receiveApns(json: try encodeApnsPayload(questionJson: q.json).json) // no sync: unverified
        let content = UNMutableNotificationContent()
        content.categoryIdentifier = iosCategoryId(questionId: q.id)
        content.subtitle = "Build #4821"
        content.body = "Handler: known from a plain push?"
        let note = UNNotification(request: UNNotificationRequest(identifier: q.id, content: content, trigger: nil),
                                  date: Date())
        let system = StandInUploadSystem()
        let uploads = QPBackgroundAnswers(core: core, system: system, bodies: URL(fileURLWithPath: dir + "/up"))
        var completions = 0
        _ = await QPNotificationResponseHandler.handle(
            UNNotificationResponse(notification: note, actionIdentifier: "qp.v.approve"), core: core,
            uploads: uploads) { completions += 1 }.value
        XCTAssertEqual(completions, 1)
        try? core.resume()
        XCTAssertEqual(system.held.count, 1, "the older answer, handed over")
        let server = try await serverQuestion(q.id)
        XCTAssertEqual(server.state, "answered", "this answer sent by the handler: \(server.json)")
        await system.deliver(to: uploads) // the older one, reported (no question left pending)
        XCTAssertEqual((try? core.answerStatus(questionId: older.id))?.state, .answered)
    }
}
#endif
