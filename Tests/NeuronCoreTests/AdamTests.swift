import Testing

@testable import NeuronCore

@Suite("Adam and AdamW (PyTorch's torch.optim.Adam and AdamW)")
struct AdamTests {
    @Test("The defaults are PyTorch's: lr 1e-3, betas (0.9, 0.999), epsilon 1e-8, no weight decay")
    func defaults() throws {
        let adam = try Adam<Double>()
        #expect(adam.learningRate == 1e-3 && adam.beta1 == 0.9 && adam.beta2 == 0.999 && adam.epsilon == 1e-8)
        #expect(adam.weightDecay == 0 && !adam.decoupled && adam.schedule == .constant && adam.step == 0)
        #expect(adam.state == ["m": [], "v": []])
    }

    // MARK: - By formula

    @Test("The first step moves each parameter by ≈ lr against its gradient's sign, whatever the gradient's scale")
    func firstStep() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            let lr: Scalar = 0.01
            var adam = try Adam<Scalar>(learningRate: lr)
            let p0: [Scalar] = [1, -2, 0.5, 3]
            let g: [Scalar] = [1e-3, -5, 200, 0]
            var p = p0
            adam.update(parameters: &p, gradients: g)

            // Exactly the implementation's arrangement; within a few ulps of the documented one.
            #expect(p == (0..<p0.count).map { adamFirstStep(p0[$0], gradient: g[$0], learningRate: lr) })
            for i in 0..<p0.count {
                expectClose(p[i], documentedAdamFirstStep(p0[i], gradient: g[i], learningRate: lr), tolerance: 4 * Scalar.ulpOfOne * 3)
            }

            // Bias correction undoes the averages' start at 0: m̂ = g and v̂ = g², so the move is
            // lr·g/(|g| + ε), within ε/|g| (1e-5 for the smallest gradient here) of lr·sign(g).
            for i in 0..<3 {
                expectRelativelyClose(p0[i] - p[i], lr * (g[i] > 0 ? 1 : -1), tolerance: 1e-4)
            }
            #expect(p[3] == p0[3])  // no gradient, no move: 0 / (0 + ε), which is why ε > 0
            #expect(adam.step == 1)
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("Under a constant gradient every step moves by ≈ lr: the bias correction holds at every t")
    func constantGradient() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            var adam = try Adam<Scalar>(learningRate: 0.01)
            var p: [Scalar] = [0, 0]
            // m_t = (1 - β1^t)·g and v_t = (1 - β2^t)·g², so m̂ = g and v̂ = g² at every t.
            for _ in 0..<10 { adam.update(parameters: &p, gradients: [2, -0.5]) }
            expectRelativelyClose(p[0], -0.1, tolerance: 1e-4)
            expectRelativelyClose(p[1], 0.1, tolerance: 1e-4)
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("Weight decay, by formula: Adam adds λ·p to the gradient; AdamW shrinks p by lr·λ·p first")
    func weightDecay() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            let lr: Scalar = 0.1, λ: Scalar = 0.5
            let p0: [Scalar] = [2, -1], g: [Scalar] = [-0.75, 0.25]

            // L2: d = g + λp = [-0.75 + 1, 0.25 - 0.5] = [0.25, -0.25]: the decay flips the first
            // gradient's sign, so that parameter moves down, towards 0.
            var l2 = try Adam<Scalar>(learningRate: lr, weightDecay: λ)
            var p = p0
            l2.update(parameters: &p, gradients: g)
            #expect(p == [adamFirstStep(2, gradient: 0.25, learningRate: lr), adamFirstStep(-1, gradient: -0.25, learningRate: lr)])
            expectClose(p, [1.9, -0.9], tolerance: 1e-6)

            // Decoupled: p·(1 - lr·λ) = [1.9, -0.95], then the plain Adam step on g.
            var adamW = try Adam<Scalar>(learningRate: lr, weightDecay: λ, decoupled: true)
            p = p0
            adamW.update(parameters: &p, gradients: g)
            let shrink = 1 - lr * λ
            #expect(
                p == [adamFirstStep(2 * shrink, gradient: -0.75, learningRate: lr), adamFirstStep(-1 * shrink, gradient: 0.25, learningRate: lr)])
            expectClose(p, [2, -1.05], tolerance: 1e-6)
        }
        try check(Float.self)
        try check(Double.self)
    }

    // MARK: - A problem whose answer is known

    @Test("On the bowl ½Σaᵢ(pᵢ - cᵢ)², a = [1, 10]: Adam reaches c, with and without a cosine schedule")
    func bowl() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            let bowl = QuadraticBowl<Scalar>()
            // Adam's steps start at about lr whatever the curvature; from the origin c is 3 away,
            // so lr 0.1 needs some 30 steps to arrive and the rest to settle. (Double: 175 steps to 1e-4.)
            #expect(bowl.steps(toReach: 1e-4, with: try Adam(learningRate: 0.1), limit: 500) != nil)
            #expect(bowl.steps(toReach: 1e-4, with: try Adam(learningRate: 0.1, schedule: .cosine(totalSteps: 500)), limit: 500) != nil)
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("With L2 weight decay λ Adam finds the bowl's shifted minimum aᵢcᵢ/(aᵢ + λ)")
    func bowlWithWeightDecay() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            let bowl = QuadraticBowl<Scalar>()
            let target = bowl.minimum(weightDecay: 0.5)
            #expect(bowl.steps(toReach: 1e-4, of: target, with: try Adam(learningRate: 0.1, weightDecay: 0.5), limit: 1000) != nil)
        }
        try check(Float.self)
        try check(Double.self)
    }

    // MARK: - Checks at the door

    @Test("Bad hyperparameters throw, naming the parameter and what is allowed")
    func badHyperparameters() {
        func message(_ body: () throws -> Adam<Double>) -> String? {
            do { _ = try body(); return nil } catch { return "\(error)" }
        }
        #expect(message { try Adam(learningRate: .nan) } == "learning rate must be a finite number greater than 0, got nan")
        #expect(message { try Adam(beta1: 1) } == "beta1 must be in [0, 1), got 1.0")
        #expect(message { try Adam(beta2: -0.5) } == "beta2 must be in [0, 1), got -0.5")
        #expect(message { try Adam(epsilon: 0) } == "epsilon must be a finite number greater than 0, got 0.0")
        #expect(message { try Adam(weightDecay: -0.01) } == "weight decay must be a finite number 0 or greater, got -0.01")
        #expect(message { try Adam(schedule: .cosine(totalSteps: 0)) } == "cosine schedule's totalSteps must be 1 or more, got 0")
        #expect(message { try Adam(beta1: 0, weightDecay: 0.01, decoupled: true) } == nil)
    }

    // MARK: - Exact resume

    @Test("state → restore(state:step:) into a fresh Adam continues identically", arguments: [false, true])
    func resume(decoupled: Bool) throws {
        func make<Scalar: TensorScalar>() throws(OptimizerError) -> Adam<Scalar> {
            try Adam(learningRate: 0.1, weightDecay: 0.01, decoupled: decoupled, schedule: .cosine(totalSteps: 20, minimumFactor: 0.1))
        }
        try expectExactResume(make as () throws(OptimizerError) -> Adam<Float>)
        try expectExactResume(make as () throws(OptimizerError) -> Adam<Double>)
    }

    @Test("A state that does not fit is refused, and the optimizer is left as it was")
    func restoreRefused() throws {
        var fresh = try Adam<Double>()
        #expect(throws: OptimizerError.stateCount(name: "v", expected: 2, actual: 3)) {
            try fresh.restore(state: ["m": [1, 2], "v": [1, 2, 3]], step: 5)
        }
        #expect(throws: OptimizerError.stateNames(expected: ["m", "v"], actual: ["m"])) {
            try fresh.restore(state: ["m": [1, 2]], step: 5)
        }
        let unused = try Adam<Double>()
        #expect(fresh == unused)

        var adam = try Adam<Double>()
        var p: [Double] = [1, -2]
        adam.update(parameters: &p, gradients: [0.5, 1])
        let before = adam
        #expect(throws: OptimizerError.stateCount(name: "m", expected: 2, actual: 3)) {
            try adam.restore(state: ["m": [1, 2, 3], "v": [1, 2, 3]], step: 5)  // another network's state
        }
        #expect(throws: OptimizerError.invalidStep(-3)) {
            try adam.restore(state: ["m": [1, 2], "v": [1, 2]], step: -3)
        }
        #expect(adam == before)
        try adam.restore(state: ["m": [1, 2], "v": [3, 4]], step: 5)
        #expect(adam.step == 5 && adam.state == ["m": [1, 2], "v": [3, 4]])
    }

    // MARK: - Conventions

    @Test("The moments are allocated on the first update and never again")
    func noReallocation() throws {
        var adam = try Adam<Double>(learningRate: 0.1)
        let bowl = QuadraticBowl<Double>()
        var p: [Double] = [0, 0]
        adam.update(parameters: &p, gradients: bowl.gradient(at: p))
        func addresses() -> [UInt] {
            [
                adam.m.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) },
                adam.v.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) },
            ]
        }
        let first = addresses()
        for _ in 0..<10 { adam.update(parameters: &p, gradients: bowl.gradient(at: p)) }
        #expect(addresses() == first)
    }

    @Test("Adam describes itself; decoupled weight decay reads as AdamW")
    func describesItself() throws {
        #expect(try Adam<Double>().description == "Adam(learningRate: 0.001, beta1: 0.9, beta2: 0.999, epsilon: 1e-08)")
        #expect(
            try Adam<Double>(weightDecay: 0.01, decoupled: true, schedule: .cosine(totalSteps: 100)).description
                == "AdamW(learningRate: 0.001, beta1: 0.9, beta2: 0.999, epsilon: 1e-08, weightDecay: 0.01, schedule: cosine(totalSteps: 100, minimumFactor: 0.0))"
        )
    }
}

/// Adam's first step (t = 1, m = v = 0, default betas and epsilon) on one parameter, in the
/// implementation's arrangement: `p - (lr / (1 - β1))·m / (√v · (1 / √(1 - β2)) + ε)`.
private func adamFirstStep<Scalar: TensorScalar>(_ p: Scalar, gradient d: Scalar, learningRate lr: Scalar) -> Scalar {
    let beta1: Scalar = 0.9, beta2: Scalar = 0.999, epsilon: Scalar = 1e-8
    let stepSize = Scalar(Double(lr) / (1 - Double(beta1)))
    let inverseRootCorrection2 = Scalar(1 / (1 - Double(beta2)).squareRoot())
    let m = (1 - beta1) * d, v = (1 - beta2) * d * d
    return p - stepSize * m / (v.squareRoot() * inverseRootCorrection2 + epsilon)
}

/// Adam's first step as PyTorch documents it: `p - lr·m̂/(√v̂ + ε)`, `m̂ = m/(1 - β1)`, `v̂ = v/(1 - β2)`.
private func documentedAdamFirstStep<Scalar: TensorScalar>(_ p: Scalar, gradient d: Scalar, learningRate lr: Scalar) -> Scalar {
    let beta1: Scalar = 0.9, beta2: Scalar = 0.999, epsilon: Scalar = 1e-8
    let m = (1 - beta1) * d, v = (1 - beta2) * d * d
    let mHat = m / (1 - beta1), vHat = v / (1 - beta2)
    return p - lr * mHat / (vHat.squareRoot() + epsilon)
}
