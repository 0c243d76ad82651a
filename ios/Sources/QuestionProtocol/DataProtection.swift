// iOS data protection for the files this library creates. A question
// arrives, and an answer is tapped, on the lock screen: the extension and
// the app woken in the background must read and write the shared store
// then. A file of class `complete` (what the Data Protection entitlement's
// "Complete" makes the default for new files) cannot be opened while the
// phone is locked; `completeUntilFirstUserAuthentication` can, from the
// first unlock after a restart. The Rust library's SQLite (not Apple's) knows
// no protection classes, so the class is set here, on each file once it
// exists.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The protection class the library gives every file it creates: the
/// store (the database and its `-wal` and `-shm`) and the bodies of
/// background uploads (read by the system's upload daemon while locked).
public enum QPDataProtection {
    /// Readable while locked, from the first unlock after a restart.
    public static let fileProtection = FileProtectionType.completeUntilFirstUserAuthentication

    /// The store's files: the database, its write-ahead log and its shared
    /// memory. The core keeps the last two when it closes the store
    /// (SQLITE_FCNTL_PERSIST_WAL), so each exists from the first open on and
    /// keeps the class set here.
    public static func storeFiles(_ storePath: String) -> [String] {
        [storePath, storePath + "-wal", storePath + "-shm"]
    }

    /// Sets the class on every store file that exists.
    public static func protectStore(at storePath: String) throws {
        for path in storeFiles(storePath) where FileManager.default.fileExists(atPath: path) {
            try protect(path)
        }
    }

    /// Sets the class on one file or folder (a folder's class is what iOS
    /// gives the files created in it).
    public static func protect(_ path: String) throws {
        #if canImport(Darwin)
        try FileManager.default.setAttributes([.protectionKey: fileProtection], ofItemAtPath: path)
        #else
        try LinuxStandIn.set(fileProtection, path)
        #endif
    }

    /// The class a file has (nil: none set, or no such file).
    public static func protection(of path: String) -> FileProtectionType? {
        #if canImport(Darwin)
        return (try? FileManager.default.attributesOfItem(atPath: path))?[.protectionKey] as? FileProtectionType
        #else
        return LinuxStandIn.get(path)
        #endif
    }

    #if !canImport(Darwin)
    /// Linux has no protection classes (Foundation accepts `protectionKey`
    /// and ignores it). Stand-in: the class is kept in an extended attribute
    /// of the file itself, so a test reads what is on disk, and a file made
    /// again (a deleted WAL created anew) is seen without one.
    enum LinuxStandIn {
        static let attribute = "user.qp.file-protection"
        // Glibc's module map leaves out <sys/xattr.h>: the two calls by name.
        private typealias SetXattr = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>,
                                                     UnsafeRawPointer?, Int, Int32) -> Int32
        private typealias GetXattr = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>,
                                                     UnsafeMutableRawPointer?, Int) -> Int
        private static let libc = dlopen(nil, RTLD_NOW)
        private static let setxattr = dlsym(libc, "setxattr").map { unsafeBitCast($0, to: SetXattr.self) }
        private static let getxattr = dlsym(libc, "getxattr").map { unsafeBitCast($0, to: GetXattr.self) }

        static func set(_ type: FileProtectionType, _ path: String) throws {
            let value = Array(type.rawValue.utf8)
            guard let setxattr, setxattr(path, attribute, value, value.count, 0) == 0 else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path,
                                                               "errno": String(cString: strerror(errno))])
            }
        }

        static func get(_ path: String) -> FileProtectionType? {
            var buffer = [UInt8](repeating: 0, count: 128)
            guard let getxattr else { return nil }
            let n = getxattr(path, attribute, &buffer, buffer.count)
            guard n > 0 else { return nil }
            return FileProtectionType(rawValue: String(decoding: buffer[0..<n], as: UTF8.self))
        }
    }
    #endif
}

/// The phone's session as the app opens it at launch: off the main thread
/// (SQLite may wait seconds for the extension's write lock, and iOS ends an
/// app whose launch stalls), with the store's files readable while the
/// phone is locked. Made at launch, it starts opening at once; the app's
/// entry points wait for it off the main thread (`core()`), the lifecycle
/// and the background answers on their own queues.
public final class QPSession: @unchecked Sendable {
    private let opened = DispatchGroup()
    private let lock = NSLock()
    private var result: Result<PhoneCore, Error>?
    /// Opens the store (nil: a session made open).
    private let openStore: (() throws -> PhoneCore)?
    private var opening = false
    private let storeChanges = NSLock()

    /// Starts opening the store at `storePath` on a background queue. If
    /// it cannot be opened, the next entry point that asks for the core
    /// (a return to the foreground, a push, a notification action) tries
    /// again: a store that failed once (the disk full, the file protected
    /// before the first unlock) is not a session lost until relaunch.
    public init(storePath: String, mode: StoreMode, vault: TokenVault, languages: [String],
                deviceKeys: DeviceKeyStore? = nil) {
        openStore = {
            try Self.openHere(storePath: storePath, mode: mode, vault: vault, languages: languages,
                              deviceKeys: deviceKeys)
        }
        startOpening()
    }

    /// Opens on a background queue, unless open or opening.
    private func startOpening() {
        let start = lock.withLock { () -> Bool in
            if opening { return false }
            if case .success? = result { return false }
            opening = true
            opened.enter()
            return true
        }
        guard start, let open = openStore else { return }
        DispatchQueue.global(qos: .userInitiated).async { [self] in
            // The extension may hold the store while it creates or migrates it
            // (a push arriving at the first launch): SQLite then refuses the
            // open at once, without its busy wait. Tried again for a while,
            // here off the main thread, rather than no session for the
            // process's life.
            let deadline = Date().addingTimeInterval(Self.lockedRetryWindow)
            var r: Result<PhoneCore, Error>
            repeat {
                r = Result { try open() }
                guard case let .failure(error) = r, case .Storage(kind: .locked, _)? = error as? QpError,
                      Date() < deadline else { break }
                Thread.sleep(forTimeInterval: 0.1)
            } while true
            if case let .failure(error) = r { reportGlueFailure(site: "open the session", error: "\(error)") }
            lock.withLock {
                result = r
                opening = false
            }
            opened.leave()
        }
    }

    /// A failed open is tried again by the next caller.
    private func retryIfFailed() {
        if failure != nil { startOpening() }
    }

    /// Store changes that open or close the store (resume, suspend,
    /// `enteringBackground`) in this process, one at a time: a background
    /// report that reopens the suspended store and suspends it again is
    /// not interleaved with the app's return to the foreground. Never on
    /// the main thread (it may wait for the other).
    package func usingStore<T>(_ body: () throws -> T) rethrows -> T {
        storeChanges.lock()
        defer { storeChanges.unlock() }
        return try body()
    }

    /// Background work using the store now (under `storeChanges`): while
    /// any runs, none of them closes the store.
    private var backgroundUses = 0
    /// Returns to the foreground so far (under `storeChanges`): a
    /// background path that began before one leaves the store open.
    private var foregrounds = 0

    /// The lifecycle's return to the foreground: `resume` under
    /// `usingStore`, and background work in progress no longer closes the
    /// store when it ends (the app now uses it).
    package func comingToForeground(_ resume: () throws -> Void) rethrows {
        try usingStore {
            foregrounds += 1
            try resume()
        }
    }

    /// Work the system runs while the app may be in the background (a
    /// notification action, a silent push, a background refresh, an
    /// upload's report) over a store the app may have suspended: opens the
    /// store, runs `body` (the lock is not held meanwhile: it may send),
    /// then, with `suspendAfter` (the app was in the background), closes
    /// it again, unless other such work still uses it or the app came to
    /// the foreground meanwhile. Without this, one path's suspend closed
    /// the store under another that had just opened it.
    package func withStoreOpen<T>(_ core: PhoneCore, suspendAfter: Bool, site: String,
                                  _ body: () async throws -> T) async rethrows -> T {
        let use = openForBackgroundWork(core, suspendAfter: suspendAfter, site: site)
        defer { use.end() }
        return try await body()
    }

    /// The same, for work that does not wait (on the caller's queue, never
    /// the main thread).
    package func withStoreOpenNow<T>(_ core: PhoneCore, suspendAfter: Bool, site: String,
                                     _ body: () throws -> T) rethrows -> T {
        let use = openForBackgroundWork(core, suspendAfter: suspendAfter, site: site)
        defer { use.end() }
        return try body()
    }

    /// `withStoreOpen` for work that must close the store at a moment of
    /// its own (before a completion handler, after which iOS may suspend
    /// the app): `end()` it then (once; later calls do nothing).
    package func openForBackgroundWork(_ core: PhoneCore, suspendAfter: Bool, site: String) -> BackgroundStoreUse {
        let since = usingStore { () -> Int in
            backgroundUses += 1
            reported("\(site): resume") { try core.resume() }
            return foregrounds
        }
        return BackgroundStoreUse { [self] in
            usingStore {
                backgroundUses -= 1
                guard suspendAfter, backgroundUses == 0, foregrounds == since else { return }
                reported("\(site): suspend") { try core.suspend() }
            }
        }
    }

    /// How long a store another process holds is tried again at launch.
    static let lockedRetryWindow: TimeInterval = 10

    /// A session already open (tests, or an app that opened it itself).
    public init(core: PhoneCore) {
        result = .success(core)
        openStore = nil
    }

    /// The session once open; nil when it could not be opened (`failure`
    /// says why). Waits for the open without blocking a thread.
    public func core() async -> PhoneCore? {
        retryIfFailed()
        return await withCheckedContinuation { (c: CheckedContinuation<PhoneCore?, Never>) in
            opened.notify(queue: .global(qos: .userInitiated)) { c.resume(returning: self.openedCore) }
        }
    }

    /// The same, blocking: for the library's own serial queues, never the
    /// main thread.
    package func waitForCore() -> PhoneCore? {
        retryIfFailed()
        opened.wait()
        return openedCore
    }

    /// The session if open now (nil while opening).
    public var openedCore: PhoneCore? { lock.withLock { try? result?.get() } }

    /// Why the store could not be opened (the App Group missing from the
    /// entitlements, the disk full), once known: for the app to show.
    public var failure: Error? {
        lock.withLock {
            if case let .failure(error) = result { return error }
            return nil
        }
    }

    /// `PhoneCore.openSession` on a background queue, awaited.
    public static func open(storePath: String, mode: StoreMode, vault: TokenVault, languages: [String],
                            deviceKeys: DeviceKeyStore? = nil) async throws -> PhoneCore {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<PhoneCore, Error>) in
            DispatchQueue.global(qos: .userInitiated).async {
                c.resume(with: Result {
                    try openHere(storePath: storePath, mode: mode, vault: vault, languages: languages,
                                 deviceKeys: deviceKeys)
                })
            }
        }
    }

    /// `PhoneCore.openSession` on the calling thread (the notification
    /// extension's, in `QPNotificationService.makeCore`; never the app's
    /// main thread), then the store's files get
    /// `QPDataProtection.fileProtection` (a failure to set it is reported,
    /// and the session is used all the same).
    public static func openHere(storePath: String, mode: StoreMode, vault: TokenVault, languages: [String],
                                deviceKeys: DeviceKeyStore? = nil) throws -> PhoneCore {
        let core = try PhoneCore.openSession(storePath: storePath, mode: mode, vault: vault, languages: languages,
                                             deviceKeys: deviceKeys)
        reported("data protection: the store's files") { try QPDataProtection.protectStore(at: storePath) }
        return core
    }
}

/// One background path's use of the store (`QPSession.openForBackgroundWork`).
package final class BackgroundStoreUse: @unchecked Sendable {
    private let once = Once()
    private let close: () -> Void
    init(close: @escaping () -> Void) { self.close = close }
    /// Done with the store: closes it if this was the last use and the app
    /// is still in the background. Once.
    package func end() { if once.claim() { close() } }
}
