// Issue 48, second pass: the store's files readable on the lock screen
// (data protection), the notification categories changed one at a time,
// the launch's open off the main thread. No server: the store is real, the
// network a closed port.
#if canImport(UserNotifications) && canImport(UIKit)
import Foundation
import XCTest
@testable import QuestionProtocol
import QuestionProtocolApp
@testable import QuestionProtocolSnippets
import UserNotifications
import UIKit

/// A count read from the test while callbacks add to it on other threads.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func add() { lock.withLock { n += 1 } }
    var value: Int { lock.withLock { n } }
}

/// A fetch result handed to a completion handler on another thread.
final class Fetched: @unchecked Sendable {
    private let lock = NSLock()
    private var result: UIBackgroundFetchResult?
    func set(_ r: UIBackgroundFetchResult) { lock.withLock { result = r } }
    var value: UIBackgroundFetchResult? { lock.withLock { result } }
}

final class PlatformEdgesTests: XCTestCase {
    var dir = ""

    override func setUp() {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("qp-edges-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    private func files(in folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
    }

    private func unprotected(in folder: String) -> [String] {
        files(in: folder).filter {
            QPDataProtection.protection(of: folder + "/" + $0)?.rawValue
                != FileProtectionType.completeUntilFirstUserAuthentication.rawValue
        }
    }

    // Issue 48 (7): every file the library creates for the store (the
    // database, the WAL and shared memory SQLite creates while opening) and
    // for a background upload (its folder and body, read by the system's
    // upload daemon) is readable while the phone is locked after the first
    // unlock. On Linux the class is the stand-in's extended attribute, read
    // from the file on disk. Fails without QPSession's protection: every
    // file listed.
    func testEveryFileTheLibraryCreatesIsReadableWhileLockedAfterTheFirstUnlock() async throws {
        let store = dir + "/store/qp.sqlite"
        try FileManager.default.createDirectory(atPath: dir + "/store", withIntermediateDirectories: true)
        let core = try await QPSession.open(storePath: store, mode: .app, vault: FakeVault(), languages: ["en"])
        XCTAssertEqual(files(in: dir + "/store"), ["qp.sqlite", "qp.sqlite-shm", "qp.sqlite-wal"],
                       "the files SQLite made while opening")
        XCTAssertEqual(unprotected(in: dir + "/store"), [])

        // Closed in the background and opened again: the files stay, and so
        // does their class (the core keeps the WAL and shared memory).
        try core.suspend()
        try core.resume()
        XCTAssertEqual(files(in: dir + "/store"), ["qp.sqlite", "qp.sqlite-shm", "qp.sqlite-wal"])
        XCTAssertEqual(unprotected(in: dir + "/store"), [])

        // The extension's open of the same store (openHere).
        let ext = try QPSession.openHere(storePath: store, mode: .extension, vault: FakeVault(), languages: ["en"])
        _ = ext
        XCTAssertEqual(unprotected(in: dir + "/store"), [])

        // A background upload's body, created when an answer is handed over.
        try requireServer()
        let phone = try PhoneCore(storePath: store, mode: .app, serverUrl: env("QP_E2E_URL"), userId: env("QP_E2E_USER"),
                                  tokens: StaticToken(env("QP_E2E_USER_TOKEN")), languages: ["en"])
        let q = try await askQuestion("Data protection: ship it?")
        _ = try await phone.sync()
        _ = try phone.answerAction(questionId: q.id, actionId: "qp.v.approve", text: nil)
        let system = StandInUploadSystem()
        let uploads = dir + "/uploads"
        let handed = QPBackgroundAnswers(core: phone, system: system, bodies: URL(fileURLWithPath: uploads)).handOver()
        XCTAssertEqual(handed.count, 1)
        XCTAssertEqual(files(in: uploads).count, 1, "the body, in a file")
        XCTAssertEqual(unprotected(in: uploads), [])
        XCTAssertEqual(QPDataProtection.protection(of: uploads)?.rawValue,
                       FileProtectionType.completeUntilFirstUserAuthentication.rawValue, "the folder")
    }

    // Issue 48 (3): the README's app delegate launches without waiting on
    // the store: with the extension holding the write lock while it
    // creates the store (a push arriving at the first launch), launch
    // returns at once on the main thread, and the session opens once the
    // lock is released (SQLite refuses that open at once, without its busy
    // wait: QPSession tries again, off the main thread). Fails with the
    // session opened in the delegate's initializer (PhoneCore.openSession
    // on the main thread): no session for the process's life.
    @MainActor
    func testTheReadmesLaunchReturnsAtOnceWhileTheExtensionHoldsTheStore() async throws {
        AppGroup.container = URL(fileURLWithPath: dir)
        let store = AppGroup.storePath
        let held = try StoreWriteLock(path: store)
        defer { held.release() }

        let started = Date()
        let delegate = AppDelegate()
        XCTAssertTrue(delegate.application(UIApplication.shared, didFinishLaunchingWithOptions: nil))
        XCTAssertLessThan(Date().timeIntervalSince(started), 0.5, "the main thread waits for nothing")
        try await Task.sleep(nanoseconds: 300_000_000)
        XCTAssertNil(delegate.session.openedCore, "still waiting for the extension's lock, off the main thread")

        held.release()
        let core = await delegate.session.core()
        XCTAssertNotNil(core, "open once the lock is released")
        XCTAssertNil(delegate.session.failure)
        XCTAssertEqual(try core?.sessionStatus().state, .signedOut)
        XCTAssertEqual(QPDataProtection.protection(of: store)?.rawValue,
                       FileProtectionType.completeUntilFirstUserAuthentication.rawValue)
    }

    // Issue 48 (2): category changes made at once in one process (the
    // launch's reconcile posting questions, a push shown, the app setting
    // its own) each read the set and write it back; with iOS answering the
    // read on a queue of its own, unserialized changes write what they read
    // and drop each other's additions (a question's buttons gone). Fails
    // before CategoryUpdates: most questions' categories lost.
    func testConcurrentCategoryChangesKeepEveryQuestionsButtons() async throws {
        let center = UNUserNotificationCenter.current()
        center.setNotificationCategories([])
        center.standInCategoryReadDelay = 0.02
        defer { center.standInCategoryReadDelay = 0 }
        let qp = QPUserNotificationCenter(center)
        let ids = (0..<6).map { "q_race\($0)" }
        await withTaskGroup(of: Void.self) { group in
            for id in ids {
                group.addTask {
                    let category = IosCategory(identifier: "qp.q.\(id)",
                                               actions: [IosAction(identifier: "qp.v.approve", title: "Approve",
                                                                   destructive: false, authenticationRequired: false,
                                                                   foreground: false)],
                                               textAction: nil)
                    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                        QPServiceFlow.register(category, core: nil, center: qp) { c.resume() }
                    }
                }
            }
            group.addTask {
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                    qp.setAppCategories(AppCategories.all) { c.resume() }
                }
            }
        }
        var registered: Set<String> = []
        center.standInCategoryReadDelay = 0
        center.getNotificationCategories { registered = Set($0.map(\.identifier)) }
        XCTAssertEqual(registered, Set(ids.map { "qp.q.\($0)" }).union(["com.example.reminder"]))
    }
}
#endif
