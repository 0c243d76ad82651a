// Issue 48, item 8: a resolution push that no store can judge is the
// core's decision on both platforms (`resolutionPushWithoutStore()`,
// `keepUnconfirmed`): nothing is withdrawn on a claim nobody checked.
// Android leaves its notification; here, where the push already replaced
// the question's, the generic notification stands in (it showed the push's
// "resolved" words before).
import Foundation
import XCTest
import QuestionProtocol

final class ResolutionWithoutStoreTests: XCTestCase {
    func testAResolutionNoStoreCanJudgeShowsTheGenericNotificationNotTheResolvedWords() throws {
        try requireServer()
        XCTAssertEqual(resolutionPushWithoutStore(), .keepUnconfirmed)
        let questionJson = try String(contentsOfFile: env("QP_E2E_QUESTION"), encoding: .utf8)
        let claim = try encodeApnsResolvedPayload(
            questionJson: questionJson.replacingOccurrences(of: "\"state\": \"pending\"", with: "\"state\": \"cancelled\"")
                .replacingOccurrences(of: "\"state\":\"pending\"", with: "\"state\":\"cancelled\"")
                .replacingOccurrences(of: "\"resolved_at\": null", with: "\"resolved_at\": \"2026-06-27T10:40:00Z\"")
                .replacingOccurrences(of: "\"resolved_at\":null", with: "\"resolved_at\":\"2026-06-27T10:40:00Z\""),
            me: nil).json
        let done = expectation(description: "delivered")
        var delivered: [QPNotificationContent] = []
        // No core: the extension could not open the shared store.
        QPServiceFlow.process(userInfoJSON: claim, core: nil, center: InMemoryCategoryCenter([]), languages: ["en"]) {
            delivered.append($0)
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        let c = try XCTUnwrap(delivered.first)
        XCTAssertEqual(delivered.count, 1)
        XCTAssertEqual(c.title, fallbackNotification(title: nil, body: nil, languages: ["en"]).title,
                       "the generic words, not the resolution's")
        let id = (try JSONSerialization.jsonObject(with: Data(questionJson.utf8)) as? [String: Any])?["id"] as? String
        XCTAssertNotNil(id)
        XCTAssertEqual(c.questionId, id, "under the question's id: the app's reconcile replaces it")
        XCTAssertNil(c.categoryIdentifier, "no buttons")
        XCTAssertTrue(c.passive, "quiet: it stands in for a question that already alerted")
    }
}
