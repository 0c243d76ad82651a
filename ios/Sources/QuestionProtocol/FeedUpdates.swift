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

extension PhoneCore {
    /// The feed now, then again each time it may have changed. Read on the
    /// core's watcher thread, never the caller's; a consumer slower than
    /// the changes gets the newest feed, not a backlog. A store that cannot
    /// be read at the start ends the stream with the error; a later failed
    /// read (say, a store suspended in the background) is skipped: the core
    /// signals again on resume. The core's subscription stops when the
    /// consumer stops (or its task is cancelled).
    ///
    ///     for try await cells in phone.feedUpdates() { await MainActor.run { model.cells = cells } }
    public func feedUpdates() -> AsyncThrowingStream<[FeedCell], Error> {
        AsyncThrowingStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            do { continuation.yield(try self.feed()) } catch { return continuation.finish(throwing: error) }
            let read: () -> Void = { [weak self] in
                guard let self else { return continuation.finish() }
                if let cells = try? self.feed() { continuation.yield(cells) }
            }
            let subscription = self.subscribeFeed(listener: FeedUpdatesListener(read))
            continuation.onTermination = { _ in subscription.cancel() }
        }
    }
}
