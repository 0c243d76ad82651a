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

/// An answer handed to the system: its upload's id and its question.
public struct QPHandedOver: Equatable, Sendable {
    public let id: String
    public let questionId: String
}

@available(iOSApplicationExtension, unavailable)
public final class QPBackgroundAnswers {
    /// The session the answers are recorded in (the app's, shared with
    /// its lifecycle and answer handler).
    public let session: QPSession
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
    /// committed, before the action's completion handler); returns those
    /// handed over. What cannot be handed over stays in the outbox for the
    /// next flush (an answer to a question known only from a push the
    /// extension never saw waits for the server's check): an answer's
    /// caller looks for its own question among them.
    @discardableResult
    public func handOver() -> [QPHandedOver] {
        guard let core = session.waitForCore() else { return [] }
        guard let handed = reported("background answers: hand-over", { try core.handOverAnswers() }) else { return [] }
        _ = reported("background answers: the bodies' folder") {
            try FileManager.default.createDirectory(at: bodies, withIntermediateDirectories: true)
            try QPDataProtection.protect(bodies.path)
        }
        var ids: [QPHandedOver] = []
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
                ids.append(QPHandedOver(id: h.id, questionId: h.questionId))
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
            // is not left for the next launch. Through the session
            // (`withStoreOpenNow`): the app coming to the foreground
            // meanwhile keeps its store open, and so does other background
            // work using it (an answer being sent).
            report = session.withStoreOpenNow(core, suspendAfter: true, site: "background answers: the report") {
                afterReopening?()
                return reported("background answers: the report while suspended") {
                    try core.handedOverOutcome(id: id, result: result)
                }
            }
        } catch {
            reportGlueFailure(site: "background answers: the report", error: "\(error)")
            report = nil
        }
        // The body file goes after the report either way: a later send of
        // this answer is built from the outbox, never from the file (if the
        // outcome could not be recorded, the answer is still handed over,
        // and a reconcile that no longer finds it queues it again).
        let file = bodyFile(id)
        if FileManager.default.fileExists(atPath: file.path) {
            _ = reported("background answers: removing the body") { try FileManager.default.removeItem(at: file) }
        }
        return report
    }

    /// Tests only: runs right after `completed` reopened a suspended store
    /// (the moment the app may come to the foreground).
    package var afterReopening: (() -> Void)?

    /// At launch, at each return to the foreground (`QPAppLifecycle` with
    /// `uploads:`) and, from `QPSystemUploads`, once the system has
    /// delivered its reports: answers handed over that the system no
    /// longer holds and never reported on go back to the outbox, for the
    /// next flush. The core decides when a missing one counts as lost (one
    /// the system delivered may miss from the list while its report is on
    /// the way: `PhoneCore.requeueLostHandOvers`).
    public func reconcile(_ done: @escaping (UInt32) -> Void = { _ in }) {
        system.inFlight { [session] ids in
            guard let core = session.waitForCore() else { return done(0) }
            do {
                done(try core.requeueLostHandOvers(inFlight: ids))
            } catch QpError.Storage(kind: .suspended, _) {
                // After the system's events in the background, the store suspended: opened for this, as for a report.
                done(session.withStoreOpenNow(core, suspendAfter: true, site: "background answers: reconcile") {
                    reported("background answers: reconcile") { try core.requeueLostHandOvers(inFlight: ids) }
                } ?? 0)
            } catch {
                reportGlueFailure(site: "background answers: reconcile", error: "\(error)")
                done(0)
            }
        }
    }

    /// `reconcile`, awaited: the number of answers queued again.
    public func reconciled() async -> UInt32 {
        await withCheckedContinuation { (c: CheckedContinuation<UInt32, Never>) in
            reconcile { c.resume(returning: $0) }
        }
    }

    private func bodyFile(_ id: String) -> URL {
        bodies.appendingPathComponent("\(id).json")
    }
}

/// The system's background session for answers. Create one at launch
/// (the app delegate's init: the system may report as soon as the session
/// exists), set its `answers` once the app's `QPBackgroundAnswers` exists
/// (reports that come before are held, then given to it), and hand it the
/// completion handler of
/// `application(_:handleEventsForBackgroundURLSession:completionHandler:)`
/// when the identifier is `QPSystemUploads.identifier`.
/// (Linux has no background sessions: there it is an ephemeral session
/// with the same delegate, which is how the tests drive it.)
/// Sendable by hand: `session` is set once, in `init`, and every other
/// stored property is read and written under `lock` (the delegate's
/// callbacks come on the session's queue, `answers` from the app's).
@available(iOSApplicationExtension, unavailable)
public final class QPSystemUploads: NSObject, QPUploadSystem, URLSessionDataDelegate, @unchecked Sendable {
    public static let identifier = "io.questionprotocol.answers"
    private var session: URLSession!
    private var received: [Int: Data] = [:]
    private let lock = NSLock()
    /// Held strongly: an app that does not keep its `QPBackgroundAnswers`
    /// itself still gets its reports recorded and its completion handler
    /// called (held weakly, they were held forever and the handler never
    /// called). Both live as long as the process, as the system's session does.
    private var target: QPBackgroundAnswers?
    /// Reports that came before `answers` was set, in order.
    private var held: [Report] = []
    /// Reports being recorded off the delegate's queue (held ones, once
    /// `answers` is set): the system's completion handler waits for them.
    private var recording = 0
    /// The session delivered every event (`urlSessionDidFinishEvents`)
    /// before the app handed over the completion handler, or the reverse:
    /// whichever comes second calls it, once the reports are recorded.
    /// A finish holds for the reports before it: a report after it begins
    /// the next batch, whose handler waits for that batch's finish.
    private var eventsFinished = false
    private var eventsDone: (() -> Void)?

    private struct Report {
        let id: String?
        let response: URLResponse?
        let body: Data?
        let error: Error?
    }

    /// Where the reports go. Set it once the app's `QPBackgroundAnswers`
    /// exists: reports the system made before are given to it then. Held
    /// strongly (the app need not keep it).
    public var answers: QPBackgroundAnswers? {
        get { locked { target } }
        set {
            let waiting = locked { () -> [Report] in
                target = newValue
                guard newValue != nil else { return [] }
                defer { held.removeAll() }
                recording += held.count
                return held
            }
            guard let answers = newValue, !waiting.isEmpty else { return }
            // Off the caller's thread (the app delegate's, the main one):
            // recording waits for the session's store to open.
            DispatchQueue.global(qos: .utility).async { [self] in
                for r in waiting {
                    answers.completed(id: r.id, response: r.response, body: r.body, error: r.error)
                    locked { recording -= 1 }
                }
                finishEventsIfDone()
            }
        }
    }

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

    /// From `handleEventsForBackgroundURLSession` (this session's
    /// identifier only): called on the main queue once the session has
    /// delivered every event and each report is recorded, also when the
    /// session finished before this was called.
    public func handleEvents(completionHandler: @escaping () -> Void) {
        locked { eventsDone = completionHandler }
        finishEventsIfDone()
    }

    public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        locked { received[dataTask.taskIdentifier, default: Data()].append(data) }
    }

    /// Redirects are not followed: the core reads the 3xx (the rule of
    /// every platform transport, `URLSessionTransport`). Apple calls this
    /// only for default and ephemeral sessions: an iOS background session
    /// follows redirects by itself, so there the rule holds for the
    /// ordinary requests only (the answer's URL is the one every other
    /// request of the core reached without a redirect).
    public func urlSession(_ session: URLSession, task: URLSessionTask,
                           willPerformHTTPRedirection response: HTTPURLResponse, newRequest request: URLRequest,
                           completionHandler: @escaping (URLRequest?) -> Void) {
        URLSessionTransport.refuseRedirect(completionHandler)
    }

    public func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        let report = locked { () -> Report in
            Report(id: task.taskDescription, response: task.response,
                   body: received.removeValue(forKey: task.taskIdentifier), error: error)
        }
        let answers = locked { () -> QPBackgroundAnswers? in
            eventsFinished = false // a report of the next batch
            if target == nil { held.append(report) } else { recording += 1 }
            return target
        }
        guard let answers = answers else { return } // held until `answers` is set
        answers.completed(id: report.id, response: report.response, body: report.body, error: report.error)
        locked { recording -= 1 }
        finishEventsIfDone()
    }

    public func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {
        let finished = { [self] in
            locked { eventsFinished = true }
            finishEventsIfDone()
        }
        // Every report is in: an answer still missing from the session is
        // lost. Reconciled before the completion handler is called: iOS
        // may suspend the app then, which must not find the store opened
        // for the reconcile.
        guard let answers = answers else { return finished() }
        answers.reconcile { _ in finished() }
    }

    /// Calls the system's completion handler once it is known, the session
    /// has delivered its events and no report waits to be recorded.
    private func finishEventsIfDone() {
        let done = locked { () -> (() -> Void)? in
            guard eventsFinished, held.isEmpty, recording == 0, let done = eventsDone else { return nil }
            eventsFinished = false
            eventsDone = nil
            return done
        }
        if let done = done { DispatchQueue.main.async { done() } }
    }

    private func locked<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }
}
