// Learning-rate schedules: a multiplier on the optimizer's base rate as a function of the step.
// A schedule is plain data (Codable), so a checkpoint can record it beside the optimizer's state.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A learning-rate multiplier as a function of the step (0-based): the optimizer's update at
/// `step` uses `learningRate * schedule.factor(at: step)`.
public enum LearningRateSchedule: Sendable, Equatable, Codable, CustomStringConvertible {
    /// Always 1.
    case constant
    /// Multiplied by `factor` every `every` steps: `factor^⌊step / every⌋` (PyTorch's `StepLR`).
    case step(every: Int, factor: Double)
    /// From 1 down to `minimumFactor` along half a cosine over `totalSteps`, then `minimumFactor`
    /// from `totalSteps` on (PyTorch's `CosineAnnealingLR` for one half period, without restarts).
    case cosine(totalSteps: Int, minimumFactor: Double = 0)

    /// The multiplier at `step` (0-based, ≥ 0) of a ``validated()`` schedule.
    ///
    /// Cosine: `min + (1 - min)·(1 + cos(π·s/T))/2` with `s = min(step, T)`, so 1 at step 0,
    /// `(1 + min)/2` at `T/2`, and `min` at `T` and after.
    public func factor(at step: Int) -> Double {
        precondition(step >= 0, "a schedule's step is 0 or more, got \(step)")
        switch self {
        case .constant:
            return 1
        case let .step(every, factor):
            precondition(every >= 1, "step schedule with every = \(every); validate the schedule first")
            return pow(factor, Double(step / every))
        case let .cosine(totalSteps, minimumFactor):
            precondition(totalSteps >= 1, "cosine schedule with totalSteps = \(totalSteps); validate the schedule first")
            let progress = Double(min(step, totalSteps)) / Double(totalSteps)
            return minimumFactor + (1 - minimumFactor) * (1 + cos(Double.pi * progress)) / 2
        }
    }

    /// This schedule, once its parameters are checked; optimizers call it at their door.
    /// - Throws: ``OptimizerError/invalidHyperparameter(name:value:allowed:)`` unless `every` ≥ 1
    ///   and `factor` is in (0, 1] (step), or `totalSteps` ≥ 1 and `minimumFactor` is in [0, 1] (cosine).
    public func validated() throws(OptimizerError) -> LearningRateSchedule {
        switch self {
        case .constant:
            break
        case let .step(every, factor):
            guard every >= 1 else {
                throw .invalidHyperparameter(name: "step schedule's every", value: "\(every)", allowed: "1 or more")
            }
            // A factor above 1 would grow the rate without bound; 0 would stop learning at the first drop.
            guard factor > 0, factor <= 1 else {  // NaN fails both comparisons
                throw .invalidHyperparameter(name: "step schedule's factor", value: "\(factor)", allowed: "in (0, 1]")
            }
        case let .cosine(totalSteps, minimumFactor):
            guard totalSteps >= 1 else {
                throw .invalidHyperparameter(name: "cosine schedule's totalSteps", value: "\(totalSteps)", allowed: "1 or more")
            }
            guard minimumFactor >= 0, minimumFactor <= 1 else {
                throw .invalidHyperparameter(name: "cosine schedule's minimumFactor", value: "\(minimumFactor)", allowed: "in [0, 1]")
            }
        }
        return self
    }

    /// `constant`, `step(every: 30, factor: 0.1)`, `cosine(totalSteps: 1000, minimumFactor: 0.0)`.
    public var description: String {
        switch self {
        case .constant: return "constant"
        case let .step(every, factor): return "step(every: \(every), factor: \(factor))"
        case let .cosine(totalSteps, minimumFactor): return "cosine(totalSteps: \(totalSteps), minimumFactor: \(minimumFactor))"
        }
    }
}
