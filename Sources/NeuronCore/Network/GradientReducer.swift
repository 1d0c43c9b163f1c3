// Data parallelism at its one seam in the engine: several processes each hold the same network,
// each computes the gradients of its own share of every batch, and a reducer sums the shares.
// The engine knows no transport; `NeuronDistributed` implements this over MPI.

/// Sums each step's numbers over the processes that train one network together, every process
/// holding a replica of the network and the optimizer.
///
/// Every process calls ``sum(gradients:totals:)`` once per step, in the same order, with buffers of
/// the same lengths; afterwards every process holds the same sums, so every replica takes the same update.
public protocol GradientReducer: AnyObject, Sendable {
    /// This process's index, in `0..<processCount`.
    var rank: Int { get }
    /// The processes training together.
    var processCount: Int { get }
    /// Replaces each element of `gradients` and of `totals` with its sum over all processes.
    func sum<Scalar: TensorScalar>(gradients: inout [Scalar], totals: inout [Double])
}

extension GradientReducer {
    /// This process's positions of a batch: the `rank`-th of `processCount` contiguous, disjoint
    /// pieces that together cover it, their sizes differing by at most one (empty when the batch is
    /// smaller than the group).
    ///
    ///     // batch 0..<5, 2 processes: rank 0 gets 0..<2, rank 1 gets 2..<5
    public func share(of batch: Range<Int>) -> Range<Int> {
        let n = batch.count
        return batch.lowerBound + n * rank / processCount..<batch.lowerBound + n * (rank + 1) / processCount
    }
}
