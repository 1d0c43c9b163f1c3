// The threads of a pass split over threads (`Network.batchThreads`): started once, then woken for
// each pass. The caller computes share 0 itself and waits for the others. A pass allocates nothing:
// the work is a value of a concrete type, stored in place, where a closure handed over (through a
// dispatch queue's concurrent loop: 3 allocations a step; `withoutActuallyEscaping`: 1) is boxed.
import Foundation

/// The work of one pass: what share `share` computes.
protocol ShareWork {
    /// Computes share `share` (0 on the caller's thread, `1…` on the threads).
    func run(share: Int)
}

/// `count` threads that each run one share of every pass handed to ``run(_:)``, share `1…count`;
/// they wait on a condition between passes and end with the object.
final class ShareThreads<Work: ShareWork>: @unchecked Sendable {
    /// What the caller and the threads share, guarded by `condition`'s lock. A class apart from
    /// ``ShareThreads`` so that the threads do not keep it alive: its deinit stops them.
    private final class Handover: @unchecked Sendable {
        let condition = NSCondition()
        /// Bumped by every pass: a thread takes a pass whose generation it has not seen.
        var generation = 0
        /// The pass's work, valid from its start until every thread has counted itself done.
        var work: Work?
        /// Threads still running the pass.
        var running = 0
        var stopped = false
    }

    /// The threads besides the caller.
    let count: Int
    private let handover = Handover()
    /// One pass at a time: copies of a network share their threads.
    private let passLock = NSLock()

    /// Starts `count` threads.
    init(count: Int) {
        self.count = count
        for share in 1...max(1, count) where count > 0 {
            let handover = self.handover
            let thread = Thread { Self.serve(handover, share: share) }
            thread.name = "neuron share \(share)"
            thread.start()
        }
    }

    deinit {
        handover.condition.lock()
        handover.stopped = true
        handover.condition.broadcast()
        handover.condition.unlock()
    }

    /// A thread's life: wait for a pass, run its share, count itself done, until stopped.
    private static func serve(_ handover: Handover, share: Int) {
        var seen = 0
        while true {
            handover.condition.lock()
            while handover.generation == seen && !handover.stopped { handover.condition.wait() }
            if handover.stopped {
                handover.condition.unlock()
                return
            }
            seen = handover.generation
            let work = handover.work!
            handover.condition.unlock()
            work.run(share: share)
            handover.condition.lock()
            handover.running -= 1
            if handover.running == 0 { handover.condition.broadcast() }
            handover.condition.unlock()
        }
    }

    /// Runs share 0 of `work` on the calling thread and shares `1…count` on the threads, at
    /// once, and returns when every one has returned.
    func run(_ work: Work) {
        passLock.lock()
        defer { passLock.unlock() }
        handover.condition.lock()
        handover.work = work
        handover.running = count
        handover.generation &+= 1
        handover.condition.broadcast()
        handover.condition.unlock()
        work.run(share: 0)
        handover.condition.lock()
        while handover.running > 0 { handover.condition.wait() }
        handover.work = nil
        handover.condition.unlock()
    }
}
