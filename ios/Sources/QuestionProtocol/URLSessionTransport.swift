// The phone's requests over the platform's own network stack: the core
// describes each request (method, URL, headers, body, its time limit) and
// URLSession executes it, so the system's proxies (PAC files included),
// trust store (roots an MDM profile installed), per-app VPN and cellular
// policy apply, and pinning is the app's `NSPinnedDomains`. Retries,
// idempotency keys and what a status means stay in the Rust core.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Executes the core's requests with an ephemeral `URLSession` (no cookies,
/// no cache, no credentials kept on disk). Register one per process, in the
/// app and in the notification extension, before the first network call:
/// `URLSessionTransport.install()`.
///
/// Two rules every platform transport keeps (the Android one too): a
/// redirect is never followed (a 3xx reaches the core as the response,
/// which reports it as an error naming the status: an answer or a token is
/// never sent on to another address), and a request is cancelled when the
/// core's time limit for it passes (URLSession's own timeout is only the
/// longest wait between two packets: a server that trickles would keep it
/// going).
public final class URLSessionTransport: HttpTransport, @unchecked Sendable {
    private let session: URLSession

    /// `configuration`: ephemeral by default; an app that needs its own (a
    /// proxy dictionary, extra headers) passes it. The session is the
    /// transport's own: its delegate refuses redirects.
    public init(configuration: URLSessionConfiguration = .ephemeral) {
        session = URLSession(configuration: configuration, delegate: RefuseRedirects(), delegateQueue: nil)
    }

    /// Registers a transport for every phone of this process.
    public static func install(configuration: URLSessionConfiguration = .ephemeral) {
        setHttpTransport(transport: URLSessionTransport(configuration: configuration))
    }

    public func send(request: HttpRequest) async throws -> HttpResponse {
        let urlRequest = try Self.urlRequest(request)
        let limit = TimeInterval(request.timeoutMs) / 1000
        return try await withCheckedThrowingContinuation { continuation in
            let expired = Once()
            let task = session.dataTask(with: urlRequest) { data, response, error in
                if let error = error {
                    // Cancelled by the deadline below (and only then: claim() fails once it ran).
                    if (error as? URLError)?.code == .cancelled, !expired.claim() {
                        continuation.resume(throwing: HttpError.TimedOut(
                            reason: "no complete response within \(limit) s"))
                    } else {
                        continuation.resume(throwing: Self.failure(error))
                    }
                } else if let http = response as? HTTPURLResponse {
                    continuation.resume(returning: HttpResponse(status: UInt16(clamping: http.statusCode),
                                                                body: data ?? Data()))
                } else {
                    continuation.resume(throwing: HttpError.Unreachable(reason: "not an HTTP response"))
                }
            }
            // The core's limit is for the whole exchange.
            DispatchQueue.global().asyncAfter(deadline: .now() + limit) { [weak task] in
                if expired.claim() { task?.cancel() }
            }
            task.resume()
        }
    }

    /// A redirect is handed to the core as the response (see the type's
    /// comment). Public for the background session's delegate, which keeps
    /// the same rule.
    public static func refuseRedirect(_ completionHandler: @escaping (URLRequest?) -> Void) {
        completionHandler(nil)
    }

    /// The core's request as URLSession takes it (also the background
    /// upload's request, whose body goes in a file).
    public static func urlRequest(_ request: HttpRequest) throws -> URLRequest {
        guard let url = URL(string: request.url) else {
            throw HttpError.Unreachable(reason: "not a URL")
        }
        var r = URLRequest(url: url)
        r.httpMethod = method(request.method)
        r.timeoutInterval = TimeInterval(request.timeoutMs) / 1000
        for header in request.headers {
            r.setValue(header.value, forHTTPHeaderField: header.name)
        }
        r.httpBody = request.body
        return r
    }

    static func method(_ m: HttpMethod) -> String {
        switch m {
        case .get: return "GET"
        case .post: return "POST"
        case .put: return "PUT"
        case .delete: return "DELETE"
        }
    }

    /// A URLSession error as the core reads it: offline, timed out, or the
    /// server unreachable (TLS failures included, their reason naming the
    /// certificate: the person or the admin can tell a company CA missing
    /// from this phone from a server that is down).
    public static func failure(_ error: Error) -> HttpError {
        let reason = error.localizedDescription
        guard let e = error as? URLError else { return .Unreachable(reason: reason) }
        if tlsFailures.contains(e.code) {
            return .Unreachable(reason: "TLS: the server's certificate is not trusted by this device, or no secure connection (\(reason))")
        }
        switch e.code {
        case .notConnectedToInternet, .networkConnectionLost, .dataNotAllowed,
             .internationalRoamingOff:
            return .Offline(reason: reason)
        case .timedOut:
            return .TimedOut(reason: reason)
        default:
            return .Unreachable(reason: reason)
        }
    }

    /// The TLS failures: a certificate the system's trust store (with the
    /// CAs an MDM profile installed) does not accept, or no secure
    /// connection at all.
    static let tlsFailures: Set<URLError.Code> = [
        .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasUnknownRoot,
        .serverCertificateHasBadDate, .serverCertificateNotYetValid, .clientCertificateRejected,
        .clientCertificateRequired,
    ]

    /// What a background session reported for a hand-over, for
    /// `PhoneCore.handedOverOutcome`: the response and its body, or why
    /// none came.
    public static func handoverResult(response: URLResponse?, body: Data?, error: Error?) -> HandoverResult {
        if let error = error {
            let failed = failure(error)
            switch failed {
            case .Offline(let reason): return .failed(failure: .offline, reason: reason)
            case .TimedOut(let reason): return .failed(failure: .timedOut, reason: reason)
            case .Unreachable(let reason): return .failed(failure: .unreachable, reason: reason)
            }
        }
        guard let http = response as? HTTPURLResponse else {
            return .failed(failure: .unreachable, reason: "not an HTTP response")
        }
        return .response(response: HttpResponse(status: UInt16(clamping: http.statusCode), body: body ?? Data()))
    }
}

/// The transport's session delegate: no redirect is followed.
private final class RefuseRedirects: NSObject, URLSessionTaskDelegate {
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        URLSessionTransport.refuseRedirect(completionHandler)
    }
}
