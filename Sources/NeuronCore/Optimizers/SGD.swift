// Stochastic gradient descent, plain, with momentum, and with Nesterov momentum: PyTorch's
// `torch.optim.SGD` with dampening 0, one flat loop over the parameter buffer.

/// Stochastic gradient descent, optionally with momentum (heavy-ball or Nesterov) and weight decay.
///
/// Each update follows PyTorch's documented `torch.optim.SGD` with dampening 0, for every entry
/// `p` with gradient `g`, learning rate `lr = learningRate · schedule.factor(at: step)`,
/// weight decay `λ` (taken as 0 outside the ``decay`` scope's parameters, PyTorch's parameter
/// groups) and momentum `μ`:
///
///     if λ ≠ 0:  g ← g + λ·p                       // L2 penalty added to the gradient
///     if μ ≠ 0:  b ← g on the first step, else μ·b + g
///                g ← g + μ·b  (Nesterov)  or  b    // velocity b is PyTorch's momentum_buffer
///     p ← p - lr·g
///
/// Note that PyTorch's momentum accumulates gradients, not steps (`b = μ·b + g`, `p -= lr·b`),
/// unlike Sutskever et al.'s `v = μ·v + lr·g`; the two differ when the learning rate changes.
public struct SGD<Scalar: TensorScalar>: Optimizer, Equatable {
    /// The base learning rate; the schedule scales it per step.
    public var learningRate: Scalar
    /// The share of the previous velocity kept each step; 0 for plain SGD.
    public let momentum: Scalar
    /// Whether the step looks ahead along the velocity (`g + μ·b` instead of `b`).
    public let nesterov: Bool
    /// The L2 penalty's coefficient, added to the gradient as `λ·p`.
    public let weightDecay: Scalar
    /// The parameters weight decay applies to.
    public let decay: WeightDecayScope
    /// How the learning rate changes with the step.
    public let schedule: LearningRateSchedule
    /// Steps taken so far.
    public private(set) var step: Int = 0
    /// One entry per parameter once momentum is on and the first update has run; empty otherwise.
    private(set) var velocity: [Scalar] = []

    /// An SGD optimizer; hyperparameters are checked here, so updates need not.
    /// - Parameters:
    ///   - learningRate: the share of each (momentum-adjusted) gradient subtracted; finite and > 0.
    ///   - momentum: the velocity's decay, in [0, 1); 0 turns momentum off.
    ///   - nesterov: Nesterov momentum; needs momentum > 0.
    ///   - weightDecay: the L2 coefficient, finite and ≥ 0.
    ///   - decay: the parameters weight decay applies to; every one by default.
    ///   - schedule: the learning-rate multiplier per step.
    /// - Throws: ``OptimizerError/invalidHyperparameter(name:value:allowed:)`` naming the first
    ///   hyperparameter out of range and what is allowed.
    public init(
        learningRate: Scalar, momentum: Scalar = 0, nesterov: Bool = false, weightDecay: Scalar = 0,
        decay: WeightDecayScope = .all, schedule: LearningRateSchedule = .constant
    ) throws(OptimizerError) {
        try checkPositive(learningRate, name: "learning rate")
        try checkDecayRate(momentum, name: "momentum")
        // PyTorch refuses this too: without a velocity, Nesterov's look-ahead is plain SGD in disguise.
        guard !nesterov || momentum > 0 else {
            throw .invalidHyperparameter(name: "nesterov", value: "true", allowed: "false when momentum is 0")
        }
        try checkNonNegative(weightDecay, name: "weight decay")
        self.learningRate = learningRate
        self.momentum = momentum
        self.nesterov = nesterov
        self.weightDecay = weightDecay
        self.decay = try decay.validated()
        self.schedule = try schedule.validated()
    }

    /// One SGD step over the flat buffers (the formula in the type's documentation).
    ///
    ///     // parameters: (n)  gradients: (n)  velocity: (n), or empty without momentum
    public mutating func update(parameters: inout [Scalar], gradients: [Scalar]) {
        precondition(
            parameters.count == gradients.count,
            "\(parameters.count) parameters but \(gradients.count) gradients")
        let lr = scheduledLearningRate, decay = decay, weightDecay = weightDecay
        // One kernel call per piece of the buffer, each with its group's λ (``Adam/update(parameters:gradients:)`` says why).
        if momentum == 0 {
            parameters.withUnsafeMutableBufferPointer { p in
                gradients.withUnsafeBufferPointer { g in
                    decay.forEachPiece(count: p.count) { piece, isDecayed in
                        Kernels.sgdUpdate(
                            parameters: UnsafeMutableBufferPointer(rebasing: p[piece]), gradients: UnsafeBufferPointer(rebasing: g[piece]),
                            learningRate: lr, weightDecay: isDecayed ? weightDecay : 0)
                    }
                }
            }
        } else {
            if step == 0 {
                // Sized once, on first sight; the first step overwrites it with the gradient.
                velocity = Array(repeating: 0, count: parameters.count)
            }
            precondition(
                velocity.count == parameters.count,
                "SGD velocity holds \(velocity.count) values but the parameters \(parameters.count): one optimizer serves one network")
            let (mu, nesterov, first) = (momentum, nesterov, step == 0)
            parameters.withUnsafeMutableBufferPointer { p in
                gradients.withUnsafeBufferPointer { g in
                    velocity.withUnsafeMutableBufferPointer { b in
                        decay.forEachPiece(count: p.count) { piece, isDecayed in
                            Kernels.sgdMomentumUpdate(
                                parameters: UnsafeMutableBufferPointer(rebasing: p[piece]), gradients: UnsafeBufferPointer(rebasing: g[piece]),
                                velocity: UnsafeMutableBufferPointer(rebasing: b[piece]),
                                learningRate: lr, weightDecay: isDecayed ? weightDecay : 0, momentum: mu, nesterov: nesterov, first: first)
                        }
                    }
                }
            }
        }
        step += 1
    }

    /// Without momentum, the next update's rule (``SGDStep``), counted as taken; nil with momentum,
    /// whose velocity an update must read and write.
    public mutating func fusableStep() -> SGDStep? {
        guard momentum == 0 else { return nil }
        defer { step += 1 }
        return SGDStep(learningRate: Double(scheduledLearningRate), weightDecay: Double(weightDecay), decay: decay)
    }

    /// `["velocity": …]` with momentum (empty before the first update); `[:]` without.
    public var state: [String: [Scalar]] {
        momentum != 0 ? ["velocity": velocity] : [:]
    }

    /// Resumes from a saved ``state`` and ``step``.
    /// - Throws: ``OptimizerError`` when the state does not fit (see ``Optimizer/restore(state:step:)``).
    public mutating func restore(state: [String: [Scalar]], step: Int) throws(OptimizerError) {
        let names = momentum != 0 ? ["velocity"] : []
        try checkSavedState(state, names: names, step: step, sizedCount: self.step > 0 ? velocity.count : nil)
        velocity = state["velocity"] ?? []
        self.step = step
    }

    /// `SGD(learningRate: 0.1, momentum: 0.9, nesterov: true)`: the hyperparameters that differ from the defaults.
    public var description: String {
        var parts = ["learningRate: \(learningRate)"]
        if momentum != 0 { parts.append("momentum: \(momentum)") }
        if nesterov { parts.append("nesterov: true") }
        if weightDecay != 0 { parts.append("weightDecay: \(weightDecay)") }
        if decay != .all { parts.append("decay: \(decay)") }
        if schedule != .constant { parts.append("schedule: \(schedule)") }
        return "SGD(" + parts.joined(separator: ", ") + ")"
    }
}

/// One plain SGD update, `p ← p - lr·(g + λ·p)` for every entry `p` of the flat parameter buffer with
/// gradient `g` (``SGD`` without momentum; `λ` is 0 outside ``decay``): a rule that needs nothing but
/// the entry and its gradient, so a backward pass can apply it to a tensor as soon as that tensor's
/// gradient is known (``Network/fusesUpdate``), or a product can compute the update itself
/// (``Kernels/sgdUpdate(_:parameters:gradients:offset:)`` applies it to a slice).
///
/// Not generic, so that building one in generic code costs no type lookup: each value is the
/// optimizer's scalar widened to Double, which a kernel narrows back exactly.
public struct SGDStep: Sendable, Equatable {
    /// This step's learning rate, the schedule applied.
    public let learningRate: Double
    /// The L2 coefficient `λ`.
    public let weightDecay: Double
    /// The entries `λ` applies to.
    public let decay: WeightDecayScope

    /// `λ` for the entries `range` of the flat buffer when it is the same for all of them (0 outside
    /// ``decay``); nil when ``decay`` covers part of `range`.
    public func weightDecay(over range: Range<Int>) -> Double? {
        guard weightDecay != 0 else { return 0 }
        var (decayed, plain) = (false, false)
        decay.forEachPiece(of: range) { _, isDecayed in if isDecayed { decayed = true } else { plain = true } }
        return decayed && plain ? nil : decayed ? weightDecay : 0
    }
}
