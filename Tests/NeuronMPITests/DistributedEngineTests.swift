// The wrapper engine without MPI: replicas on threads of this process, summing through shared
// memory, against one engine on whole batches. Runs with or without the trait MPI.
import Foundation
import NeuronCore
import NeuronDistributed
import NeuronTraining
import Synchronization
import Testing

@Suite("A network's engine trained by a group")
struct DistributedEngineTests {
    @Test("Shares are contiguous, disjoint, cover the batch and differ in size by at most one")
    func shares() {
        // Worked by hand: 5 rows on 2 ranks give 2 and 3; 2 rows on 3 ranks leave rank 0 none.
        #expect(ThreadGroup(rank: 0, of: 2).share(of: 0..<5) == 0..<2)
        #expect(ThreadGroup(rank: 1, of: 2).share(of: 0..<5) == 2..<5)
        #expect((0..<3).map { ThreadGroup(rank: $0, of: 3).share(of: 10..<12) } == [10..<10, 10..<11, 11..<12])
        for count in 1...9 {
            for ranks in 1...4 {
                let shares = (0..<ranks).map { ThreadGroup(rank: $0, of: ranks).share(of: 100..<100 + count) }
                #expect(shares.first?.lowerBound == 100 && shares.last?.upperBound == 100 + count)
                #expect(zip(shares, shares.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound })
                #expect(shares.map(\.count).max()! - shares.map(\.count).min()! <= 1)
            }
        }
    }

    @Test(
        "3 replicas on threads, started from rank 0's weights, reach one engine's within 1e-12 (Double), empty shares included",
        arguments: [4, 2])
    func replicasMatchOneEngine(batchSize: Int) throws {
        // 7 samples: batches of 4 give shares (1, 1, 2) and (1, 1, 1); batches of 2 give (0, 1, 1)
        // and a last batch of 1, (0, 0, 1).
        var generator = SeededGenerator(seed: 3)
        let data: Dataset<Double> = try Synthetic.sine(count: 7, generator: &generator)
        @Sendable func engine(seed: UInt64) throws -> NetworkTrainingEngine<Double, SGD<Double>> {
            let network = try Network<Double>(features: 1, layers: [(8, .tanh), (1, .identity)], loss: .halfSquaredError, seed: seed)
            return try NetworkTrainingEngine(
                network: network, optimizer: try SGD<Double>(learningRate: 0.1, momentum: 0.9), dataset: data, batchSize: batchSize,
                epochs: 20, seed: 9)
        }
        var alone = try engine(seed: 5)
        var losses: [Double] = []
        while !alone.isFinished { losses.append(alone.step()) }

        let expected = losses
        let memory = SharedMemory(processCount: 3)
        let replicas = Mutex<[Int: DistributedEngine<Double, SGD<Double>>]>([:])
        let threads = (0..<3).map { rank in
            Thread {
                // The other ranks start from other weights: joining hands them rank 0's.
                var replica = try! DistributedEngine(
                    try! engine(seed: rank == 0 ? 5 : 50 + UInt64(rank)), group: ThreadGroup(rank: rank, of: 3, memory: memory))
                var replicaLosses: [Double] = []
                while !replica.isFinished { replicaLosses.append(replica.step()) }
                // The summed loss of each step is the whole batch's, within rounding.
                for (a, b) in zip(expected, replicaLosses) { #expect(abs(a - b) <= 1e-12 * abs(a)) }
                #expect(replicaLosses.count == expected.count)
                replicas.withLock { $0[rank] = replica }
                memory.done.add(1, ordering: .relaxed)
            }
        }
        for thread in threads { thread.start() }
        while memory.done.load(ordering: .relaxed) < 3 { Thread.sleep(forTimeInterval: 0.001) }

        let parameters = alone.network.parameters, scale = parameters.map(abs).max()!
        let all = replicas.withLock { $0 }
        for (rank, replica) in all.sorted(by: { $0.key < $1.key }) {
            let difference = zip(parameters, replica.base.network.parameters).map { abs($0 - $1) }.max()!
            #expect(difference <= 1e-12 * scale, "rank \(rank): \(difference)")
            // Every replica takes the same update: the same bits on every rank.
            #expect(replica.base.network.parameters == all[0]!.base.network.parameters)
            #expect(replica.records.map(\.epoch) == alone.records.map(\.epoch))
            #expect(replica.stepsTaken == alone.stepsTaken)
        }
    }

    @Test("A stop asked of one replica travels with the next step's sums: every replica stops after that step")
    func stopAgreed() throws {
        let memory = SharedMemory(processCount: 2)
        let stoppedAt = Mutex<[Int: Int]>([:])
        let threads = (0..<2).map { rank in
            Thread {
                var run = try! RunBuilder.build(try! ConfigLoader.load(xorConfig))
                let group = ThreadGroup(rank: rank, of: 2, memory: memory)
                try! group.join(&run)
                var engine = run.engine
                // Rank 1 asks at the boundary after 3 steps; the vote rides on the 4th step's sums.
                while !engine.isFinished, !run.agreesToStop!(rank == 1 && engine.stepsTaken >= 3) { _ = engine.step() }
                stoppedAt.withLock { $0[rank] = engine.stepsTaken }
                memory.done.add(1, ordering: .relaxed)
            }
        }
        for thread in threads { thread.start() }
        while memory.done.load(ordering: .relaxed) < 2 { Thread.sleep(forTimeInterval: 0.001) }
        #expect(stoppedAt.withLock { $0 } == [0: 4, 1: 4])
    }
}

/// Data/xor.yaml: XOR in Double, a batch of the 4 rows.
private let xorConfig = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Data/xor.yaml").path

/// A replica's place among `processCount` threads summing through ``SharedMemory``: the group MPI
/// implements, without MPI.
private final class ThreadGroup: TrainingGroup {
    let rank: Int, processCount: Int
    let memory: SharedMemory?
    private let votes = Mutex((asked: false, agreed: false))

    init(rank: Int, of processCount: Int, memory: SharedMemory? = nil) {
        (self.rank, self.processCount, self.memory) = (rank, processCount, memory)
    }

    func sum<Scalar: TensorScalar>(gradients: inout [Scalar], totals: inout BatchTotals) {
        let vote = votes.withLock { $0.asked } ? 1.0 : 0
        let all = memory!.exchange(rank, gradients.map(Double.init) + [totals.loss, Double(totals.correct), vote])
        // Summed in rank order, the same order on every rank.
        let sums = all[0].indices.map { i in all.dropFirst().reduce(all[0][i]) { $0 + $1[i] } }
        for i in gradients.indices { gradients[i] = Scalar(sums[i]) }
        (totals.loss, totals.correct) = (sums[gradients.count], Int(sums[gradients.count + 1]))
        if sums[gradients.count + 2] > 0 { votes.withLock { $0.agreed = true } }
    }

    func broadcast<Scalar: TensorScalar>(_ buffer: inout [Scalar]) {
        buffer = memory!.exchange(rank, buffer.map(Double.init))[0].map { Scalar($0) }
    }

    func agreesToStop(_ asked: Bool) -> Bool {
        votes.withLock { votes in
            votes.asked = votes.asked || asked
            return votes.agreed
        }
    }

    func stepSeconds() -> [Double] { Array(repeating: 0, count: processCount) }
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
