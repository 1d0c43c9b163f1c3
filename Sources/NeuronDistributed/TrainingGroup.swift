// The processes that train one run together (data parallelism), as the wrapper engine sees them:
// they sum each step's shares, hand out rank 0's starting state, and stop after the same step.
// `ProcessGroup` is the one over MPI; the engine itself knows none of this.
import NeuronCore

/// The processes that train one run together: each holds a replica of the engine and trains on
/// its share of every batch; rank 0 alone writes the run directory.
///
/// Every process calls ``sum(gradients:totals:)`` and ``broadcast(_:)`` in the same order, with
/// buffers of the same lengths; afterwards every process holds the same numbers, so every replica
/// takes the same update.
public protocol TrainingGroup: AnyObject, Sendable {
    /// This process's index, in `0..<processCount`.
    var rank: Int { get }
    /// The processes training together.
    var processCount: Int { get }
    /// Replaces each element of `gradients`, and the totals, with its sum over all processes.
    func sum<Scalar: TensorScalar>(gradients: inout [Scalar], totals: inout BatchTotals)
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

extension TrainingGroup {
    /// This process's positions of a batch: the `rank`-th of `processCount` contiguous, disjoint
    /// pieces that together cover it, their sizes differing by at most one (empty when the batch is
    /// smaller than the group).
    ///
    ///     // batch 0..<5, 2 processes: rank 0 gets 0..<2, rank 1 gets 2..<5
    public func share(of batch: Range<Int>) -> Range<Int> {
        let n = batch.count
        return batch.lowerBound + n * rank / processCount..<batch.lowerBound + n * (rank + 1) / processCount
    }

    /// One step of `training` as this process's part: the gradients of its share of the batch,
    /// summed with the other processes' shares, then the update every process takes alike.
    /// - Returns: the whole batch's loss before the update.
    @discardableResult
    public func step<Scalar, O>(_ training: inout MiniBatchTraining<Scalar, O>) -> Scalar {
        training.step(share: share(of:)) { sum(gradients: &$0, totals: &$1) }
    }
}
