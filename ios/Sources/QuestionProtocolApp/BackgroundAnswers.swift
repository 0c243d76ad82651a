// Apple glue, app only: answers given from a notification action go as
// background uploads, which the system finishes after the app is
// suspended or killed and reports on later, to this process or to the one
// it relaunches (`application(_:handleEventsForBackgroundURLSession:
// completionHandler:)`). The Rust core builds each request and keeps the
// answer "handed over" in its outbox until the report; the report is read
// by the core's one set of rules for a reply, so each answer reaches
// exactly one final state.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import QuestionProtocol

/// Where background uploads live: the system's background `URLSession`
/// (`QPSystemUploads`), or a stand-in in tests.
public protocol QPUploadSystem: AnyObject {
    /// Starts the upload of the file at `body` with `request`, tagged `id`.
    func upload(_ request: URLRequest, fromFile body: URL, id: String)
    /// The ids of the uploads the system still holds.
    func inFlight(_ completion: @escaping ([String]) -> Void)
}

@available(iOSApplicationExtension, unavailable)
public final class QPBackgroundAnswers {
    private let session: QPSession
    private let system: QPUploadSystem
    private let bodies: URL

    /// `bodies`: a folder of the app's own for the uploads' bodies (the
    /// system uploads from a file); each is removed once reported.
    /// `session` may still be opening (at launch, where the system may
    /// report at once): each call waits for it on the caller's queue, the
    /// system's or the answer handler's, never the main thread's.
    public init(session: QPSession, system: QPUploadSystem, bodies: URL) {
        self.session = session
        self.system = system
        self.bodies = bodies
    }

    /// Over a session already open.
    public convenience init(core: PhoneCore, system: QPUploadSystem, bodies: URL) {
        self.init(session: QPSession(core: core), system: system, bodies: bodies)
    }

    /// Hands every due answer to the system (call it once the answer is
    /// committed, before the action's completion handler); returns the ids
    /// handed over. What cannot be handed over stays in the outbox for the
    /// next flush.
    @discardableResult
    public func handOver() -> [String] {
        guard let core = session.waitForCore() else { return [] }
        guard let handed = reported("background answers: hand-over", { try core.handOverAnswers() }) else { return [] }
        _ = reported("background answers: the bodies' folder") {
            try FileManager.default.createDirectory(at: bodies, withIntermediateDirectories: true)
            try QPDataProtection.protect(bodies.path)
        }
        var ids: [String] = []
        for h in handed {
            let file = bodyFile(h.id)
            do {
                var request = try URLSessionTransport.urlRequest(h.request)
                try (request.httpBody ?? Data()).write(to: file, options: .atomic)
                // The system uploads it from the file, on the lock screen too: a
                // body it cannot read there would fail the answer until unlock.
                reported("background answers: the body's protection") { try QPDataProtection.protect(file.path) }
                request.httpBody = nil
                system.upload(request, fromFile: file, id: h.id)
                ids.append(h.id)
            } catch {
                // Never started: the system reports nothing, so it goes
                // back to the outbox now.
                _ = reported("background answers: an upload never started") {
                    try core.handedOverOutcome(id: h.id, result: .failed(failure: .unreachable, reason: "\(error)"))
                }
            }
        }
        return ids
    }

    /// The system reported on the upload `id` (the session delegate's
    /// `didCompleteWithError`, with the data received): the outcome goes to
    /// the outbox. A report of an answer no longer handed over changes
    /// nothing.
    @discardableResult
    public func completed(id: String?, response: URLResponse?, body: Data?, error: Error?) -> FlushReport? {
        guard let id = id else { return nil }
        guard let core = session.waitForCore() else {
            // Not recorded: the launch's reconcile queues the answer again.
            reportGlueFailure(site: "background answers: the report", error: "no session")
            return nil
        }
        let result = URLSessionTransport.handoverResult(response: response, body: body, error: error)
        let report: FlushReport?
        do {
            report = try core.handedOverOutcome(id: id, result: result)
        } catch QpError.Storage(kind: .suspended, _) {
            // The system woke the app in the background, where the store
            // was suspended (an answer's hand-over, didEnterBackground): it
            // opens for this report and is suspended again, so the outcome
            // is not left for the next launch.
            report = reported("background answers: the report while suspended") { () throws -> FlushReport in
                try core.resume()
                defer { _ = reported("background answers: suspend again") { try core.suspend() } }
                return try core.handedOverOutcome(id: id, result: result)
            }
        } catch {
            reportGlueFailure(site: "background answers: the report", error: "\(error)")
            report = nil
        }
        // The body goes once the outcome is recorded: if recording failed,
        // the launch's reconcile sends the answer again from the outbox.
        let file = bodyFile(id)
        if FileManager.default.fileExists(atPath: file.path) {
            _ = reported("background answers: removing the body") { try FileManager.default.removeItem(at: file) }
        }
        return report
    }

    /// At launch: answers handed over that the system no longer holds and
    /// never reported on go back to the outbox, for the next flush.
    public func reconcile(_ done: @escaping (UInt32) -> Void = { _ in }) {
        system.inFlight { [session] ids in
            guard let core = session.waitForCore() else { return done(0) }
            done(reported("background answers: reconcile") { try core.requeueLostHandOvers(inFlight: ids) } ?? 0)
        }
    }

    private func bodyFile(_ id: String) -> URL {
        bodies.appendingPathComponent("\(id).json")
    }
}

/// The system's background session for answers. Create one at launch with
/// the app's `QPBackgroundAnswers` (set `answers` once both exist), and
/// hand it the completion handler of
/// `application(_:handleEventsForBackgroundURLSession:completionHandler:)`.
/// (Linux has no background sessions: there it is an ephemeral session,
/// so the code that uses it compiles; the tests use a stand-in system.)
@available(iOSApplicationExtension, unavailable)
public final class QPSystemUploads: NSObject, QPUploadSystem, URLSessionDataDelegate {
    public static let identifier = "io.questionprotocol.answers"
    public weak var answers: QPBackgroundAnswers?
    private var session: URLSession!
    private var received: [Int: Data] = [:]
    private var eventsDone: (() -> Void)?
    private let lock = NSLock()

    public override init() {
        super.init()
        #if canImport(Darwin)
        let config = URLSessionConfiguration.background(withIdentifier: Self.identifier)
        config.sessionSendsLaunchEvents = true
        config.isDiscretionary = false
        #else
        let config = URLSessionConfiguration.ephemeral
        #endif
        session = URLSession(configuration: config, delegate: self, delegateQueue: nil)
    }

    public func upload(_ request: URLRequest, fromFile body: URL, id: String) {
        let task = session.uploadTask(with: request, fromFile: body)
        task.taskDescription = id
        task.resume()
    }

    public func inFlight(_ completion: @escaping ([String]) -> Void) {
        session.getAllTasks { tasks in completion(tasks.compactMap(\.taskDescription)) }
    }

    /// From `handleEventsForBackgroundURLSession`: called once the session
    /// has delivered every event.
    public func handleEvents(completionHandler: @escaping () -> Void) {
        locked { eventsDone = completionHandler }
    }

    public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        locked { received[dataTask.taskIdentifier, default: Data()].append(data) }
    }

    public func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        let body = locked { received.removeValue(forKey: task.taskIdentifier) }
        answers?.completed(id: task.taskDescription, response: task.response, body: body, error: error)
    }

    public func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {
        let done = locked { () -> (() -> Void)? in
            defer { eventsDone = nil }
            return eventsDone
        }
        DispatchQueue.main.async { done?() }
    }

    private func locked<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }
}
