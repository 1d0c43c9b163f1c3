// Adam (Kingma & Ba) and AdamW (Loshchilov & Hutter): PyTorch's `torch.optim.Adam` and
// `torch.optim.AdamW`, one flat loop over the parameter buffer.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Adam: a step per parameter from running averages of the gradient and its square.
///
/// Each update follows PyTorch's documented `torch.optim.Adam` (and `torch.optim.AdamW` when
/// `decoupled`), for every entry `p` with gradient `g`, step `t = step + 1` (so t starts at 1),
/// `lr = learningRate · schedule.factor(at: step)` and weight decay `λ`:
///
/// with λ taken as 0 outside the ``decay`` scope's parameters (PyTorch's parameter groups):
///
///     if λ ≠ 0:  g ← g + λ·p          (Adam: L2 added to the gradient)
///            or  p ← p·(1 - lr·λ)     (AdamW, decoupled: the weights shrink, scaled by lr)
///     m ← β1·m + (1 - β1)·g
///     v ← β2·v + (1 - β2)·g²
///     m̂ = m / (1 - β1^t),  v̂ = v / (1 - β2^t)      // bias correction: m and v start at 0
///     p ← p - lr·m̂ / (√v̂ + ε)
///
/// The loop evaluates it as PyTorch's own code does, with the corrections folded into per-step
/// constants computed in Double (as PyTorch computes them in Python floats):
///
///     p ← p - (lr / (1 - β1^t))·m / (√v · (1 / √(1 - β2^t)) + ε)
///
/// the same value up to rounding (a few ulps), at one square root and one division per parameter
/// instead of three divisions. On the first step m̂ = g and v̂ = g², so every parameter moves by
/// about `lr` against the sign of its gradient, whatever the gradient's scale.
public struct Adam<Scalar: TensorScalar>: Optimizer, Equatable {
    /// The base learning rate; the schedule scales it per step.
    public var learningRate: Scalar
    /// The decay of the gradient's running average.
    public let beta1: Scalar
    /// The decay of the squared gradient's running average.
    public let beta2: Scalar
    /// Added to √v̂ so that a parameter whose gradient has always been 0 takes no step, not 0/0.
    public let epsilon: Scalar
    /// The weight-decay coefficient λ.
    public let weightDecay: Scalar
    /// Whether weight decay shrinks the weights directly (AdamW) instead of joining the gradient.
    public let decoupled: Bool
    /// The parameters weight decay applies to.
    public let decay: WeightDecayScope
    /// How the learning rate changes with the step.
    public let schedule: LearningRateSchedule
    /// Steps taken so far; the bias correction uses `t = step + 1`.
    public private(set) var step: Int = 0
    /// The gradient's running average, one entry per parameter (empty before the first update).
    private(set) var m: [Scalar] = []
    /// The squared gradient's running average, one entry per parameter (empty before the first update).
    private(set) var v: [Scalar] = []

    /// An Adam optimizer with PyTorch's defaults; hyperparameters are checked here, so updates need not.
    /// - Parameters:
    ///   - learningRate: the step size; finite and > 0.
    ///   - beta1: the gradient average's decay, in [0, 1).
    ///   - beta2: the squared gradient average's decay, in [0, 1).
    ///   - epsilon: the denominator's floor; finite and > 0 (PyTorch allows 0, which turns a
    ///     parameter that never had a gradient into NaN).
    ///   - weightDecay: λ, finite and ≥ 0.
    ///   - decoupled: `true` for AdamW (the weights shrink by `lr·λ·p`); `false` for Adam's L2 (`g + λ·p`).
    ///   - decay: the parameters weight decay applies to; every one by default.
    ///   - schedule: the learning-rate multiplier per step.
    /// - Throws: ``OptimizerError/invalidHyperparameter(name:value:allowed:)`` naming the first
    ///   hyperparameter out of range and what is allowed.
    public init(
        learningRate: Scalar = 1e-3, beta1: Scalar = 0.9, beta2: Scalar = 0.999, epsilon: Scalar = 1e-8,
        weightDecay: Scalar = 0, decoupled: Bool = false, decay: WeightDecayScope = .all, schedule: LearningRateSchedule = .constant
    ) throws(OptimizerError) {
        try checkPositive(learningRate, name: "learning rate")
        try checkDecayRate(beta1, name: "beta1")
        try checkDecayRate(beta2, name: "beta2")
        try checkPositive(epsilon, name: "epsilon")
        try checkNonNegative(weightDecay, name: "weight decay")
        self.learningRate = learningRate
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.weightDecay = weightDecay
        self.decoupled = decoupled
        self.decay = try decay.validated()
        self.schedule = try schedule.validated()
    }

    /// One Adam step over the flat buffers (the formula in the type's documentation).
    ///
    ///     // parameters: (n)  gradients: (n)  m: (n)  v: (n)
    public mutating func update(parameters: inout [Scalar], gradients: [Scalar]) {
        precondition(
            parameters.count == gradients.count,
            "\(parameters.count) parameters but \(gradients.count) gradients")
        if step == 0 {
            // Sized once, on first sight; both averages start at 0 (hence the bias correction).
            m = Array(repeating: 0, count: parameters.count)
            v = Array(repeating: 0, count: parameters.count)
        }
        precondition(
            m.count == parameters.count && v.count == parameters.count,
            "Adam state holds \(m.count) values but the parameters \(parameters.count): one optimizer serves one network")
        // The per-step constants, in Double as PyTorch computes them in Python floats.
        let t = Double(step + 1)
        let lr = scheduledLearningRate
        let decayed = AdamStep<Scalar>(
            stepSize: Scalar(Double(lr) / (1 - pow(Double(beta1), t))),
            inverseRootCorrection2: Scalar(1 / (1 - pow(Double(beta2), t)).squareRoot()),
            beta1: beta1, beta2: beta2, epsilon: epsilon,
            l2: decoupled ? 0 : weightDecay, shrink: decoupled ? 1 - lr * weightDecay : 1)
        var undecayed = decayed
        (undecayed.l2, undecayed.shrink) = (0, 1)
        let decay = decay
        // One kernel call per piece, each with its group's λ: the decayed ranges are read once, where
        // shrinking them first (a BLAS scal each, then the undecayed kernel) reads them twice; the
        // results are the same bit for bit, and the pieces are the faster (Benchmarks/README.md,
        // “Figures behind the code”: decay in pieces).
        parameters.withUnsafeMutableBufferPointer { p in
            gradients.withUnsafeBufferPointer { g in
                m.withUnsafeMutableBufferPointer { m in
                    v.withUnsafeMutableBufferPointer { v in
                        decay.forEachPiece(count: p.count) { piece, isDecayed in
                            Kernels.adamUpdate(
                                parameters: UnsafeMutableBufferPointer(rebasing: p[piece]), gradients: UnsafeBufferPointer(rebasing: g[piece]),
                                m: UnsafeMutableBufferPointer(rebasing: m[piece]), v: UnsafeMutableBufferPointer(rebasing: v[piece]),
                                step: isDecayed ? decayed : undecayed)
                        }
                    }
                }
            }
        }
        step += 1
    }

    /// `["m": …, "v": …]`, both empty before the first update.
    public var state: [String: [Scalar]] { ["m": m, "v": v] }

    /// Resumes from a saved ``state`` and ``step``.
    /// - Throws: ``OptimizerError`` when the state does not fit (see ``Optimizer/restore(state:step:)``).
    public mutating func restore(state: [String: [Scalar]], step: Int) throws(OptimizerError) {
        try checkSavedState(state, names: ["m", "v"], step: step, sizedCount: self.step > 0 ? m.count : nil)
        m = state["m"]!
        v = state["v"]!
        self.step = step
    }

    /// `Adam(learningRate: 0.001, beta1: 0.9, beta2: 0.999, epsilon: 1e-08)`, or
    /// `AdamW(…, weightDecay: 0.01, decay: matrices)`.
    public var description: String {
        var parts = ["learningRate: \(learningRate)", "beta1: \(beta1)", "beta2: \(beta2)", "epsilon: \(epsilon)"]
        if weightDecay != 0 { parts.append("weightDecay: \(weightDecay)") }
        if decay != .all { parts.append("decay: \(decay)") }
        if schedule != .constant { parts.append("schedule: \(schedule)") }
        return (decoupled ? "AdamW(" : "Adam(") + parts.joined(separator: ", ") + ")"
    }
}

/// One Adam step's constants: the hyperparameters and the bias corrections folded in.
public struct AdamStep<Scalar: TensorScalar>: Sendable {
    /// `lr / (1 - β1^t)`.
    public var stepSize: Scalar
    /// `1 / √(1 - β2^t)`.
    public var inverseRootCorrection2: Scalar
    /// Adam's hyperparameters.
    public var beta1: Scalar, beta2: Scalar, epsilon: Scalar
    /// Adam's L2 coefficient added to the gradient (0 for AdamW).
    public var l2: Scalar
    /// AdamW's shrink factor `1 - lr·λ` (1 for Adam).
    public var shrink: Scalar
}
