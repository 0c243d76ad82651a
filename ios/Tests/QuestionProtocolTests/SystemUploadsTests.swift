// The library's own URLSession code against the real `qp serve`: the
// background session's delegate (`QPSystemUploads`) and the transport's
// rules (no redirect followed, the core's time limit kept). On Linux,
// swift-corelibs-foundation has no background configuration
// (`URLSessionConfiguration.background` is unavailable): `QPSystemUploads`
// runs there with the ephemeral configuration it uses on Linux, the same
// delegate methods and upload tasks from a body file. What only iOS does
// (keeping the upload across the app's death, relaunching the app with
// `handleEventsForBackgroundURLSession`) stays unverified here; the
// stand-in system of BackgroundAnswersTests plays it.
#if os(Linux) // the lifecycle and the delegate's callers through the stand-ins
import Foundation
import FoundationNetworking
import Glibc
import XCTest
import QuestionProtocol
import QuestionProtocolApp
@testable import QuestionProtocolSnippets
import UIKit
import UserNotifications

final class SystemUploadsTests: XCTestCase {
    private var dir = ""

    override func setUp() {
        dir = NSTemporaryDirectory() + "qp-system-uploads-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    private func phone() throws -> PhoneCore {
        try PhoneCore(storePath: dir + "/shared.sqlite", mode: .app, serverUrl: env("QP_E2E_URL"),
                      userId: env("QP_E2E_USER"), tokens: StaticToken(env("QP_E2E_USER_TOKEN")), languages: ["en"])
    }

    private func answered(_ prompt: String, _ core: PhoneCore) async throws -> String {
        let q = try await askQuestion(prompt)
        _ = try await core.sync()
        _ = try core.answerAction(questionId: q.id, actionId: "qp.v.approve", text: nil)
        return q.id
    }

    private func state(_ core: PhoneCore, _ id: String) -> AnswerState? {
        (try? core.answerStatus(questionId: id))?.state
    }

    /// Polls `ok` for up to `seconds`.
    private func eventually(_ seconds: TimeInterval = 10, _ ok: () async throws -> Bool) async rethrows -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if try await ok() { return true }
            try? await Task.sleep(nanoseconds: 100_000_000)
        }
        return try await ok()
    }

    // The real delegate: an answer handed over goes to qp serve as an upload
    // task from its body file, and the session's report (didReceive data,
    // didCompleteWithError) records it, once.
    func testTheSystemUploadsSendAnAnswerToQpServeAndRecordItsReport() async throws {
        try requireServer()
        let core = try phone()
        let system = QPSystemUploads()
        let answers = QPBackgroundAnswers(core: core, system: system, bodies: URL(fileURLWithPath: dir + "/uploads"))
        system.answers = answers
        let id = try await answered("System uploads: deploy?", core)
        XCTAssertEqual(answers.handOver().count, 1)
        let recorded = await eventually { state(core, id) == .answered }
        XCTAssertTrue(recorded, "state: \(String(describing: state(core, id)))")
        let server = try await serverQuestion(id)
        XCTAssertEqual(server.state, "answered", server.json)
        let inFlight = await withCheckedContinuation { c in system.inFlight { c.resume(returning: $0) } }
        XCTAssertEqual(inFlight, [], "a finished upload is no longer the session's")
        let again = try await core.flush()
        XCTAssertEqual(again.answered, 0)
        XCTAssertTrue(FileManager.default.enumerator(atPath: dir + "/uploads")?.allObjects.isEmpty ?? true)
    }

    // Reports that come between the delegate's creation (the app
    // delegate's init) and `answers` being set (didFinishLaunching) are
    // held and recorded then, not dropped.
    func testAReportBeforeAnswersIsSetIsHeldThenRecorded() async throws {
        try requireServer()
        let core = try phone()
        let system = QPSystemUploads()
        let answers = QPBackgroundAnswers(core: core, system: system, bodies: URL(fileURLWithPath: dir + "/uploads"))
        let id = try await answered("System uploads: early report?", core)
        XCTAssertEqual(answers.handOver().count, 1)
        let delivered = try await eventually { try await serverQuestion(id).state == "answered" }
        XCTAssertTrue(delivered)
        let finished = await eventually {
            await withCheckedContinuation { c in system.inFlight { c.resume(returning: $0) } }.isEmpty
        }
        XCTAssertTrue(finished, "the upload's task finished: its report came")
        XCTAssertEqual(state(core, id), .handedOver, "nobody to record it yet")
        system.answers = answers
        let recorded = await eventually { state(core, id) == .answered }
        XCTAssertTrue(recorded, "the held report was recorded; state: \(String(describing: state(core, id)))")
    }

    // The session may finish its events before the app hands over the
    // completion handler, or after: the handler is called once either way.
    func testTheEventsCompletionHandlerIsCalledWhicheverComesFirst() {
        let session = URLSession(configuration: .ephemeral)
        // The session first, then the app.
        let early = QPSystemUploads()
        early.urlSessionDidFinishEvents(forBackgroundURLSession: session)
        let first = expectation(description: "called after the session finished first")
        early.handleEvents { XCTAssertTrue(Thread.isMainThread); first.fulfill() }
        wait(for: [first], timeout: 5)
        // The app first, then the session.
        let late = QPSystemUploads()
        let second = expectation(description: "called once the session finished")
        late.handleEvents { XCTAssertTrue(Thread.isMainThread); second.fulfill() }
        late.urlSessionDidFinishEvents(forBackgroundURLSession: session)
        wait(for: [second], timeout: 5)
        // Once: a second finish without a new handler calls nothing.
        late.urlSessionDidFinishEvents(forBackgroundURLSession: session)
        RunLoop.main.run(until: Date().addingTimeInterval(0.3))
    }

    // A finish no handler waited for left its flag
    // set, and a later batch's handler was called at once, before that
    // batch's reports were recorded. A report after a finish begins the
    // next batch: its handler waits for the next finish.
    func testAFinishNoHandlerWaitedForDoesNotCompleteTheNextBatch() throws {
        try requireServer()
        let session = URLSession(configuration: .ephemeral)
        let system = QPSystemUploads()
        system.answers = QPBackgroundAnswers(core: try phone(), system: system,
                                             bodies: URL(fileURLWithPath: dir + "/uploads"))
        system.urlSessionDidFinishEvents(forBackgroundURLSession: session) // nobody waited
        RunLoop.main.run(until: Date().addingTimeInterval(0.5)) // its reconcile done
        let task = session.dataTask(with: URL(string: "http://127.0.0.1:9/")!)
        system.urlSession(session, task: task, didCompleteWithError: URLError(.cancelled)) // the next batch
        var called = 0
        system.handleEvents { called += 1 }
        RunLoop.main.run(until: Date().addingTimeInterval(0.3))
        XCTAssertEqual(called, 0, "the next batch has not finished")
        system.urlSessionDidFinishEvents(forBackgroundURLSession: session)
        let end = Date().addingTimeInterval(5)
        while called == 0, Date() < end { RunLoop.main.run(until: Date().addingTimeInterval(0.05)) }
        XCTAssertEqual(called, 1)
    }

    // The delegate held `answers` weakly: an app
    // that set it without keeping its own reference lost it at once, its
    // reports were held forever and the completion handler never called.
    func testAnswersTheAppDoesNotKeepStillRecordTheReports() async throws {
        try requireServer()
        let core = try phone()
        let system = QPSystemUploads()
        system.answers = QPBackgroundAnswers(core: core, system: system,
                                             bodies: URL(fileURLWithPath: dir + "/uploads"))
        XCTAssertNotNil(system.answers, "kept by the delegate")
        let id = try await answered("System uploads: nobody keeps the answers?", core)
        XCTAssertEqual(system.answers?.handOver().count, 1)
        let recorded = await eventually { state(core, id) == .answered }
        XCTAssertTrue(recorded, "state: \(String(describing: state(core, id)))")
    }

    // The docs' app delegate: a relaunch for one of the app's own
    // background sessions goes to the app's code; the library's identifier
    // to the library, whose handler is called once its session is done.
    func testTheDocsDelegateGivesTheLibraryOnlyItsOwnSession() {
        AppGroup.container = URL(fileURLWithPath: dir)
        let delegate = AppDelegate()
        let before = AppDownloads.handled.count
        var appsOwn = 0
        delegate.application(UIApplication.shared, handleEventsForBackgroundURLSession: "com.example.app.downloads") {
            appsOwn += 1
        }
        XCTAssertEqual(appsOwn, 1)
        XCTAssertEqual(AppDownloads.handled.count, before + 1)
        let library = expectation(description: "the library's handler")
        delegate.application(UIApplication.shared, handleEventsForBackgroundURLSession: QPSystemUploads.identifier) {
            library.fulfill()
        }
        XCTAssertEqual(AppDownloads.handled.count, before + 1, "not the app's")
        delegate.uploadSystem.urlSessionDidFinishEvents(forBackgroundURLSession: URLSession(configuration: .ephemeral))
        wait(for: [library], timeout: 5)
    }

    // A 3xx is the core's to read (it names the status), never followed:
    // qp serve redirects GET /app to /app/ (308).
    func testARedirectIsAResponseNotFollowed() async throws {
        try requireServer()
        let request = HttpRequest(method: .get, url: env("QP_E2E_URL") + "/app", headers: [], body: nil, timeoutMs: 5000)
        let response = try await URLSessionTransport().send(request: request)
        XCTAssertEqual(response.status, 308)
    }

    // The core's time limit is the whole exchange's: a server that sends a
    // byte every 0.3 s never lets URLSession's idle timeout fire, and
    // would take 6 s; the request ends at the core's 1.5 s.
    func testARequestIsCancelledWhenTheCoresTimeLimitPasses() async throws {
        let url = tricklingServerURL(bytes: 20, every: 0.3)
        let request = HttpRequest(method: .get, url: url + "/slow", headers: [], body: nil, timeoutMs: 1500)
        let start = Date()
        do {
            let r = try await URLSessionTransport().send(request: request)
            XCTFail("answered after \(Date().timeIntervalSince(start)) s: \(r.status)")
        } catch HttpError.TimedOut(let reason) {
            XCTAssertLessThan(Date().timeIntervalSince(start), 4, reason)
        }
    }

    // A report that found the store suspended opens it for itself and
    // suspends it again; the app coming to the foreground meanwhile waits
    // for that and opens it after, so the foreground app keeps its store.
    func testAReportWhileSuspendedDoesNotCloseTheStoreOfAnAppBackInTheForeground() async throws {
        try requireServer()
        let core = try phone()
        let session = QPSession(core: core)
        let system = StandInUploadSystem()
        let answers = QPBackgroundAnswers(session: session, system: system, bodies: URL(fileURLWithPath: dir + "/up"))
        let lifecycle = QPAppLifecycle(session: session)
        let id = try await answered("System uploads: report while suspended?", core)
        XCTAssertEqual(answers.handOver().count, 1)
        try core.suspend() // the app went to the background
        let reports = await system.sendHoldingReports()
        let foreground = Box<Task<ForegroundReport?, Never>>()
        answers.afterReopening = {
            // The person opens the app right then. Its resume must not run
            // inside the report's reopen-and-suspend: given a second, it
            // would (before: it did, and the report's suspend closed it).
            foreground.value = lifecycle.willEnterForeground()
            let idle = DispatchSemaphore(value: 0)
            Task { await lifecycle.idle(); idle.signal() }
            _ = idle.wait(timeout: .now() + 1)
        }
        for r in reports { // on the session's delegate queue, as the system reports
            await withCheckedContinuation { c in
                DispatchQueue.global().async {
                    answers.completed(id: r.id, response: r.response, body: r.body, error: r.error)
                    c.resume()
                }
            }
        }
        _ = await foreground.value?.value
        await lifecycle.idle()
        XCTAssertNoThrow(try core.answerStatus(questionId: id), "the foreground app's store is open")
        XCTAssertEqual(state(core, id), .answered)
    }

    // A store that could not be opened at launch (here its folder was
    // missing; on a phone a full disk, a file protected before the first
    // unlock) is opened by the next entry point, not left until relaunch.
    func testASessionThatCouldNotOpenIsOpenedByTheNextEntryPoint() async throws {
        let folder = dir + "/group"
        let session = QPSession(storePath: folder + "/shared.sqlite", mode: .app, vault: FakeVault(),
                                languages: ["en"])
        let first = await session.core()
        XCTAssertNil(first)
        XCTAssertNotNil(session.failure)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let next = await session.core()
        XCTAssertNotNil(next, "opened again by the next call: \(String(describing: session.failure))")
        XCTAssertNil(session.failure)
    }
}

/// A value set on one thread, read on another after a wait.
final class Box<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T?
    var value: T? {
        get { lock.lock(); defer { lock.unlock() }; return stored }
        set { lock.lock(); stored = newValue; lock.unlock() }
    }
}

/// A loopback server that answers every request with a 200 whose `bytes`
/// body bytes come one every `every` seconds: never quiet long enough for
/// URLSession's own (idle) timeout.
func tricklingServerURL(bytes: Int, every: TimeInterval) -> String {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = 0
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
    _ = listen(fd, 16)
    _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
    Thread.detachNewThread {
        while true {
            let c = accept(fd, nil, nil)
            if c < 0 { return }
            Thread.detachNewThread {
                var request = [UInt8](repeating: 0, count: 4096)
                _ = recv(c, &request, request.count, 0)
                let noSignal: Int32 = 0x4000 // MSG_NOSIGNAL: a client gone is an error, not SIGPIPE
                var head = Array("HTTP/1.1 200 OK\r\nContent-Length: \(bytes)\r\nConnection: close\r\n\r\n".utf8)
                _ = send(c, &head, head.count, noSignal)
                for _ in 0..<bytes {
                    Thread.sleep(forTimeInterval: every)
                    var byte: UInt8 = 0x2e
                    if send(c, &byte, 1, noSignal) < 0 { break }
                }
                close(c)
            }
        }
    }
    return "http://127.0.0.1:\(UInt16(bigEndian: addr.sin_port))"
}
#endif
