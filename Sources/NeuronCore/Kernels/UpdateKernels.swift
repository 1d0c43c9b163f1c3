// The optimizers' updates over the flat parameter buffer: one loop each, every load
// unconditional so that the compiler vectorizes it.

// Two kernels rather than one with `if mu != 0` inside: every load in each loop is unconditional,
// so the compiler vectorizes them (4-6× faster than one loop for all cases); the remaining
// branches test loop invariants and become selects.
extension Kernels {
    /// Plain SGD with L2 weight decay: `p ← p - lr·(g + λ·p)`.
    ///
    ///     // p, g: (n)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func sgdUpdate<T: TensorScalar>(
        parameters p: UnsafeMutableBufferPointer<T>, gradients g: UnsafeBufferPointer<T>,
        learningRate lr: T, weightDecay wd: T
    ) {
        for i in p.indices {
            let pi = p[i]
            var d = g[i]
            if wd != 0 { d += wd * pi }
            p[i] = pi - lr * d
        }
    }

    /// A plain SGD step (``SGDStep``) applied to the entries of the flat buffer from `offset` on:
    /// `parameters` and their `gradients`, each piece with its own `λ`.
    ///
    ///     // p, g: (n), the flat buffer's offset..<offset + n
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func sgdUpdate<T: TensorScalar>(
        _ step: SGDStep, parameters p: UnsafeMutableBufferPointer<T>, gradients g: UnsafeBufferPointer<T>, offset: Int
    ) {
        precondition(p.count == g.count, "\(p.count) parameters but \(g.count) gradients")
        let lr = T(step.learningRate), lambda = T(step.weightDecay)
        step.decay.forEachPiece(of: offset..<offset + p.count) { piece, isDecayed in
            let local = piece.lowerBound - offset..<piece.upperBound - offset
            sgdUpdate(
                parameters: UnsafeMutableBufferPointer(rebasing: p[local]), gradients: UnsafeBufferPointer(rebasing: g[local]),
                learningRate: lr, weightDecay: isDecayed ? lambda : 0)
        }
    }

    /// SGD with momentum (PyTorch's rule, dampening 0): `b ← g` on the first step else `μ·b + g`,
    /// then `p ← p - lr·(g + μ·b)` (Nesterov) or `p ← p - lr·b`; `g` includes `λ·p`.
    ///
    ///     // p, g, b: (n)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func sgdMomentumUpdate<T: TensorScalar>(
        parameters p: UnsafeMutableBufferPointer<T>, gradients g: UnsafeBufferPointer<T>,
        velocity b: UnsafeMutableBufferPointer<T>,
        learningRate lr: T, weightDecay wd: T, momentum mu: T, nesterov: Bool, first: Bool
    ) {
        for i in p.indices {
            let pi = p[i], bi = b[i]
            var d = g[i]
            if wd != 0 { d += wd * pi }
            let velocity = first ? d : mu * bi + d
            b[i] = velocity
            d = nesterov ? d + mu * velocity : velocity
            p[i] = pi - lr * d
        }
    }
}

extension Kernels {
    /// One Adam (or AdamW) step with the bias corrections folded into `step`: the type's pass
    /// (``TensorScalar/adamUpdate(parameters:gradients:m:v:step:)``), Float's in C at the CPU's
    /// vector width, Double's the Swift loop below.
    ///
    ///     // p, g, m, v: (n)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func adamUpdate<T: TensorScalar>(
        parameters p: UnsafeMutableBufferPointer<T>, gradients g: UnsafeBufferPointer<T>,
        m: UnsafeMutableBufferPointer<T>, v: UnsafeMutableBufferPointer<T>, step: AdamStep<T>
    ) {
        T.adamUpdate(parameters: p, gradients: g, m: m, v: v, step: step)
    }

    /// ``adamUpdate(parameters:gradients:m:v:step:)`` in Swift: Double's pass, the arithmetic of Float's C loop.
    ///
    ///     // p, g, m, v: (n)
    static func adamUpdateLoop<T: TensorScalar>(
        parameters p: UnsafeMutableBufferPointer<T>, gradients g: UnsafeBufferPointer<T>,
        m: UnsafeMutableBufferPointer<T>, v: UnsafeMutableBufferPointer<T>, step: AdamStep<T>
    ) {
        // Locals, so the loop reads registers; every load unconditional and the branches on loop
        // invariants, so they become selects and the loop vectorizes.
        let beta1 = step.beta1, beta2 = step.beta2, epsilon = step.epsilon
        let oneMinusBeta1 = 1 - beta1, oneMinusBeta2 = 1 - beta2
        let l2 = step.l2, shrink = step.shrink
        let stepSize = step.stepSize, inverseRootCorrection2 = step.inverseRootCorrection2
        for i in p.indices {
            var pi = p[i], d = g[i]
            if l2 != 0 { d += l2 * pi }
            if shrink != 1 { pi *= shrink }
            let mi = beta1 * m[i] + oneMinusBeta1 * d
            let vi = beta2 * v[i] + oneMinusBeta2 * d * d
            m[i] = mi
            v[i] = vi
            // lr·m̂/(√v̂ + ε) with the corrections folded into the step constants. v ≥ 0 already;
            // `magnitude` tells the compiler so, which lets it drop the square root's errno path
            // on Linux and vectorize (4× faster).
            p[i] = pi - stepSize * mi / (vi.magnitude.squareRoot() * inverseRootCorrection2 + epsilon)
        }
    }
}

extension Kernels {
    /// PyTorch's `clip_grad_norm_` over one flat gradient buffer: the global norm `‖g‖ = √(Σ g²)`,
    /// summed in Double, and every gradient times `c = maximum / (‖g‖ + 1e-6)` when `c < 1`
    /// (PyTorch multiplies by `min(c, 1)`, which leaves a small gradient as it is).
    ///
    ///     // g: (n)
    ///
    /// - Returns: `‖g‖` before clipping.
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func clipGradientNorm<T: TensorScalar>(_ g: UnsafeMutableBufferPointer<T>, maximum: Double) -> Double {
        precondition(maximum > 0, "the largest gradient norm must be above 0, got \(maximum)")
        let norm = sumOfSquares(UnsafeBufferPointer(g)).squareRoot()
        let coefficient = maximum / (norm + 1e-6)
        guard coefficient < 1 else { return norm }  // NaN fails too: a NaN gradient stays one
        // A loop rather than BLAS's scal, which sets every entry to 0 when the factor is 0 (an
        // infinite norm), where PyTorch's product keeps an infinite gradient's NaN in sight.
        let c = T(coefficient)
        for i in g.indices { g[i] *= c }
        return norm
    }
}
