import Foundation
import Synchronization
import Testing

@testable import NeuronCore

@Suite("Gradient reducer: a batch shared by several replicas")
struct GradientReducerTests {
    @Test("Shares are contiguous, disjoint, cover the batch and differ in size by at most one")
    func shares() {
        // Worked by hand: 5 rows on 2 ranks give 2 and 3; 2 rows on 3 ranks leave rank 0 none.
        #expect(Replica(rank: 0, of: 2).share(of: 0..<5) == 0..<2)
        #expect(Replica(rank: 1, of: 2).share(of: 0..<5) == 2..<5)
        #expect((0..<3).map { Replica(rank: $0, of: 3).share(of: 10..<12) } == [10..<10, 10..<11, 11..<12])
        for count in 1...9 {
            for ranks in 1...4 {
                let shares = (0..<ranks).map { Replica(rank: $0, of: ranks).share(of: 100..<100 + count) }
                #expect(shares.first?.lowerBound == 100 && shares.last?.upperBound == 100 + count)
                #expect(zip(shares, shares.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound })
                #expect(shares.map(\.count).max()! - shares.map(\.count).min()! <= 1)
            }
        }
    }

    @Test(
        "3 replicas on threads reach one process's weights within 1e-12 (Double), empty shares included",
        arguments: [4, 2])
    func replicasMatchOneProcess(batchSize: Int) throws {
        // 7 samples: batches of 4 give shares (1, 1, 2) and (1, 1, 1); batches of 2 give (0, 1, 1)
        // and a last batch of 1, (0, 0, 1).
        var generator = SeededGenerator(seed: 3)
        let data: Dataset<Double> = try Synthetic.sine(count: 7, generator: &generator)
        let network = try Network<Double>(features: 1, layers: [(8, .tanh), (1, .identity)], loss: .halfSquaredError, seed: 5)
        let optimizer = try SGD<Double>(learningRate: 0.1, momentum: 0.9)
        var alone = try MiniBatchTraining(network: network, optimizer: optimizer, dataset: data, batchSize: batchSize, seed: 9)
        let steps = 20 * alone.batchesPerEpoch
        var losses: [Double] = []
        for _ in 0..<steps { losses.append(alone.step()) }

        let expected = losses
        let group = SharedMemory(processCount: 3)
        let replicas = Mutex<[Int: MiniBatchTraining<Double, SGD<Double>>]>([:])
        let threads = (0..<3).map { rank in
            Thread {
                var training = try! MiniBatchTraining(network: network, optimizer: optimizer, dataset: data, batchSize: batchSize, seed: 9)
                training.reducer = Replica(rank: rank, of: 3, group: group)
                var replicaLosses: [Double] = []
                for _ in 0..<steps { replicaLosses.append(training.step()) }
                // The summed loss of each step is the whole batch's, within rounding.
                for (a, b) in zip(expected, replicaLosses) { #expect(abs(a - b) <= 1e-12 * abs(a)) }
                replicas.withLock { $0[rank] = training }
                group.done.add(1, ordering: .relaxed)
            }
        }
        for thread in threads { thread.start() }
        while group.done.load(ordering: .relaxed) < 3 { Thread.sleep(forTimeInterval: 0.001) }

        let scale = alone.network.parameters.map(abs).max()!
        for (rank, replica) in replicas.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            let difference = zip(alone.network.parameters, replica.network.parameters).map { abs($0 - $1) }.max()!
            #expect(difference <= 1e-12 * scale, "rank \(rank): \(difference)")
            // Every replica takes the same update: the same bits on every rank.
            #expect(replica.network.parameters == replicas.withLock { $0[0]! }.network.parameters)
            #expect(replica.epochProgress.samples == alone.epochProgress.samples)
            #expect(replica.stepsTaken == steps)
        }
    }
}

/// A replica's place among `processCount` threads summing through ``SharedMemory``: the reducer
/// MPI implements, without MPI.
private final class Replica: GradientReducer {
    let rank: Int, processCount: Int
    let group: SharedMemory?

    init(rank: Int, of processCount: Int, group: SharedMemory? = nil) {
        (self.rank, self.processCount, self.group) = (rank, processCount, group)
    }

    func sum<Scalar: TensorScalar>(gradients: inout [Scalar], totals: inout [Double]) {
        let all = group!.exchange(rank, gradients.map(Double.init) + totals)
        // Summed in rank order, the same order on every rank.
        let sums = all[0].indices.map { i in all.dropFirst().reduce(all[0][i]) { $0 + $1[i] } }
        for i in gradients.indices { gradients[i] = Scalar(sums[i]) }
        for i in totals.indices { totals[i] = sums[gradients.count + i] }
    }
}

/// Every thread's contribution to a step, handed to all once all have given theirs.
private final class SharedMemory: Sendable {
    let processCount: Int
    let done = Atomic<Int>(0)
    private let state: Mutex<(contributions: [[Double]], arrived: Int, round: Int)>

    init(processCount: Int) {
        self.processCount = processCount
        state = Mutex((Array(repeating: [], count: processCount), 0, 0))
    }

    /// Waits until every thread has given its numbers for round n, returns them all (rank order),
    /// then waits until every thread has read them before the next round may write.
    func exchange(_ rank: Int, _ numbers: [Double]) -> [[Double]] {
        // A generation barrier: the last to arrive opens the next generation; the others wait for it.
        func barrier() {
            let waiting = state.withLock { state -> Int? in
                state.arrived += 1
                guard state.arrived == processCount else { return state.round }
                (state.arrived, state.round) = (0, state.round + 1)
                return nil
            }
            guard let waiting else { return }
            while state.withLock({ $0.round }) == waiting { Thread.sleep(forTimeInterval: 0.0001) }
        }
        state.withLock { $0.contributions[rank] = numbers }
        barrier()
        let all = state.withLock { $0.contributions }
        barrier()
        return all
    }
}
