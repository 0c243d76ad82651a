// The notification center's categories can only be replaced whole: each
// change reads the set, then writes it back. Two changes at once (the
// launch's reconcile posting a question, the app setting its own
// categories, a push shown in the same process) would each write what they
// read, and the later write drops what the earlier one added: a question's
// buttons gone. Every change the library makes goes through this queue,
// one read-then-write at a time, in the order asked.
import Foundation

enum CategoryUpdates {
    private static let lock = NSLock()
    private static var running = false
    private static var waiting: [(@escaping () -> Void) -> Void] = []

    /// Runs `update` once every change asked before it has called its
    /// `done`; `update` calls `done` once its write is made (any thread).
    static func enqueue(_ update: @escaping (_ done: @escaping () -> Void) -> Void) {
        let now = lock.withLock { () -> Bool in
            if running { waiting.append(update); return false }
            running = true
            return true
        }
        if now { run(update) }
    }

    private static func run(_ update: @escaping (@escaping () -> Void) -> Void) {
        let once = Once()
        update {
            guard once.claim() else { return }
            let next = lock.withLock { () -> ((@escaping () -> Void) -> Void)? in
                if waiting.isEmpty { running = false; return nil }
                return waiting.removeFirst()
            }
            // On another thread: a chain of updates whose centers answer
            // at once would otherwise nest one call per update.
            if let next { DispatchQueue.global(qos: .userInitiated).async { run(next) } }
        }
    }
}
