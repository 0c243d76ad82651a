// The notification flows without UserNotifications: what the extension does
// with a push, what an answer action does, and reconciliation. They run the
// same on Linux (tests) and on Apple platforms, where Apple/*.swift maps
// them onto UNUserNotificationCenter, the extension and the app lifecycle.
// Every decision is the core's; this file only sequences the calls.
import Foundation

/// What the extension hands back to the system, as plain values.
public struct QPNotificationContent: Equatable {
    public var title: String
    public var subtitle: String?
    public var body: String
    /// The per-question category; nil for no buttons (a resolved question,
    /// or the fallback: a tap opens the app).
    public var categoryIdentifier: String?
    public var threadIdentifier: String?
    public var questionId: String?
    /// Quiet (`.passive`, no sound): a resolution replacing a question.
    public var passive: Bool = false
    /// How loud it is (interruption level, sound) and the app icon's badge,
    /// from the core: the app's `PresentOptions`; a resolution is quiet.
    public var presentation: IosPresentation

    public init(title: String, subtitle: String?, body: String, categoryIdentifier: String?,
                threadIdentifier: String?, questionId: String?, passive: Bool = false,
                presentation: IosPresentation? = nil) {
        self.title = title; self.subtitle = subtitle; self.body = body
        self.categoryIdentifier = categoryIdentifier; self.threadIdentifier = threadIdentifier
        self.questionId = questionId; self.passive = passive
        self.presentation = presentation ?? iosPresentation(options: PresentOptions(), resolved: passive)
    }

    /// A resolved question's replacement (no buttons, quiet).
    public init(resolved n: IosResolvedNotification, presentation: IosPresentation? = nil) {
        self.init(title: n.title, subtitle: n.subtitle, body: n.body, categoryIdentifier: nil,
                  threadIdentifier: n.threadId, questionId: n.identifier, passive: true, presentation: presentation)
    }

    /// A question as its push shows it.
    public init(question n: IosNotification, questionId: String, presentation: IosPresentation? = nil) {
        self.init(title: n.title, subtitle: n.subtitle, body: n.body, categoryIdentifier: n.category.identifier,
                  threadIdentifier: n.threadId, questionId: questionId, presentation: presentation)
    }
}

extension PresentOptions {
    /// These options, with `requireUnlockForDanger` also set when `unlock`.
    func requiringUnlock(_ unlock: Bool) -> PresentOptions {
        var o = self
        o.requireUnlockForDanger = o.requireUnlockForDanger || unlock
        return o
    }
}

/// The presentation of a question (or, `resolved`, of its replacement):
/// the app's options, with the badge counted from the store when there is one.
func presentation(_ options: PresentOptions, core: PhoneCore?, resolved: Bool) -> IosPresentation {
    core?.iosPresentation(options: options, resolved: resolved) ?? iosPresentation(options: options, resolved: resolved)
}

/// The notification center's category API (`getNotificationCategories`,
/// `setNotificationCategories`), behind a protocol.
public protocol QPCategoryCenter: AnyObject {
    func categoryIdentifiers(_ completion: @escaping ([String]) -> Void)
    /// Registers exactly `keep` (identifiers already registered) plus `add`.
    func setCategories(keep: [String], add: IosCategory, _ completion: @escaping () -> Void)
}

/// The rest of the notification center the flows use: what is on screen,
/// removing and posting by identifier (the question id).
public protocol QPNotificationCenter: QPCategoryCenter {
    /// Identifiers of this library's notifications on screen that still
    /// show a question (not those already showing a resolution).
    func questionNotificationIds(_ completion: @escaping ([String]) -> Void)
    func remove(identifiers: [String])
    /// Posts now, replacing any notification with the same identifier.
    func post(_ content: QPNotificationContent, identifier: String)
    /// The app icon's badge (the pending count), after a reconciliation.
    func setBadgeCount(_ count: Int)
    /// Removes every notification of this library on screen (questions,
    /// resolutions, fallbacks), not the app's others: signing out.
    func removeAllQuestionNotifications(_ completion: @escaping () -> Void)
}

public extension QPNotificationCenter {
    /// Centers that keep no badge.
    func setBadgeCount(_ count: Int) {}
    /// Centers that only know the questions on screen.
    func removeAllQuestionNotifications(_ completion: @escaping () -> Void) {
        questionNotificationIds { ids in
            self.remove(identifiers: ids)
            completion()
        }
    }
}

/// The account screen's sign-out through the glue (app or extension-safe).
public enum QPAccount {
    /// Signs out (`core.signOut()`), then removes this library's
    /// notifications from the screen and sets the badge to 0, whatever the
    /// sign-out did (also when it throws): on a shared phone the next
    /// person must not see the previous one's questions.
    public static func signOut(core: PhoneCore,
                               center: QPNotificationCenter = QPUserNotificationCenter()) async throws -> SignOutReport {
        do {
            let report = try await core.signOut()
            await clear(center)
            return report
        } catch {
            await clear(center)
            throw error
        }
    }

    /// This library's notifications removed, the badge 0.
    public static func clear(_ center: QPNotificationCenter) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            center.removeAllQuestionNotifications { c.resume() }
        }
        center.setBadgeCount(0)
    }
}

/// The platform time budgets, in seconds, as the core sets them
/// (`phoneBudgets()`): the glue reads them, never its own numbers.
public enum QPBudgets {
    /// The notification extension's network time per push.
    public static var extensionNetwork: TimeInterval { TimeInterval(phoneBudgets().extensionNetworkMs) / 1000 }
    /// How long a lock-screen answer has to reach the server before the
    /// action's completion handler runs.
    public static var answerDelivery: TimeInterval { TimeInterval(phoneBudgets().answerDeliveryMs) / 1000 }
}

/// `op`'s value, or nil with its error reported (the core's log: oslog)
/// instead of dropped: for calls the glue cannot throw from (the system
/// called it) and whose failure changes what it does next only by nil.
@discardableResult
package func reported<T>(_ site: String, _ op: () throws -> T) -> T? {
    do { return try op() } catch {
        reportGlueFailure(site: site, error: "\(error)")
        return nil
    }
}

/// `reported`, for async calls.
@discardableResult
package func reported<T>(_ site: String, _ op: () async throws -> T) async -> T? {
    do { return try await op() } catch {
        reportGlueFailure(site: site, error: "\(error)")
        return nil
    }
}

/// Runs a closure at most once, from any thread (completion handlers).
/// `package`: the app product (QuestionProtocolApp) uses it too.
package final class Once: @unchecked Sendable {
    private let lock = NSLock()
    private var done = false
    package init() {}
    /// True the first time only.
    package func claim() -> Bool {
        lock.lock(); defer { lock.unlock() }
        if done { return false }
        done = true
        return true
    }
}

/// `op`'s result, or nil when `seconds` pass first. `op` is not stopped
/// (a flush in flight finishes or fails on its own; what it could not send
/// stays queued).
func withDeadline<T>(_ seconds: TimeInterval, _ op: @escaping @Sendable () async -> T?) async -> T? {
    await withCheckedContinuation { (cont: CheckedContinuation<T?, Never>) in
        let once = Once()
        Task.detached {
            let value = await op()
            if once.claim() { cont.resume(returning: value) }
        }
        Task.detached {
            try? await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1_000_000_000))
            if once.claim() { cont.resume(returning: nil) }
        }
    }
}

public enum QPServiceFlow {
    /// The plain notification shown when a payload cannot be decoded, in
    /// the person's language.
    /// With `core`, its words: on a device with a key, the generic ones
    /// (a plain push's own words may be an injector's).
    public static func fallbackContent(userInfoJSON: String, core: PhoneCore? = nil,
                                       languages: [String] = Locale.preferredLanguages) -> QPNotificationContent {
        let alert = apnsAlert(userInfoJson: userInfoJSON) // the core reads the payload
        let f = core?.fallbackNotification(title: alert.title, body: alert.body)
            ?? fallbackNotification(title: alert.title, body: alert.body, languages: languages)
        return QPNotificationContent(title: f.title, subtitle: nil, body: f.body,
                                     categoryIdentifier: nil, threadIdentifier: nil, questionId: nil)
    }

    /// Decodes the push through the core (recording it in the shared store
    /// when `core` is available), then:
    /// - a question: registers its category merged with what is registered,
    ///   reads the set back, and delivers the question's content;
    /// - a resolution: a claim until the server confirms it (within
    ///   `budget` seconds); then the resolved copy (quiet, no buttons), from
    ///   the store in the person's current language, or else the server's
    ///   alert, which is the same copy in the device's language. Not
    ///   confirmed, a question still pending here is shown again with its
    ///   buttons: a forged resolution must not hide it; with no store to
    ///   ask (no core, or its store unreadable), the generic notification;
    /// - anything undecodable (or, with a device key, not sealed): a plain
    ///   notification.
    /// `deliver` is called exactly once. `options`: how loud a question is
    /// (interruption level, sound; the badge is the pending count).
    public static func process(userInfoJSON: String,
                               core: PhoneCore?,
                               center: QPCategoryCenter,
                               options: PresentOptions = PresentOptions(),
                               requireUnlockForDanger: Bool = false,
                               maxCategories: UInt32 = maxIosCategories(),
                               languages: [String] = Locale.preferredLanguages,
                               budget: TimeInterval = QPBudgets.extensionNetwork,
                               deliver: @escaping (QPNotificationContent) -> Void) {
        let decoded: DecodedPush
        do {
            decoded = try core?.receiveApns(json: userInfoJSON) ?? decodeApnsPayload(json: userInfoJSON)
        } catch {
            deliver(fallbackContent(userInfoJSON: userInfoJSON, core: core, languages: languages))
            return
        }
        let options = options.requiringUnlock(requireUnlockForDanger)
        let present = { (question: PushQuestion) in
            // In the person's language: the core's (it was created with them), or these.
            let n = core?.iosNotificationWith(question: question, options: options)
                ?? iosNotification(question: question, requireUnlockForDanger: options.requireUnlockForDanger,
                                   languages: languages)
            let shown = presentation(options, core: core, resolved: false)
            register(n.category, core: core, center: center, maxCategories: maxCategories) {
                deliver(QPNotificationContent(question: n, questionId: question.id, presentation: shown))
            }
        }
        switch decoded {
        case let .resolved(notice):
            // The core decides (the same on Android), asking the server
            // within the budget: a question it does not confirm and still
            // pending here is shown again with its buttons; one no store
            // can judge (no core, or its store unreadable) is not shown as
            // resolved either: the generic notification in its place.
            let within = UInt64(max(0, budget) * 1000)
            Task.detached {
                let action: ResolutionPushAction
                if let core {
                    action = await core.resolutionPush(questionId: notice.id, withinMs: within)
                } else {
                    action = resolutionPushWithoutStore()
                }
                switch action {
                case let .keepQuestion(held): present(held)
                case .keepUnconfirmed:
                    deliver(unconfirmedContent(notice: notice, core: core, languages: languages))
                case .withdraw: deliver(resolvedContent(notice: notice, userInfoJSON: userInfoJSON, core: core))
                }
            }
        case let .question(question):
            present(question)
        }
    }

    /// A resolution nobody could check: the generic words (never the push's
    /// "resolved" alert), under the question's id so the app's reconcile
    /// replaces or removes it; a tap opens the app. Quiet: it stands in for
    /// a question that already alerted.
    static func unconfirmedContent(notice: ResolvedPush, core: PhoneCore?,
                                   languages: [String]) -> QPNotificationContent {
        let generic = fallbackContent(userInfoJSON: "{}", core: core, languages: languages)
        return QPNotificationContent(title: generic.title, subtitle: nil, body: generic.body,
                                     categoryIdentifier: nil, threadIdentifier: nil, questionId: notice.id,
                                     passive: true, presentation: presentation(PresentOptions(), core: core, resolved: true))
    }

    static func resolvedContent(notice: ResolvedPush, userInfoJSON: String, core: PhoneCore?) -> QPNotificationContent {
        let quiet = presentation(PresentOptions(), core: core, resolved: true)
        if let n = reported("resolved copy", { try core?.iosResolvedNotification(questionId: notice.id) }) ?? nil {
            return QPNotificationContent(resolved: n, presentation: quiet)
        }
        let alert = apnsAlert(userInfoJson: userInfoJSON) // the core reads the payload
        return QPNotificationContent(title: alert.title ?? "", subtitle: alert.subtitle, body: alert.body ?? "",
                                     categoryIdentifier: nil, threadIdentifier: nil, questionId: notice.id,
                                     passive: true, presentation: quiet)
    }

    /// Registers `category` merged with what is registered (the core plans
    /// the set), then reads the set back: on some iOS versions a category
    /// set in the extension is not active yet when the content is handed over.
    static func register(_ category: IosCategory, core: PhoneCore?, center: QPCategoryCenter,
                         maxCategories: UInt32 = maxIosCategories(), _ done: @escaping () -> Void) {
        // One change to the set at a time in this process (CategoryUpdates):
        // the read, the plan and the write are one step.
        CategoryUpdates.enqueue { written in
            registerNow(category, core: core, center: center, maxCategories: maxCategories) { written(); done() }
        }
    }

    private static func registerNow(_ category: IosCategory, core: PhoneCore?, center: QPCategoryCenter,
                                    maxCategories: UInt32, _ done: @escaping () -> Void) {
        center.categoryIdentifiers { registered in
            // The core plans, from what its store knows (or, with no store
            // at hand, without it).
            let plan = core?.planIosCategories(registered: registered, newCategory: category.identifier,
                                               now: Date(), max: maxCategories)
                ?? planIosCategoriesWithoutStore(registered: registered, newCategory: category.identifier,
                                                 now: Date(), max: maxCategories)
            center.setCategories(keep: plan.keep.filter { $0 != category.identifier }, add: category) {
                center.categoryIdentifiers { _ in done() }
            }
        }
    }

    /// The extension's whole run for one push, within `budget` seconds of
    /// network time: present it ([`process`]), send what the outbox holds
    /// (answers left by an earlier run or an app that was suspended) and
    /// reconcile the notifications on screen with the store, then suspend the
    /// core so no file lock is held, then call `deliver` exactly once.
    /// `presented` is told the content as soon as it is known (before the
    /// network), so an extension running out of time can hand it over.
    public static func run(userInfoJSON: String,
                           core: PhoneCore?,
                           center: QPNotificationCenter,
                           budget: TimeInterval = QPBudgets.extensionNetwork,
                           options: PresentOptions = PresentOptions(),
                           requireUnlockForDanger: Bool = false,
                           languages: [String] = Locale.preferredLanguages,
                           presented: ((QPNotificationContent) -> Void)? = nil,
                           deliver: @escaping (QPNotificationContent) -> Void) {
        reported("extension resume") { try core?.resume() }
        process(userInfoJSON: userInfoJSON, core: core, center: center, options: options,
                requireUnlockForDanger: requireUnlockForDanger, languages: languages, budget: budget) { content in
            presented?(content)
            guard let core else { deliver(content); return }
            Task.detached {
                _ = await withDeadline(budget) { await reported("extension flush") { try await core.flush() } }
                await QPReconciler.reconcile(core: core, center: center, except: content.questionId, options: options)
                reported("extension suspend") { try core.suspend() }
                deliver(content)
            }
        }
    }
}

public enum QPReconciler {
    /// Brings the notifications on screen in line with the store: the
    /// resolved replaced by their resolved copy, the unknown removed, the
    /// never-shown posted (with their categories). `except`: the
    /// notification being presented right now (the extension's own), left
    /// alone.
    public static func reconcile(core: PhoneCore, center: QPNotificationCenter, except: String? = nil,
                                 options: PresentOptions = PresentOptions(),
                                 requireUnlockForDanger: Bool = false) async {
        let onScreen = await questionsOnScreen(center)
        guard let plan = reported("reconcile", { try core.reconcile(onScreen: onScreen.filter { $0 != except }) }) else { return }
        await apply(plan, core: core, center: center, options: options.requiringUnlock(requireUnlockForDanger))
        if let pending = reported("badge", { try core.badgeCount() }) { center.setBadgeCount(Int(pending)) }
    }

    /// The identifiers of this library's notifications on screen.
    static func questionsOnScreen(_ center: QPNotificationCenter) async -> [String] {
        await withCheckedContinuation { (c: CheckedContinuation<[String], Never>) in
            center.questionNotificationIds { c.resume(returning: $0) }
        }
    }

    /// Does what the core's plan says to the notifications on screen:
    /// removes the unknown, replaces the resolved, posts the missed (with
    /// their categories).
    static func apply(_ plan: ReconcilePlan, core: PhoneCore, center: QPNotificationCenter,
                      options: PresentOptions) async {
        center.remove(identifiers: plan.remove)
        let quiet = presentation(options, core: core, resolved: true)
        for n in plan.resolved {
            center.post(QPNotificationContent(resolved: n, presentation: quiet), identifier: n.identifier)
        }
        for q in plan.post {
            let n = core.iosNotificationWith(question: q, options: options)
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                QPServiceFlow.register(n.category, core: core, center: center) { c.resume() }
            }
            center.post(QPNotificationContent(question: n, questionId: q.id,
                                              presentation: presentation(options, core: core, resolved: false)),
                        identifier: q.id)
        }
    }

    /// At launch and on every return to the foreground: the core's one call
    /// (`cameToForeground`: resume the store, queue again what a crash cut
    /// short at launch, send the outbox, pull from the server, reconcile),
    /// then its plan applied to the screen and its badge set. The report
    /// says what each step did (`failures`: signed out, offline, revoked).
    @discardableResult
    public static func cameToForeground(core: PhoneCore, center: QPNotificationCenter,
                                        options: PresentOptions = PresentOptions()) async -> ForegroundReport {
        let onScreen = await questionsOnScreen(center)
        let report = await core.cameToForeground(onScreen: onScreen)
        if let plan = report.plan { await apply(plan, core: core, center: center, options: options) }
        if let badge = report.badge { center.setBadgeCount(Int(badge)) }
        return report
    }

    /// `cameToForeground`, for callers that want the sync's report only
    /// (nil offline or signed out).
    @discardableResult
    public static func refresh(core: PhoneCore, center: QPNotificationCenter,
                               options: PresentOptions = PresentOptions()) async -> SyncReport? {
        await cameToForeground(core: core, center: center, options: options).synced
    }
}

/// What became of a notification action.
public enum QPAnswerOutcome: Equatable {
    /// Committed durably; sent now or queued (`status` says which).
    case committed(CommittedAnswer)
    /// Not an answer (the default tap, a dismiss): the deep link. Open the
    /// app at `questionId` (its feed cell, where every way to answer is).
    case notAnAnswer(questionId: String)
    /// Needs the app: e.g. typed text over the limit (kept as a draft
    /// there), a notification not showing the question held here, nobody
    /// signed in. `questionId`: the question to open, when known.
    case needsApp(message: String, questionId: String?)

    /// The deep link: the question to open the app at, when there is one
    /// (a tap, or an action that needs the app); nil once answered.
    public var questionToOpen: String? {
        switch self {
        case .committed: return nil
        case let .notAnAnswer(questionId): return questionId
        case let .needsApp(_, questionId): return questionId
        }
    }
}

public enum QPAnswerFlow {
    /// The question id of one of our category identifiers (the core decides).
    public static func questionId(fromCategory category: String) -> String? {
        questionIdOfCategory(category: category)
    }

    /// Commits the action durably (the answer survives whatever happens
    /// next) and says what it was.
    public static func commit(core: PhoneCore, questionId: String, actionIdentifier: String,
                              typedText: String?) -> QPAnswerOutcome {
        do {
            return .committed(try core.answerAction(questionId: questionId, actionId: actionIdentifier, text: typedText))
        } catch let QpError.Action(kind, message, _) {
            return kind == .unknownAction ? .notAnAnswer(questionId: questionId)
                : .needsApp(message: message, questionId: questionId)
        } catch QpError.NotSignedIn {
            // Signed out (perhaps in the app while this ran): nothing is answered.
            return .needsApp(message: core.openAppToFinish(), questionId: questionId)
        } catch {
            return .needsApp(message: "\(error)", questionId: questionId)
        }
    }

    /// A lock-screen action, start to finish: commit durably, then try to
    /// send within `flushWithin` seconds (iOS may suspend the app as soon as
    /// the completion handler runs, so the send comes first), then call
    /// `completion` exactly once. What could not be sent stays queued for
    /// the next extension run, background refresh or launch. The
    /// notification itself is gone: iOS dismisses it when an action is taken.
    @discardableResult
    public static func answer(core: PhoneCore, questionId: String, actionIdentifier: String, typedText: String?,
                              flushWithin: TimeInterval = QPBudgets.answerDelivery,
                              completion: @escaping () -> Void) async -> QPAnswerOutcome {
        reported("answer resume") { try core.resume() }
        let outcome = commit(core: core, questionId: questionId, actionIdentifier: actionIdentifier, typedText: typedText)
        if case .committed = outcome {
            _ = await withDeadline(flushWithin) { await reported("answer flush") { try await core.flush() } }
        }
        completion()
        return outcome
    }
}
