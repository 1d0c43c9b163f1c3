// The threads of a pass split over threads (`Network.batchThreads`), and of a product cut into
// panels (`Tensor/ProductThreads.swift`): started once, then woken for each pass (or product). A
// pass allocates nothing: the work is a value of a concrete type, stored in place, where a closure
// handed over (through a dispatch queue's concurrent loop: 3 allocations a step;
// `withoutActuallyEscaping`: 1) is boxed.
//
// Shares are taken, not handed out: the caller and each woken thread take the next share no one
// has begun, until none is left, so a thread the system has not run yet (another process holds
// its core) holds up no share: the caller computes it. The caller then waits only for shares
// another thread has begun. Which thread computes a share changes nothing in it (a share is a
// fixed part of the work, computed by the same code on the same buffers), so a result is the same
// bits whoever took its shares.
//
// Each side spins a while before it sleeps: a thread woken from a condition wait starts much later
// than the next pass of a training loop comes (the update, the next batch), a delay that would be
// most of a small step (Benchmarks/README.md, “Figures behind the code”: waking a thread). The
// spins yield the core between polls, so that on a busy machine a waiting thread does not keep
// the core that the work, or another process, needs; and they are bounded, so an idle network's
// threads sleep.
import Foundation
import Synchronization

/// The work of one pass: what share `share` computes.
protocol ShareWork: Sendable {
    /// Computes share `share` (0 on the caller's thread, `1…` on the threads).
    func run(share: Int)
}

/// `count` threads that, with the caller, take the shares `0…count` of every pass handed to
/// ``run(_:)``; they wait on a condition between passes and end with the object.
final class ShareThreads<Work: ShareWork>: @unchecked Sendable {
    /// What the caller and the threads share. A class apart from ``ShareThreads`` so that the
    /// threads do not keep it alive: its deinit stops them. `work` and `stopped` are written under
    /// `condition`'s lock before `generation` is bumped (releasing), and read after it is seen
    /// (acquiring); the sleepers wait on `condition`.
    private final class Handover: @unchecked Sendable {
        let condition = NSCondition()
        /// Bumped by every pass (and by the stop): a thread takes a pass whose generation it has not seen.
        let generation = Atomic<Int>(0)
        /// The pass's generation and its next share no one has taken: `generation << 16 | share`.
        /// A share is taken by exchanging it for the next, of the same generation only, so that a
        /// thread that wakes after its pass has ended takes nothing from the next.
        let next = Atomic<Int>(0)
        /// Shares not yet computed.
        let remaining = Atomic<Int>(0)
        /// The pass's work, valid from its start until every thread has counted itself done.
        var work: Work?
        var stopped = false
    }

    /// How long a side polls before it sleeps: longer than a training loop spends between passes
    /// (the update and the next batch; Benchmarks/README.md, “Figures behind the code”: waking a thread).
    private static var pollingTime: Duration { .milliseconds(2) }

    /// Polls until `done` holds or ``pollingTime`` has passed; whether it holds. Between rounds of
    /// polls the core is offered to any other thread that is ready to run (`sched_yield`, which
    /// returns at once when none is).
    @inline(__always)
    private static func poll(until done: () -> Bool) -> Bool {
        let clock = ContinuousClock(), deadline = clock.now.advanced(by: pollingTime)
        while true {
            for _ in 0..<256 where done() { return true }  // the clock read once per 256 polls
            if clock.now >= deadline { return done() }
            sched_yield()
        }
    }

    /// The next share of the pass of `generation` that no one has taken, taken; nil when every
    /// share of it is taken (or the pass is over).
    private static func take(_ handover: Handover, generation: Int, shares: Int) -> Int? {
        var state = handover.next.load(ordering: .relaxed)
        while state & ~0xFFFF == firstShare(of: generation), state & 0xFFFF < shares {
            let (exchanged, original) = handover.next.compareExchange(
                expected: state, desired: state + 1, ordering: .relaxed)
            if exchanged { return state & 0xFFFF }
            state = original
        }
        return nil
    }

    /// ``Handover/next`` at the start of the pass of `generation`: its share 0.
    private static func firstShare(of generation: Int) -> Int { (generation & (Int.max >> 16)) << 16 }

    /// Takes and computes shares of `work`, the pass of `generation`, until none is left.
    private static func takeShares(_ work: Work, _ handover: Handover, generation: Int, shares: Int) {
        while let share = take(handover, generation: generation, shares: shares) {
            work.run(share: share)
            if handover.remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
                // The caller may be asleep: it checks `remaining` under the lock before it waits.
                handover.condition.lock()
                handover.condition.broadcast()
                handover.condition.unlock()
            }
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
        for index in 1..<count + 1 {
            let handover = self.handover
            let thread = Thread { Self.serve(handover, shares: count + 1) }
            thread.name = "neuron share \(index)"
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

    /// A thread's life: wait for a pass (polling, then asleep), take and compute its shares while
    /// any is left, until stopped.
    private static func serve(_ handover: Handover, shares: Int) {
        var seen = 0
        while true {
            _ = poll { handover.generation.load(ordering: .acquiring) != seen }
            handover.condition.lock()
            while handover.generation.load(ordering: .acquiring) == seen { handover.condition.wait() }
            seen = handover.generation.load(ordering: .acquiring)
            let (work, stopped) = (handover.work, handover.stopped)
            handover.condition.unlock()
            if stopped { return }
            // A thread that wakes once its pass is over (every share taken and computed, the work
            // put away) has nothing to take.
            guard let work else { continue }
            takeShares(work, handover, generation: seen, shares: shares)
        }
    }

    /// Runs the shares `0…count` of `work` on the calling thread and the threads, at once, each
    /// share once, and returns when every one has returned.
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

    /// Hands `work` to the threads, takes shares of it as they do, then waits for the shares
    /// they took; the caller holds `passLock`.
    private func hand(_ work: Work) {
        handover.condition.lock()
        handover.work = work
        handover.remaining.store(count + 1, ordering: .relaxed)
        let generation = handover.generation.load(ordering: .relaxed) + 1
        handover.next.store(Self.firstShare(of: generation), ordering: .relaxed)
        handover.generation.store(generation, ordering: .releasing)
        handover.condition.broadcast()  // no system call when every thread is still polling
        handover.condition.unlock()
        Self.takeShares(work, handover, generation: generation, shares: count + 1)
        _ = Self.poll { handover.remaining.load(ordering: .acquiring) == 0 }
        handover.condition.lock()
        while handover.remaining.load(ordering: .acquiring) > 0 { handover.condition.wait() }
        handover.work = nil
        handover.condition.unlock()
    }
}
