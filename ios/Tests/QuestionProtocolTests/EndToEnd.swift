// End to end against a real `qp serve` started by ios/run-tests: the
// extension flow, an answer given offline, a new process, the flush.
import Foundation
import XCTest
import QuestionProtocol

final class EndToEndTests: XCTestCase {
    func testEndToEnd() async throws {
        try requireServer()
        let r = Runner()
        await runEndToEnd(r)
        r.expectAtLeast(20)
    }
}

func runEndToEnd(_ r: Runner) async {
    let questionJson = try! String(contentsOfFile: env("QP_E2E_QUESTION"), encoding: .utf8)
    let user = env("QP_E2E_USER"), token = StaticToken(env("QP_E2E_USER_TOKEN"))
    let store = env("QP_E2E_STORE_DIR") + "/swift-phone.sqlite"
    let dead = env("QP_E2E_DEAD_URL"), live = env("QP_E2E_URL")

    // The server side encodes; the extension decodes, records, registers.
    let payload = try! encodeApnsPayload(questionJson: questionJson).json
    let nseCore = try! PhoneCore(storePath: store, mode: .extension, serverUrl: dead, userId: user, tokens: token, languages: [])
    let center = InMemoryCategoryCenter(["app.static"])
    var delivered: [QPNotificationContent] = []
    QPServiceFlow.process(userInfoJSON: payload, core: nseCore, center: center, languages: []) { delivered.append($0) }
    r.check("e2e: delivered once", delivered.count == 1)
    let content = delivered[0]
    let qid = content.questionId ?? ""
    r.check("e2e: per-question category", content.categoryIdentifier == iosCategoryId(questionId: qid))
    r.check("e2e: the category names its question", QPAnswerFlow.questionId(fromCategory: content.categoryIdentifier ?? "") == qid)
    r.check("e2e: category registered, static kept", center.registered == ["app.static", "qp.q.\(qid)"], "\(center.registered)")
    r.check("e2e: title", content.title == "Release Bot asks you", content.title)

    // Undecodable payloads still show a plain notification.
    var fallback: QPNotificationContent?
    QPServiceFlow.process(userInfoJSON: "{\"aps\":{\"alert\":{\"title\":\"Hi\",\"body\":\"There\"}},\"qp\":{\"v\":9}}",
                          core: nseCore, center: center, languages: []) { fallback = $0 }
    r.check("e2e: fallback shows", fallback?.title == "Hi" && fallback?.categoryIdentifier == nil)

    // The answer is tapped while offline: committed and a send attempted
    // before completion, which runs once.
    let offline = try! PhoneCore(storePath: store, mode: .app, serverUrl: dead, userId: user, tokens: token, languages: [])
    var atCompletion: [MyAnswer?] = []
    let outcome = await QPAnswerFlow.answer(core: offline, questionId: qid, actionIdentifier: "qp.v.approve",
                                            typedText: nil, flushWithin: 5) {
        atCompletion.append((try? offline.feed())?.first?.myAnswer)
    }
    r.check("e2e: completion once", atCompletion.count == 1, "\(atCompletion.count)")
    r.check("e2e: committed and tried before completion",
            atCompletion.first??.state == .queued && atCompletion.first??.canRetry == true, "\(atCompletion)")
    if case .committed = outcome {} else { r.check("e2e: committed", false, "\(outcome)") }
    let notAnswer = QPAnswerFlow.commit(core: offline, questionId: qid, actionIdentifier: "qp.nope", typedText: nil)
    r.check("e2e: a non-answer action opens its question", notAnswer == .notAnAnswer(questionId: qid), "\(notAnswer)")

    // A new process, back online.
    let app = try! PhoneCore(storePath: store, mode: .app, serverUrl: live, userId: user, tokens: token, languages: [])
    _ = try? app.requeueInterrupted()
    _ = try? app.retry(questionId: qid)
    let report = try? await app.flush()
    r.check("e2e: answered once online", report?.answered == 1 && report?.withdraw == [qid], "\(String(describing: report))")
    r.check("e2e: feed says by you", (try? app.feed())?.first?.resolution == "You answered: Approve", "\(String(describing: (try? app.feed())?.first))")
    let sync = try? await app.sync()
    r.check("e2e: sync works", sync != nil)

    // Bad input is a thrown, typed error.
    do { _ = try PhoneCore(storePath: "/nonexistent/dir/x.sqlite", mode: .app, serverUrl: live, userId: user, tokens: token, languages: []); r.check("e2e: bad store path throws", false) }
    catch QpError.Storage(let kind, _) { r.check("e2e: bad store path throws", kind == .cannotOpen, "\(kind)") }
    catch { r.check("e2e: bad store path throws", false, "\(error)") }
    do { _ = try app.answerInApp(questionId: qid, value: "approve", text: "both"); r.check("e2e: both value and text", false) }
    catch QpError.InvalidInput { r.check("e2e: both value and text", true) }
    catch { r.check("e2e: both value and text", false, "\(error)") }

    // First run: pair with the operator's one-time link; the token goes to
    // the (fake) Keychain, and a phone reading it from there is signed in.
    let keychain = FakeKeychain()
    do {
        let account = try await pairDevice(linkOrCode: env("QP_E2E_PAIR_LINK"), serverUrl: nil,
                                           deviceLabel: "Swift test", device: nil, store: keychain)
        r.check("pair: signed in as the invited user", account.userId == user, account.userId)
        r.check("pair: the link's server", account.serverUrl == live, account.serverUrl)
        r.check("pair: the token is in the Keychain", keychain.token(for: user)?.hasPrefix("qpu_") == true)
        let paired = try PhoneCore(storePath: env("QP_E2E_STORE_DIR") + "/swift-paired.sqlite", mode: .extension,
                                   serverUrl: account.serverUrl, userId: account.userId, tokens: keychain,
                                   languages: ["de-DE", "en"])
        r.check("i18n: the phone speaks the person's language", paired.language() == "de", paired.language())
        // Signed in with what the Keychain kept: the same phone with an empty
        // Keychain is refused, this one syncs.
        let unpaired = try PhoneCore(storePath: env("QP_E2E_STORE_DIR") + "/swift-unpaired.sqlite", mode: .app,
                                     serverUrl: account.serverUrl, userId: account.userId, tokens: FakeKeychain(),
                                     languages: [])
        do { _ = try await unpaired.sync(); r.check("pair: no token, no sync", false) }
        catch QpError.NotSignedIn { r.check("pair: no token, no sync", true) }
        let synced = try await paired.sync()
        r.check("pair: the stored token signs the phone in", synced.pending == 0, "\(synced)")
    } catch {
        r.check("pair: succeeds", false, "\(error)")
    }
    do {
        _ = try await pairDevice(linkOrCode: env("QP_E2E_PAIR_LINK"), serverUrl: nil,
                                 deviceLabel: "Swift test", device: nil, store: FakeKeychain())
        r.check("pair: a link works once", false)
    } catch QpError.Pairing(let kind, _) {
        r.check("pair: a link works once", kind == .invalidCode, "\(kind)")
    } catch {
        r.check("pair: a link works once", false, "\(error)")
    }
    do {
        _ = try await pairDevice(linkOrCode: "K7QD-8M3X-PA2F-9TRV", serverUrl: nil,
                                 deviceLabel: "Swift test", device: nil, store: FakeKeychain())
        r.check("pair: a bare code needs a server", false)
    } catch QpError.Pairing(let kind, _) {
        r.check("pair: a bare code needs a server", kind == .noServer, "\(kind)")
    } catch {
        r.check("pair: a bare code needs a server", false, "\(error)")
    }

    // Without a core (a store that cannot open), the words follow the languages given.
    var german: QPNotificationContent?
    QPServiceFlow.process(userInfoJSON: payload, core: nil, center: InMemoryCategoryCenter([]),
                          languages: ["de-CH"]) { german = $0 }
    r.check("i18n: the extension's notification in German", german?.title == "Release Bot fragt dich", german?.title ?? "nil")
    let fb = QPServiceFlow.fallbackContent(userInfoJSON: "{}", languages: ["ja-JP"])
    r.check("i18n: the fallback in Japanese", fb.title == "新しい質問", fb.title)
}
