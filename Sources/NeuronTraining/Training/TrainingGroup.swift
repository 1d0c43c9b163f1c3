// The processes that train one run together (data parallelism, `NeuronDistributed` over MPI), as the
// engine and the loop see them: a gradient reducer that also hands out rank 0's starting state and
// makes every process stop after the same step. One process alone has no group.
import NeuronCore

/// The processes that train one run together: each holds a replica of the engine and trains on
/// its share of every batch; rank 0 alone writes the run directory.
public protocol TrainingGroup: GradientReducer {
    /// Replaces `buffer` on every process with rank 0's (same length on every process).
    func broadcast<Scalar: TensorScalar>(_ buffer: inout [Scalar])
    /// Whether the group stops at this step boundary. `asked` (this process wants to stop) travels
    /// with the next step's sums; the answer is whether any process had asked by the last step's,
    /// so that every process answers alike at every boundary.
    func agreesToStop(_ asked: Bool) -> Bool
    /// Each process's mean seconds per step spent on its own share (filling, forward, backward,
    /// weighting), without the wait for the others, since the last call; rank order.
    func stepSeconds() -> [Double]
}

extension TrainingEngine {
    /// Alone, a request to stop is granted at once.
    public mutating func agreesToStop(_ asked: Bool) -> Bool { asked }

    /// Engines other than a network's train alone.
    public mutating func join(_ group: any TrainingGroup) throws {
        throw RunError.invalid("\(title) trains in one process; run it without mpirun (\(group.processCount) processes were started)")
    }
}
