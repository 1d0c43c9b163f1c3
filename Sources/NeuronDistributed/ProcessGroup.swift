// The processes `mpirun` started, training one run: one allreduce of the flat gradient buffer per
// step, and with it one small allreduce of the totals — the weighted loss, the correct count, the
// votes to stop and each process's step time — so that every process knows the same things after
// every step and stops after the same one.
import Foundation
import NeuronCore
import Synchronization

/// The processes that train one run together over MPI (`mpirun -np N neuron train …`).
public final class ProcessGroup: TrainingGroup, @unchecked Sendable {
    // @unchecked: the sums and votes are touched by one thread at a time (the CLI's, then the
    // training loop's, which runs after it); the step times, also read by snapshots, are under a lock.

    public let rank: Int
    public let processCount: Int
    /// The totals of one step, then a vote to stop, then each process's seconds of computing.
    private var tail: [Double]
    private var asked = false
    /// Whether the processes have agreed to stop (every one stops at the same boundary).
    public private(set) var agreedToStop = false
    /// Whether the last step's summed loss was not finite: every process then stops at that step.
    public private(set) var lastLossDiverged = false
    /// When this process's last sum returned: its next step's computing starts there.
    private var lastSum: ContinuousClock.Instant?
    private let times: Mutex<(seconds: [Double], steps: Int)>

    /// The processes started with this one, MPI initialised; nil when this process was started
    /// alone (not by `mpirun`, or with one process).
    /// - Throws: ``DistributedError/notBuilt`` when `mpirun` started several processes of a
    ///   neuron built without MPI, ``DistributedError/failed(_:_:)`` when MPI cannot start.
    public static func start(environment: [String: String] = ProcessInfo.processInfo.environment) throws(DistributedError) -> ProcessGroup? {
        // Open MPI's launcher says how many it started; another MPI's (Hydra's PMI_SIZE) too.
        let launched = Int(environment["OMPI_COMM_WORLD_SIZE"] ?? environment["PMI_SIZE"] ?? "1") ?? 1
        guard launched > 1 else { return nil }
        let (rank, size) = try MPI.initialize()
        return ProcessGroup(rank: rank, processCount: size)
    }

    private init(rank: Int, processCount: Int) {
        (self.rank, self.processCount) = (rank, processCount)
        tail = Array(repeating: 0, count: 3 + processCount)
        times = Mutex((Array(repeating: 0, count: processCount), 0))
    }

    /// Checks that every process built the same run, by a fingerprint of what decides it.
    /// The BLAS threads of one process under the launcher: its `OPENBLAS_NUM_THREADS` (one per rank
    /// on one machine) wins over the config's count, which is one process's. Nil when it is not set.
    public static func blasThreads(environment: [String: String] = ProcessInfo.processInfo.environment) -> Int? {
        environment["OPENBLAS_NUM_THREADS"].flatMap { Int($0) }.flatMap { $0 >= 1 ? $0 : nil }
    }

    /// - Throws: ``DistributedError/differentRuns`` on every process when any fingerprint differs.
    public func agree(on fingerprint: UInt64) throws(DistributedError) {
        let range = try MPI.range(fingerprint)
        guard range.lowerBound == range.upperBound else { throw .differentRuns }
    }

    public func sum<Scalar: TensorScalar>(gradients: inout [Scalar], totals: inout BatchTotals) {
        let computed = lastSum.map { (ContinuousClock.now - $0) } ?? .zero
        for i in tail.indices { tail[i] = 0 }
        (tail[0], tail[1]) = (totals.loss, Double(totals.correct))
        tail[2] = asked ? 1 : 0
        tail[3 + rank] = Double(computed.components.seconds) + Double(computed.components.attoseconds) * 1e-18
        do {
            try gradients.withUnsafeMutableBufferPointer { g throws(DistributedError) in try MPI.sum(g) }
            try tail.withUnsafeMutableBufferPointer { t throws(DistributedError) in try MPI.sum(t) }
        } catch {
            // Another process is gone (mpirun ends this one too, but may take a while): say so, and end the run.
            FileHandle.standardError.write(Data("neuron: rank \(rank): \(error); ending the run\n".utf8))
            MPI.abort(1)
        }
        (totals.loss, totals.correct) = (tail[0], Int(tail[1]))
        agreedToStop = agreedToStop || tail[2] > 0
        lastLossDiverged = !tail[0].isFinite
        times.withLock { times in
            for r in 0..<processCount { times.seconds[r] += tail[3 + r] }
            times.steps += 1
        }
        lastSum = .now
    }

    public func broadcast<Scalar: TensorScalar>(_ buffer: inout [Scalar]) {
        do {
            try buffer.withUnsafeMutableBufferPointer { b throws(DistributedError) in try MPI.broadcast(b) }
        } catch {
            FileHandle.standardError.write(Data("neuron: rank \(rank): \(error); ending the run\n".utf8))
            MPI.abort(1)
        }
    }

    public func agreesToStop(_ asked: Bool) -> Bool {
        self.asked = self.asked || asked
        return agreedToStop
    }

    public func stepSeconds() -> [Double] {
        times.withLock { times in
            defer { (times.seconds, times.steps) = (Array(repeating: 0, count: processCount), 0) }
            return times.steps == 0 ? times.seconds : times.seconds.map { $0 / Double(times.steps) }
        }
    }

    /// Ends this process's part: `MPI_Finalize` when every process left training at the same step
    /// (finished, agreed to stop, or diverged together), else `MPI_Abort` with `status`, which
    /// ends the others where they wait for this one.
    public func end(status: Int32, together: Bool) -> Never {
        if together {
            MPI.finalize()
            exit(status)
        }
        MPI.abort(status)
    }
}
