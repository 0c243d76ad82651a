// The glue's URLSession transport against the real `qp serve` (FoundationNetworking
// is URLSession on Linux): what the core gets back for a response of any
// status, a dead server and a request that overruns its time limit.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
import QuestionProtocol

final class URLSessionTransportTests: XCTestCase {
    private func request(_ method: HttpMethod, _ url: String, token: String? = nil,
                         body: String? = nil, timeoutMs: UInt32 = 5000) -> HttpRequest {
        var headers = [HttpHeader(name: "Accept", value: "application/json")]
        if let token = token { headers.append(HttpHeader(name: "Authorization", value: "Bearer \(token)")) }
        if body != nil { headers.append(HttpHeader(name: "Content-Type", value: "application/json")) }
        return HttpRequest(method: method, url: url, headers: headers, body: body.map { Data($0.utf8) },
                           timeoutMs: timeoutMs)
    }

    func testEveryStatusIsAResponseWithItsBody() async throws {
        try requireServer()
        let t = URLSessionTransport()
        let ok = try await t.send(request: request(.get, env("QP_E2E_URL") + "/api/questions/pending",
                                                   token: env("QP_E2E_USER_TOKEN")))
        XCTAssertEqual(ok.status, 200)
        XCTAssertNotNil((try? JSONSerialization.jsonObject(with: ok.body)) as? [String: Any])
        // A refused token is a response (401) for the core to read, not a failure.
        let refused = try await t.send(request: request(.get, env("QP_E2E_URL") + "/api/questions/pending",
                                                        token: "qpu_not_a_token"))
        XCTAssertEqual(refused.status, 401)
        XCTAssertTrue(String(decoding: refused.body, as: UTF8.self).contains("error"))
    }

    func testADeadServerIsUnreachableNotAResponse() async throws {
        try requireServer()
        do {
            _ = try await URLSessionTransport().send(request: request(.get, env("QP_E2E_DEAD_URL") + "/healthz"))
            XCTFail("a dead server answered")
        } catch let e as HttpError {
            if case .Unreachable = e {} else if case .Offline = e {} else { XCTFail("\(e)") }
        }
    }

    func testTheCoresTimeLimitIsTheRequestsTimeout() throws {
        let r = try URLSessionTransport.urlRequest(request(.post, "http://127.0.0.1:9/api/x", body: "{}", timeoutMs: 1500))
        XCTAssertEqual(r.timeoutInterval, 1.5, accuracy: 0.001)
        XCTAssertEqual(r.httpMethod, "POST")
        XCTAssertEqual(r.value(forHTTPHeaderField: "Content-Type"), "application/json")
        XCTAssertEqual(r.httpBody, Data("{}".utf8))
    }

    /// What a background session reports becomes the core's outcome: an
    /// HTTP response (any status) with its body, or why none came.
    func testABackgroundReportBecomesTheCoresOutcome() throws {
        let offline = URLError(.notConnectedToInternet)
        XCTAssertEqual(URLSessionTransport.handoverResult(response: nil, body: nil, error: offline),
                       .failed(failure: .offline, reason: offline.localizedDescription))
        let url = URL(string: "http://127.0.0.1:9/api/questions/q_1/answer")!
        let busy = HTTPURLResponse(url: url, statusCode: 503, httpVersion: nil, headerFields: nil)
        XCTAssertEqual(URLSessionTransport.handoverResult(response: busy, body: Data("{}".utf8), error: nil),
                       .response(response: HttpResponse(status: 503, body: Data("{}".utf8))))
    }
}
