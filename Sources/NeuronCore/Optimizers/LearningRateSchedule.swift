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
    /// Over a run of `totalSteps` steps the floor is where the rate arrives after the last step;
    /// the last step, `totalSteps − 1`, runs just above it, so that a floor of 0 never spends a
    /// step at rate 0 (Docs/Config.md, "The cosine, exactly").
    case cosine(totalSteps: Int, minimumFactor: Double = 0)
    /// A linear warmup over the first `steps` steps, then `then` counted from the warmup's end:
    /// `(step + 1)/(steps + 1)` for `step < steps` (nanoGPT's `lr·(it + 1)/(warmup_iters + 1)`), so
    /// that the first step already moves and the rate reaches the full `1` at step `steps`, where
    /// `then` starts from its own step 0. Warmup then cosine is nanoGPT's `get_lr`:
    /// `.warmup(steps: w, then: .cosine(totalSteps: T - w))` over a run of `T` steps.
    indirect case warmup(steps: Int, then: LearningRateSchedule)

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
        case let .warmup(steps, then):
            precondition(steps >= 1, "warmup over \(steps) steps; validate the schedule first")
            return step < steps ? Double(step + 1) / Double(steps + 1) : then.factor(at: step - steps)
        }
    }

    /// This schedule, once its parameters are checked; optimizers call it at their door.
    /// - Throws: ``OptimizerError/invalidHyperparameter(name:value:allowed:)`` unless `every` ≥ 1
    ///   and `factor` is in (0, 1] (step), `totalSteps` ≥ 1 and `minimumFactor` is in [0, 1] (cosine),
    ///   or `steps` ≥ 1 and the schedule after it valid (warmup).
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
        case let .warmup(steps, then):
            guard steps >= 1 else {
                throw .invalidHyperparameter(name: "warmup's steps", value: "\(steps)", allowed: "1 or more")
            }
            _ = try then.validated()
        }
        return self
    }

    /// `constant`, `step(every: 30, factor: 0.1)`, `cosine(totalSteps: 1000, minimumFactor: 0.0)`,
    /// `warmup(steps: 100, then: cosine(totalSteps: 900, minimumFactor: 0.1))`.
    public var description: String {
        switch self {
        case .constant: return "constant"
        case let .step(every, factor): return "step(every: \(every), factor: \(factor))"
        case let .cosine(totalSteps, minimumFactor): return "cosine(totalSteps: \(totalSteps), minimumFactor: \(minimumFactor))"
        case let .warmup(steps, then): return "warmup(steps: \(steps), then: \(then))"
        }
    }
}
