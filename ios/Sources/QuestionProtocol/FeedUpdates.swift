// The feed as an AsyncSequence: the core's feed subscription (which fires
// after any commit to the shared store, by this process or the other one,
// app or extension) turned into a stream of feeds. Glue only: the core
// decides when the feed may have changed and what it holds.
import Foundation

/// Forwards the core's signal to a closure (uniffi needs a class).
private final class FeedUpdatesListener: FeedListener, @unchecked Sendable {
    private let changed: () -> Void
    init(_ changed: @escaping () -> Void) { self.changed = changed }
    func feedChanged() { changed() }
}

/// Whether the first read has been handed over; a change signalled before
/// that is read again after it (not read twice at once, never lost).
private final class FirstRead: @unchecked Sendable {
    private let lock = NSLock()
    private var delivered = false
    private var missed = false
    /// A change: true when the listener reads it itself.
    func changed() -> Bool { lock.withLock { if !delivered { missed = true }; return delivered } }
    /// The first feed handed over: true when a change came meanwhile.
    func handedOver() -> Bool { lock.withLock { delivered = true; defer { missed = false }; return missed } }
}

extension PhoneCore {
    /// The feed now, then again each time it may have changed. Read off the
    /// caller's thread (the first with `feedAsync()`, the others on the
    /// core's watcher thread); a consumer slower than
    /// the changes gets the newest feed, not a backlog. A store that cannot
    /// be read at the start ends the stream with the error; a later failed
    /// read (say, a store suspended in the background) is skipped: the core
    /// signals again on resume. The core's subscription stops when the
    /// consumer stops (or its task is cancelled).
    ///
    ///     for try await cells in phone.feedUpdates() { await MainActor.run { model.cells = cells } }
    public func feedUpdates() -> AsyncThrowingStream<[FeedCell], Error> {
        AsyncThrowingStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let first = FirstRead()
            let read: () -> Void = { [weak self] in
                guard let self else { return continuation.finish() }
                guard first.changed() else { return }
                if let cells = feedRead("feed updates", { try self.feed() }) { continuation.yield(cells) }
            }
            // Subscribed before the first read, so no change falls between.
            let subscription = self.subscribeFeed(listener: FeedUpdatesListener(read))
            let start = Task { [weak self] in
                guard let self else { return continuation.finish() }
                do { continuation.yield(try await self.feedAsync()) } catch { return continuation.finish(throwing: error) }
                if first.handedOver(), let cells = await feedRead("feed updates", { try await self.feedAsync() }) {
                    continuation.yield(cells)
                }
            }
            continuation.onTermination = { _ in
                start.cancel()
                subscription.cancel()
            }
        }
    }
}

/// A later read of the feed: nil when it failed. A store suspended in the
/// background is expected (the core signals again on resume); any other
/// failure is reported, not dropped: the person would miss a question in
/// the feed without a trace.
private func feedRead(_ site: String, _ read: () throws -> [FeedCell]) -> [FeedCell]? {
    do { return try read() } catch QpError.Storage(kind: .suspended, _) { return nil } catch {
        reportGlueFailure(site: site, error: "\(error)")
        return nil
    }
}

private func feedRead(_ site: String, _ read: () async throws -> [FeedCell]) async -> [FeedCell]? {
    do { return try await read() } catch QpError.Storage(kind: .suspended, _) { return nil } catch {
        reportGlueFailure(site: site, error: "\(error)")
        return nil
    }
}
