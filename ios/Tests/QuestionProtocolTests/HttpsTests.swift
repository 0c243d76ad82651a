// The phone over HTTPS through the platform's URLSession (issue 47), against
// two real `qp serve` over TLS that ios/run-tests starts, each with a
// throwaway CA: one the platform trusts (in the system's store, as an MDM
// profile installs a company CA on a phone), one it does not.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
import QuestionProtocol

final class HttpsTests: XCTestCase {
    private static var kept: [URLSessionTransport] = []
    private var dir = ""

    override func setUp() {
        dir = NSTemporaryDirectory() + "qp-https-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    private func requireTls() throws {
        try requireServer()
        if env("QP_E2E_TLS_URL").isEmpty { throw XCTSkip("no qp serve over TLS: run ios/run-tests") }
    }

    private func device(_ phone: PhoneCore) throws -> DeviceRegistration {
        DeviceRegistration(platform: .ios, pushToken: String(repeating: "c7", count: 32),
                           appId: "io.questionprotocol.test", publicKey: try phone.devicePublicKey())
    }

    func testPairReceiveAndAnswerOverHttpsWithTheCATheSystemTrusts() async throws {
        try requireTls()
        let phone = try PhoneCore.openSession(storePath: dir + "/https.sqlite", mode: .app, vault: FakeVault(),
                                              languages: ["en"], deviceKeys: MemoryKeyStore(nil))
        let account = try await phone.signIn(linkOrCode: env("QP_E2E_TLS_PAIR_LINK"), deviceLabel: "iPhone (HTTPS)",
                                             device: try device(phone))
        XCTAssertNotNil(account.deviceId, "paired over HTTPS")
        _ = try await phone.sync()
        let id = env("QP_E2E_TLS_QUESTION_ID")
        XCTAssertNotNil(try phone.question(questionId: id), "the question received over HTTPS")
        _ = try phone.answerInApp(questionId: id, value: "approve", text: nil)
        let sent = try await phone.flush()
        XCTAssertEqual(sent.answered, 1, "the answer sent over HTTPS")
        XCTAssertEqual(try phone.answerStatus(questionId: id)?.state, .answered)
    }

    // A server whose CA the platform does not trust: the request fails at
    // the handshake, at once, as a failure naming the certificate (not a
    // response, not a wait for the time limit, not a crash); pairing with
    // it throws.
    func testAServerWhoseCATheSystemDoesNotTrustFailsAtOnceNamingTheCertificate() async throws {
        try requireTls()
        let started = Date()
        let transport = URLSessionTransport()
        Self.kept.append(transport) // never deallocated: see requireServer
        do {
            _ = try await transport.send(request: HttpRequest(
                method: .get, url: env("QP_E2E_TLS_UNTRUSTED_URL") + "/healthz", headers: [], body: nil,
                timeoutMs: 10000))
            XCTFail("an untrusted server answered")
        } catch let e as HttpError {
            guard case let .Unreachable(reason) = e else { return XCTFail("\(e)") }
            XCTAssertTrue(reason.contains("certificate"), reason)
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "failed at the handshake, not at the time limit")

        let phone = try PhoneCore.openSession(storePath: dir + "/untrusted.sqlite", mode: .app, vault: FakeVault(),
                                              languages: ["en"], deviceKeys: MemoryKeyStore(nil))
        // Its own transport for the failed handshake, kept (see requireServer).
        setHttpTransport(transport: transport)
        defer { setHttpTransport(transport: installedTransport) }
        do {
            _ = try await phone.signIn(linkOrCode: env("QP_E2E_TLS_UNTRUSTED_PAIR_LINK"), deviceLabel: "iPhone",
                                       device: try device(phone))
            XCTFail("paired with a server the phone does not trust")
        } catch {
            XCTAssertTrue("\(error)".contains("certificate"), "\(error)")
        }
        XCTAssertFalse(try phone.sessionStatus().state == .signedIn)
    }
}
