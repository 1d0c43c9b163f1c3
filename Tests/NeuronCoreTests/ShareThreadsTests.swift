import Foundation
import Synchronization
import Testing

@testable import NeuronCore

// Shares taken, not handed out: every share of every pass computed exactly once whoever takes it,
// the caller taking what the threads have not begun, and a split batch the same bits whether or not
// other threads compete for the cores.

/// Counts, per share, how often it ran, and spins a share-dependent while, so that the takers' order varies.
private struct CountingWork: ShareWork, @unchecked Sendable {
    let counts: UnsafeMutablePointer<Int>
    let pass: Int
    func run(share: Int) {
        counts[share] += 1  // each share is one taker's: no two write one count
        var x = UInt64(truncatingIfNeeded: pass &* 31 &+ share)
        for _ in 0..<((pass + share) % 7) * 200 { x = x &* 6_364_136_223_846_793_005 &+ 1 }
        if x == 42 { counts[share] += 0 }  // keeps the spin
    }
}

/// Threads that spin until told to stop: a competing load inside the test process.
private final class Competitors: Sendable {
    private let stop = Atomic<Bool>(false)
    init(_ count: Int) {
        for _ in 0..<count {
            Thread { [self] in
                var x = 0
                while !stop.load(ordering: .relaxed) { x &+= 1 }
                _ = x
            }.start()
        }
    }
    func end() { stop.store(true, ordering: .relaxed) }
}

@Suite("ShareThreads: shares taken, not handed out")
struct ShareThreadsTests {
    @Test("Every share of every pass runs exactly once, with and without other threads competing for the cores", arguments: [0, 3])
    func eachShareOnce(competitors: Int) {
        let load = Competitors(competitors)
        defer { load.end() }
        let threads = ShareThreads<CountingWork>(count: 3)
        let passes = 2_000
        let counts = UnsafeMutablePointer<Int>.allocate(capacity: passes * 4)
        counts.initialize(repeating: 0, count: passes * 4)
        defer { counts.deallocate() }
        for pass in 0..<passes { threads.run(CountingWork(counts: counts + pass * 4, pass: pass)) }
        let wrong = (0..<passes * 4).filter { counts[$0] != 1 }
        #expect(wrong.isEmpty, "shares run other than once: \(wrong.prefix(5).map { ($0 / 4, $0 % 4, counts[$0]) })")
    }

    @Test("A split batch's loss and gradients are the same bits under a competing load as on an idle machine")
    func sameBitsUnderLoad() throws {
        let (time, features, vocabulary) = (6, 8, 7)
        var g = SeededGenerator(seed: 5)
        let (x, t) = try BatchThreadsTests.tokens(rows: 9, time: time, vocabulary: vocabulary, using: &g)
        func run() throws -> (losses: [Double], gradients: [Double]) {
            var network = try BatchThreadsTests.transformer(time: time, features: features, vocabulary: vocabulary)
            network.batchThreads = 3
            var losses: [Double] = []
            // 40 steps of plain gradient descent, so that each pass reads the parameters the one before left.
            for _ in 0..<40 {
                losses.append(try network.lossAndGradients(x, targets: t))
                for i in network.parameters.indices { network.parameters[i] -= 0.05 * network.gradients[i] }
            }
            return (losses, network.gradients)
        }
        let idle = try run()
        let load = Competitors(3)
        let loaded = try run()
        load.end()
        #expect(idle.losses.map(\.bitPattern) == loaded.losses.map(\.bitPattern))
        #expect(idle.gradients.map(\.bitPattern) == loaded.gradients.map(\.bitPattern))
    }
}
