// The session an iOS app holds, against the real `qp serve` ios/run-tests
// starts: a phone object before pairing, signing in, a new APNs token
// registered once, a revoked sign-in (401) keeping the answer and saying so
// in the person's language, the answer delivered once after pairing again,
// and signing out (store empty, the device gone on the server, the token
// forgotten in the Keychain).
import Foundation
import XCTest
import QuestionProtocol

/// The app's Keychain (an access group the extension shares), in memory.
final class FakeVault: TokenVault, @unchecked Sendable {
    private let lock = NSLock()
    private var tokens: [String: String] = [:]
    private(set) var forgotten: [String] = []
    func saveToken(userId: String, token: String) throws {
        lock.lock(); defer { lock.unlock() }
        tokens[userId] = token
    }
    func token(userId: String) -> String? {
        lock.lock(); defer { lock.unlock() }
        return tokens[userId]
    }
    func forgetToken(userId: String) {
        lock.lock(); defer { lock.unlock() }
        tokens[userId] = nil
        forgotten.append(userId)
    }
}

/// A fresh one-time pairing link, as the operator makes one.
func freshPairLink() async throws -> String {
    let (status, inv) = try await http("POST", "/api/admin/users/\(env("QP_E2E_USER"))/invites",
                                       token: env("QP_E2E_ADMIN_TOKEN"), body: [String: Any]())
    XCTAssertEqual(status, 201, "\(inv)")
    return inv["link"] as? String ?? ""
}

final class SessionTests: XCTestCase {
    func testASessionFromBeforePairingToSignOut() async throws {
        try requireServer()
        let r = Runner()
        let vault = FakeVault()
        let store = env("QP_E2E_STORE_DIR") + "/swift-session.sqlite"
        try? FileManager.default.removeItem(atPath: store)

        // At launch, before pairing: an object to hold, signed out.
        let phone = try PhoneCore.openSession(storePath: store, mode: .app, vault: vault, languages: ["de-DE"])
        r.check("session: signed out before pairing", try phone.sessionStatus().state == .signedOut)
        r.check("session: an empty feed before pairing", try phone.feed().isEmpty)
        do { _ = try await phone.sync(); r.check("session: no sync before pairing", false) }
        catch QpError.NotSignedIn { r.check("session: no sync before pairing", true) }

        // Sign in, registering for pushes (a debug build: sandbox tokens).
        let tokenA = String(repeating: "a1", count: 32), tokenB = String(repeating: "b2", count: 32)
        let device = DeviceRegistration(platform: .ios, pushToken: tokenA, appId: "io.questionprotocol.test",
                                        apnsEnvironment: .sandbox)
        let account = try await phone.signIn(linkOrCode: try await freshPairLink(), deviceLabel: "iPhone (session test)",
                                             device: device)
        r.check("session: signed in as the invited user", account.userId == env("QP_E2E_USER"), account.userId)
        let firstToken = vault.token(userId: account.userId) ?? ""
        r.check("session: the token is in the Keychain", firstToken.hasPrefix("qpu_"))
        r.check("session: signed in", try phone.sessionStatus().state == .signedIn)

        // The OS hands over a token at each launch: sent only when new.
        r.check("token: the same token sends nothing", try await phone.updatePushToken(pushToken: tokenA) == false)
        r.check("token: a new token is registered", try await phone.updatePushToken(pushToken: tokenB) == true)
        r.check("token: once", try await phone.updatePushToken(pushToken: tokenB) == false)
        let deviceId = try phone.sessionStatus().deviceId ?? ""

        // A question, answered once the server no longer takes the token.
        let q = try await askQuestion("Restart the workers?")
        _ = try await phone.sync()
        try vault.saveToken(userId: account.userId, token: "qpu_revoked00000000000000000000000000")
        let committed = try phone.answerInApp(questionId: q.id, value: "approve", text: nil)
        r.check("401: committed", committed.state == .queued)
        let refused = try await phone.flush()
        r.check("401: the flush says unauthorized", refused.unauthorized && refused.answered == 0, "\(refused)")
        let status = try phone.sessionStatus()
        r.check("401: the session is unauthorized", status.state == .unauthorized)
        r.check("401: the status line, in German",
                status.line == "Deine Anmeldung ist abgelaufen. Kopple dieses Telefon erneut, um deine Antworten zu senden.",
                status.line ?? "nil")
        let waiting = try phone.answerStatus(questionId: q.id)
        r.check("401: the answer is kept", waiting?.state == .queued, "\(String(describing: waiting))")
        r.check("401: its line says to pair again", waiting?.status.contains("kopple das Telefon neu") == true, waiting?.status ?? "nil")
        do { _ = try await phone.sync(); r.check("401: sync says unauthorized", false) }
        catch QpError.Unauthorized { r.check("401: sync says unauthorized", true) }

        // Pairing again sends it, once.
        _ = try await phone.signIn(linkOrCode: try await freshPairLink(), deviceLabel: "iPhone (session test)")
        r.check("again: signed in", try phone.sessionStatus().state == .signedIn)
        r.check("again: the answer was sent", try phone.answerStatus(questionId: q.id)?.state == .answered)
        r.check("again: nothing more to send", try await phone.flush().answered == 0)
        let (_, seen) = try await http("GET", "/api/agent/questions/\(q.id)", token: env("QP_E2E_AGENT_TOKEN"))
        r.check("again: the asker has the answer", (seen["answer"] as? [String: Any])?["value"] as? String == "approve", "\(seen)")

        // Sign out: the device gone on the server, the store empty, the
        // Keychain without the token, the object still usable.
        let out = try await phone.signOut()
        r.check("sign-out: the server removed the device", out.deviceRemoved)
        r.check("sign-out: signed out", try phone.sessionStatus().state == .signedOut)
        r.check("sign-out: the feed is empty", try phone.feed().isEmpty)
        r.check("sign-out: the Keychain forgot the token", vault.token(userId: account.userId) == nil && vault.forgotten == [account.userId])
        // The first token still works (only the phone forgot it): the
        // server has no such device any more.
        let (gone, _) = try await http("DELETE", "/api/devices/\(deviceId)", token: firstToken)
        r.check("sign-out: the device is gone on the server", gone == 404, "\(gone)")
        r.expectAtLeast(20)
    }

    func testTheFeedSubscriptionFiresWhenTheExtensionProcessRecordsAPush() async throws {
        try requireServer()
        final class Heard: FeedListener, @unchecked Sendable {
            private let lock = NSLock()
            private var n = 0
            func feedChanged() { lock.lock(); n += 1; lock.unlock() }
            var count: Int { lock.lock(); defer { lock.unlock() }; return n }
        }
        let store = env("QP_E2E_STORE_DIR") + "/swift-watch.sqlite"
        try? FileManager.default.removeItem(atPath: store)
        let phone = try PhoneCore.openSession(storePath: store, mode: .app, vault: FakeVault(), languages: [])
        // The extension's process over the app's store, as the README's
        // extension opens it (openSession, nothing given): signed out, it
        // records nothing; then the app signs in.
        func runExtension() throws -> (status: Int32, output: String) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: env("QP_E2E_NSE"))
            process.arguments = [store, "--session"]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            let output = String(data: pipe.fileHandleForReading.readDataToEndOfFile(), encoding: .utf8) ?? ""
            process.waitUntilExit()
            return (process.terminationStatus, output)
        }
        let signedOut = try runExtension()
        XCTAssertEqual(signedOut.status, 3, signedOut.output)
        XCTAssertEqual(signedOut.output.trimmingCharacters(in: .whitespacesAndNewlines), "signed-out")
        XCTAssertTrue(try phone.feed().isEmpty, "signed out: nothing recorded")
        _ = try await phone.signIn(linkOrCode: try await freshPairLink(), deviceLabel: "iPhone (two processes)")
        let heard = Heard()
        let subscription = phone.subscribeFeed(listener: heard)
        // The glue's AsyncSequence over the same signal, consumed as an app would.
        final class Seen: @unchecked Sendable {
            private let lock = NSLock()
            private var feeds: [[FeedCell]] = []
            func add(_ cells: [FeedCell]) { lock.lock(); feeds.append(cells); lock.unlock() }
            var all: [[FeedCell]] { lock.lock(); defer { lock.unlock() }; return feeds }
        }
        let seen = Seen()
        let consumer = Task { for try await cells in phone.feedUpdates() { seen.add(cells) } }
        try await Task.sleep(nanoseconds: 400_000_000)
        XCTAssertEqual(seen.all.map(\.count), [0], "feedUpdates() starts with the feed as it is (empty), then waits")
        XCTAssertEqual(heard.count, 0, "nothing committed, nothing said")
        // The notification extension's process: opens the same store (the
        // session the app signed in to), decodes a push and records it.
        let ran = try runExtension()
        XCTAssertEqual(ran.status, 0, ran.output)
        let words = ran.output.split(separator: " ").map(String.init)
        XCTAssertEqual(words.count, 2, ran.output)
        let recordedId = String(words[0].dropFirst("qp.q.".count))
        XCTAssertEqual(words.last?.trimmingCharacters(in: .whitespacesAndNewlines), env("QP_E2E_USER"),
                       "addressed to whoever the store says is signed in")
        for _ in 0..<50 where heard.count == 0 {
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        XCTAssertGreaterThan(heard.count, 0, "the app heard of the other process's commit")
        let recorded = try phone.question(questionId: recordedId)
        XCTAssertEqual(recorded?.prompt, "Deploy v1.4.0 to production?")
        for _ in 0..<50 where !(seen.all.last?.contains { $0.questionId == recordedId } ?? false) {
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        XCTAssertTrue(seen.all.last?.contains { $0.questionId == recordedId } ?? false,
                      "feedUpdates() yielded the feed with the extension's question")
        consumer.cancel()
        // The same feed, read off the caller's thread.
        let cells = try await phone.feedAsync()
        XCTAssertEqual(cells.count, try phone.feed().count)
        subscription.cancel()
        _ = try await phone.signOut()
    }
}
