// Data parallelism as a wrapper around an engine: the engine takes a step on a share of the batch
// and hands its gradients to a closure before the update; this wrapper makes that closure the
// group's sum, starts every process from rank 0's state, and reports the group's step times.
// The engine and the loop know no process: the loop learns of the group's agreement to stop
// through the run (`Run.agreesToStop`), set by `join`.
import NeuronCore
import NeuronTraining

/// A network's engine trained as one of a group's processes: each step computes this process's
/// share of the batch, the group sums the shares, and every process applies the same update.
public struct DistributedEngine<Scalar: TensorScalar, O: Optimizer>: TrainingEngine where O.Scalar == Scalar {
    /// The engine each process holds a replica of.
    public private(set) var base: NetworkTrainingEngine<Scalar, O>
    /// The processes training together.
    public let group: any TrainingGroup

    /// `base` as one of `group`'s processes, from rank 0's state: every process built its replica
    /// from the same config, data and checkpoint, and rank 0's parameters, state and optimizer
    /// buffers replace the others'.
    /// - Throws: `OptimizerError` when an optimizer buffer's length differs between processes.
    public init(_ base: NetworkTrainingEngine<Scalar, O>, group: any TrainingGroup) throws {
        var base = base
        try base.replaceState { group.broadcast(&$0) }
        (self.base, self.group) = (base, group)
    }

    public var title: String { base.title }
    public var seed: UInt64? { base.seed }
    public var samplesPerStep: Int { base.samplesPerStep }
    public var stepsTaken: Int { base.stepsTaken }
    public var totalSteps: Int { base.totalSteps }
    public var epoch: Int { base.epoch }
    public var totalEpochs: Int { base.totalEpochs }
    public var learningRate: Double { base.learningRate }
    public var records: [EpochRecord] { base.records }

    public mutating func step() -> Double {
        let group = group
        return base.step(share: group.share(of:)) { group.sum(gradients: &$0, totals: &$1) }
    }

    public func snapshot() -> TrainingSnapshot {
        var snapshot = base.snapshot()
        snapshot.rankStepSeconds = group.stepSeconds()
        return snapshot
    }

    public func resumePoint() -> ResumePoint<Scalar> { base.resumePoint() }
    public func divergenceLocation() -> String { base.divergenceLocation() }
    public func checkGradients() throws -> GradientCheckReport { try base.checkGradients() }
    public func gradientCheck(_ check: GradientCheck, batchSize: Int) throws -> GradientCheckReport {
        try base.gradientCheck(check, batchSize: batchSize)
    }
    public func finalEvaluation() throws -> (name: String, evaluation: Evaluation)? { try base.finalEvaluation() }
    public func validationEvaluation() throws -> Evaluation? { try base.validationEvaluation() }
}

/// An engine that a group can train: a network's.
private protocol Joinable: TrainingEngine {
    func joined(_ group: any TrainingGroup) throws -> any TrainingEngine
}

extension NetworkTrainingEngine: Joinable {
    fileprivate func joined(_ group: any TrainingGroup) throws -> any TrainingEngine { try DistributedEngine(self, group: group) }
}

extension TrainingGroup {
    /// Makes `run` train from here on as one of this group's processes: its engine wrapped in a
    /// ``DistributedEngine`` (from rank 0's state), and its stops agreed by the group.
    /// - Throws: `RunError` for an engine that trains alone; `OptimizerError` for a state that
    ///   differs between processes.
    public func join(_ run: inout Run) throws {
        guard let engine = run.engine as? any Joinable else {
            throw RunError.invalid("\(run.engine.title) trains in one process; run it without mpirun (\(processCount) processes were started)")
        }
        run.engine = try engine.joined(self)
        run.agreesToStop = { [self] asked in agreesToStop(asked) }
    }
}
