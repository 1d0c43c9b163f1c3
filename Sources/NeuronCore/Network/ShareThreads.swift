// The threads of a pass split over threads (`Network.batchThreads`), and of a product cut into
// panels (`Tensor/ProductThreads.swift`): started once, then woken for each pass (or product). The
// caller computes share 0 itself and waits for the others. A pass allocates nothing:
// the work is a value of a concrete type, stored in place, where a closure handed over (through a
// dispatch queue's concurrent loop: 3 allocations a step; `withoutActuallyEscaping`: 1) is boxed.
//
// Each side spins a while before it sleeps: a thread woken from a condition wait starts much later
// than the next pass of a training loop comes (the update, the next batch), a delay that would be
// most of a small step (Benchmarks/README.md, “Figures behind the code”: waking a thread). The
// spins are bounded, so an idle network's threads sleep.
import Foundation
import Synchronization

/// The work of one pass: what share `share` computes.
protocol ShareWork: Sendable {
    /// Computes share `share` (0 on the caller's thread, `1…` on the threads).
    func run(share: Int)
}

/// `count` threads that each run one share of every pass handed to ``run(_:)``, share `1…count`;
/// they wait on a condition between passes and end with the object.
final class ShareThreads<Work: ShareWork>: @unchecked Sendable {
    /// What the caller and the threads share. A class apart from ``ShareThreads`` so that the
    /// threads do not keep it alive: its deinit stops them. `work` and `stopped` are written under
    /// `condition`'s lock before `generation` is bumped (releasing), and read after it is seen
    /// (acquiring); the sleepers wait on `condition`.
    private final class Handover: @unchecked Sendable {
        let condition = NSCondition()
        /// Bumped by every pass (and by the stop): a thread takes a pass whose generation it has not seen.
        let generation = Atomic<Int>(0)
        /// Threads still running the pass.
        let running = Atomic<Int>(0)
        /// The pass's work, valid from its start until every thread has counted itself done.
        var work: Work?
        var stopped = false
    }

    /// How long a side polls before it sleeps: longer than a training loop spends between passes
    /// (the update and the next batch; Benchmarks/README.md, “Figures behind the code”: waking a thread).
    private static var pollingTime: Duration { .milliseconds(2) }

    /// Polls until `done` holds or ``pollingTime`` has passed; whether it holds.
    @inline(__always)
    private static func poll(until done: () -> Bool) -> Bool {
        let clock = ContinuousClock(), deadline = clock.now.advanced(by: pollingTime)
        while true {
            for _ in 0..<256 where done() { return true }  // the clock read once per 256 polls
            if clock.now >= deadline { return done() }
        }
    }

    /// The threads besides the caller.
    let count: Int
    private let handover = Handover()
    /// One pass at a time: copies of a network share their threads.
    private let passLock = NSLock()

    /// Starts `count` threads.
    init(count: Int) {
        self.count = count
        for share in 1..<count + 1 {
            let handover = self.handover
            let thread = Thread { Self.serve(handover, share: share) }
            thread.name = "neuron share \(share)"
            thread.start()
        }
    }

    deinit {
        handover.condition.lock()
        handover.stopped = true
        handover.generation.add(1, ordering: .releasing)
        handover.condition.broadcast()
        handover.condition.unlock()
    }

    /// A thread's life: wait for a pass (polling, then asleep), run its share, count itself done, until stopped.
    private static func serve(_ handover: Handover, share: Int) {
        var seen = 0
        while true {
            _ = poll { handover.generation.load(ordering: .acquiring) != seen }
            handover.condition.lock()
            while handover.generation.load(ordering: .acquiring) == seen { handover.condition.wait() }
            seen = handover.generation.load(ordering: .acquiring)
            let (work, stopped) = (handover.work, handover.stopped)
            handover.condition.unlock()
            if stopped { return }
            work!.run(share: share)
            if handover.running.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
                // The caller may be asleep: it checks `running` under the lock before it waits.
                handover.condition.lock()
                handover.condition.broadcast()
                handover.condition.unlock()
            }
        }
    }

    /// Runs share 0 of `work` on the calling thread and shares `1…count` on the threads, at
    /// once, and returns when every one has returned.
    func run(_ work: Work) {
        passLock.lock()
        defer { passLock.unlock() }
        hand(work)
    }

    /// ``run(_:)``, unless another caller's work is running: then nothing is run and it returns
    /// false at once (a product's caller computes the product whole instead of waiting).
    func tryRun(_ work: Work) -> Bool {
        guard passLock.try() else { return false }
        defer { passLock.unlock() }
        hand(work)
        return true
    }

    /// Hands `work` to the threads, runs share 0 and waits for the rest; the caller holds `passLock`.
    private func hand(_ work: Work) {
        handover.condition.lock()
        handover.work = work
        handover.running.store(count, ordering: .releasing)
        handover.generation.add(1, ordering: .releasing)
        handover.condition.broadcast()  // no system call when every thread is still polling
        handover.condition.unlock()
        work.run(share: 0)
        _ = Self.poll { handover.running.load(ordering: .acquiring) == 0 }
        handover.condition.lock()
        while handover.running.load(ordering: .acquiring) > 0 { handover.condition.wait() }
        handover.work = nil
        handover.condition.unlock()
    }
}
