import Testing

@testable import NeuronCore

@Suite("SGD: plain, momentum, Nesterov, weight decay (PyTorch's torch.optim.SGD)")
struct SGDTests {
    // MARK: - By hand
    //
    // Learning rates, momenta and gradients below are powers of two and their small multiples, so
    // every product and sum is exact in Float and Double alike and the expected values are exact.

    @Test("One step by hand: p = [1, -2], g = [0.5, 1], lr 0.1 gives [0.95, -2.1]")
    func oneStep() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            var sgd = try SGD<Scalar>(learningRate: 0.1)
            var p: [Scalar] = [1, -2]
            sgd.update(parameters: &p, gradients: [0.5, 1])
            // 0.1 is not a binary fraction: a product and a difference, each rounded, near 2.
            expectClose(p, [0.95, -2.1], tolerance: 8 * Scalar.ulpOfOne)
            #expect(sgd.step == 1)
            #expect(sgd.state.isEmpty)  // plain SGD remembers nothing but the step
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("Weight decay by hand: g + λ·p, p = [1, -2], g = [0.5, 1], λ 0.5, lr 0.25 gives [0.75, -2]")
    func weightDecay() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            var sgd = try SGD<Scalar>(learningRate: 0.25, weightDecay: 0.5)
            var p: [Scalar] = [1, -2]
            // g + λp = [0.5 + 0.5, 1 - 1] = [1, 0]
            sgd.update(parameters: &p, gradients: [0.5, 1])
            #expect(p == [0.75, -2])
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("Weight decay on matrices only, by hand: λ·p joins the gradient of p[0] alone; p = [1, -2, 3], g = [0.5, 1, 0]")
    func matricesOnly() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            var sgd = try SGD<Scalar>(learningRate: 0.25, weightDecay: 0.5, decay: .matrices([0..<1]))
            var p: [Scalar] = [1, -2, 3]
            sgd.update(parameters: &p, gradients: [0.5, 1, 0])
            // p0: 1 - 0.25·(0.5 + 0.5·1) = 0.75; p1: -2 - 0.25·1 = -2.25; p2 has no gradient and no decay: 3.
            #expect(p == [0.75, -2.25, 3])
            #expect(sgd.description == "SGD(learningRate: 0.25, weightDecay: 0.5, decay: matrices)")

            // With momentum, the decayed and the undecayed parameters are two groups, as two optimizers would be.
            var grouped = try SGD<Scalar>(learningRate: 0.1, momentum: 0.9, nesterov: true, weightDecay: 0.5, decay: .matrices([1..<2]))
            var decayed = try SGD<Scalar>(learningRate: 0.1, momentum: 0.9, nesterov: true, weightDecay: 0.5)
            var others = try SGD<Scalar>(learningRate: 0.1, momentum: 0.9, nesterov: true)
            var (q, qd, qo): ([Scalar], [Scalar], [Scalar]) = ([1, -2, 3], [-2], [1, 3])
            for g: [Scalar] in [[0.5, 1, 0], [-1, 0.25, 2]] {
                grouped.update(parameters: &q, gradients: g)
                decayed.update(parameters: &qd, gradients: [g[1]])
                others.update(parameters: &qo, gradients: [g[0], g[2]])
            }
            #expect(q == [qo[0], qd[0], qo[1]])
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("Momentum's first two steps by hand: b = g, then b = μ·b + g; p -= lr·b")
    func momentumTwoSteps() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            var sgd = try SGD<Scalar>(learningRate: 0.25, momentum: 0.5)
            var p: [Scalar] = [1, -2]
            // Step 1: b = g = [0.5, 1]; p = [1 - 0.125, -2 - 0.25]
            sgd.update(parameters: &p, gradients: [0.5, 1])
            #expect(p == [0.875, -2.25])
            #expect(sgd.state == ["velocity": [0.5, 1]])
            // Step 2: b = 0.5·[0.5, 1] + [1, -1] = [1.25, -0.5]; p = [0.875 - 0.3125, -2.25 + 0.125]
            sgd.update(parameters: &p, gradients: [1, -1])
            #expect(p == [0.5625, -2.125])
            #expect(sgd.state == ["velocity": [1.25, -0.5]])
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("Nesterov's first two steps by hand: p -= lr·(g + μ·b)")
    func nesterovTwoSteps() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            var sgd = try SGD<Scalar>(learningRate: 0.25, momentum: 0.5, nesterov: true)
            var p: [Scalar] = [1, -2]
            // Step 1: b = [0.5, 1]; g + μb = [0.75, 1.5]; p = [1 - 0.1875, -2 - 0.375]
            sgd.update(parameters: &p, gradients: [0.5, 1])
            #expect(p == [0.8125, -2.375])
            // Step 2: b = [1.25, -0.5]; g + μb = [1 + 0.625, -1 - 0.25] = [1.625, -1.25]
            sgd.update(parameters: &p, gradients: [1, -1])
            #expect(p == [0.40625, -2.0625])
            #expect(sgd.state == ["velocity": [1.25, -0.5]])
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("Momentum with weight decay: the decayed gradient is what the velocity accumulates")
    func momentumWithWeightDecay() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            var sgd = try SGD<Scalar>(learningRate: 0.5, momentum: 0.5, weightDecay: 0.25)
            var p: [Scalar] = [2]
            // Step 1: d = 1 + 0.25·2 = 1.5; b = 1.5; p = 2 - 0.75 = 1.25
            sgd.update(parameters: &p, gradients: [1])
            #expect(p == [1.25])
            // Step 2: d = 1 + 0.25·1.25 = 1.3125; b = 0.75 + 1.3125 = 2.0625; p = 1.25 - 1.03125
            sgd.update(parameters: &p, gradients: [1])
            #expect(p == [0.21875])
        }
        try check(Float.self)
        try check(Double.self)
    }

    // MARK: - A problem whose answer is known

    @Test("On the bowl ½Σaᵢ(pᵢ - cᵢ)², a = [1, 10]: SGD, momentum and Nesterov reach c; momentum sooner")
    func bowl() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            let bowl = QuadraticBowl<Scalar>()
            // lr 0.05 is stable for the steep direction (lr·10 < 2) and slow along the shallow
            // one: plain SGD contracts the error by 0.95 a step there, so about 200 steps to 1e-4.
            // μ = 0.6 is near the heavy ball's critical damping for lr·a = 0.05 ((1 - √0.05)² ≈ 0.6),
            // contracting by about 0.78 a step in both directions. (Double: 201, 53 and 65 steps.)
            let tolerance: Scalar = 1e-4
            let plain = try #require(bowl.steps(toReach: tolerance, with: SGD(learningRate: 0.05), limit: 250))
            let momentum = try #require(bowl.steps(toReach: tolerance, with: SGD(learningRate: 0.05, momentum: 0.6), limit: 100))
            let nesterov = try #require(bowl.steps(toReach: tolerance, with: SGD(learningRate: 0.05, momentum: 0.6, nesterov: true), limit: 100))
            #expect(momentum < plain)
            #expect(nesterov < plain)
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("With weight decay λ the bowl's minimum moves to aᵢcᵢ/(aᵢ + λ), and SGD finds it")
    func bowlWithWeightDecay() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            let bowl = QuadraticBowl<Scalar>()
            // ∇(f + ½λ|p|²) = a(p - c) + λp = 0 at p = ac/(a + λ) = [3/1.5, -20/10.5] for λ = 0.5.
            let target = bowl.minimum(weightDecay: 0.5)
            expectClose(target, [2, -20 / 10.5], tolerance: 4 * Scalar.ulpOfOne)
            // The shallow direction contracts by 1 - 0.05·1.5 = 0.925 a step: about 130 steps to 1e-4.
            let steps = bowl.steps(toReach: 1e-4, of: target, with: try SGD(learningRate: 0.05, weightDecay: 0.5), limit: 200)
            #expect(steps != nil)
        }
        try check(Float.self)
        try check(Double.self)
    }

    // MARK: - Checks at the door

    @Test("Bad hyperparameters throw, naming the parameter and what is allowed")
    func badHyperparameters() {
        func message(_ body: () throws -> SGD<Double>) -> String? {
            do { _ = try body(); return nil } catch { return "\(error)" }
        }
        #expect(message { try SGD(learningRate: 0) } == "learning rate must be a finite number greater than 0, got 0.0")
        #expect(message { try SGD(learningRate: -0.1) } == "learning rate must be a finite number greater than 0, got -0.1")
        #expect(message { try SGD(learningRate: .nan) } == "learning rate must be a finite number greater than 0, got nan")
        #expect(message { try SGD(learningRate: .infinity) } == "learning rate must be a finite number greater than 0, got inf")
        #expect(message { try SGD(learningRate: 0.1, momentum: 1.5) } == "momentum must be in [0, 1), got 1.5")
        #expect(message { try SGD(learningRate: 0.1, momentum: 1) } == "momentum must be in [0, 1), got 1.0")
        #expect(message { try SGD(learningRate: 0.1, momentum: -0.1) } == "momentum must be in [0, 1), got -0.1")
        #expect(message { try SGD(learningRate: 0.1, nesterov: true) } == "nesterov must be false when momentum is 0, got true")
        #expect(message { try SGD(learningRate: 0.1, weightDecay: -1) } == "weight decay must be a finite number 0 or greater, got -1.0")
        #expect(message { try SGD(learningRate: 0.1, weightDecay: .infinity) } == "weight decay must be a finite number 0 or greater, got inf")
        #expect(message { try SGD(learningRate: 0.1, schedule: .step(every: 0, factor: 0.5)) } == "step schedule's every must be 1 or more, got 0")
        #expect(throws: OptimizerError.invalidHyperparameter(name: "momentum", value: "1.5", allowed: "in [0, 1)")) {
            try SGD<Float>(learningRate: 0.1, momentum: 1.5)
        }
        #expect(message { try SGD(learningRate: 0.1, momentum: 0.9, nesterov: true, weightDecay: 1e-4) } == nil)
    }

    // MARK: - Exact resume

    @Test(
        "state → restore(state:step:) into a fresh SGD continues identically",
        arguments: [
            "plain, step schedule", "momentum", "Nesterov, weight decay, cosine schedule",
        ])
    func resume(_ configuration: String) throws {
        func make<Scalar: TensorScalar>() throws(OptimizerError) -> SGD<Scalar> {
            switch configuration {
            case "plain, step schedule": return try SGD(learningRate: 0.05, schedule: .step(every: 3, factor: 0.5))
            case "momentum": return try SGD(learningRate: 0.05, momentum: 0.9)
            default:
                return try SGD(
                    learningRate: 0.05, momentum: 0.9, nesterov: true, weightDecay: 0.01,
                    schedule: .cosine(totalSteps: 10, minimumFactor: 0.1))
            }
        }
        try expectExactResume(make as () throws(OptimizerError) -> SGD<Float>)
        try expectExactResume(make as () throws(OptimizerError) -> SGD<Double>)
    }

    @Test("A state that does not fit is refused, and the optimizer is left as it was")
    func restoreRefused() throws {
        var sgd = try SGD<Double>(learningRate: 0.25, momentum: 0.5)
        var p: [Double] = [1, -2]
        sgd.update(parameters: &p, gradients: [0.5, 1])
        let before = sgd
        #expect(throws: OptimizerError.stateCount(name: "velocity", expected: 2, actual: 3)) {
            try sgd.restore(state: ["velocity": [1, 2, 3]], step: 4)
        }
        #expect(throws: OptimizerError.stateCount(name: "velocity", expected: 0, actual: 2)) {
            try sgd.restore(state: ["velocity": [1, 2]], step: 0)  // nothing is sized before the first step
        }
        #expect(throws: OptimizerError.stateNames(expected: ["velocity"], actual: [])) {
            try sgd.restore(state: [:], step: 1)
        }
        #expect(throws: OptimizerError.stateNames(expected: [], actual: ["velocity"])) {
            var plain = try SGD<Double>(learningRate: 0.1)
            try plain.restore(state: ["velocity": [1, 2]], step: 1)
        }
        #expect(throws: OptimizerError.invalidStep(-1)) {
            try sgd.restore(state: ["velocity": [1, 2]], step: -1)
        }
        #expect(sgd == before)
        #expect(
            OptimizerError.stateCount(name: "velocity", expected: 2, actual: 3).description
                == "optimizer state \"velocity\" must hold 2 values, got 3")
        #expect(
            OptimizerError.stateNames(expected: ["velocity"], actual: []).description
                == "optimizer state must hold exactly \"velocity\", got no buffers")

        // A fresh optimizer takes any consistent state, and a step-0 state resets a used one.
        var fresh = try SGD<Double>(learningRate: 0.25, momentum: 0.5)
        try fresh.restore(state: ["velocity": [1, 2, 3]], step: 7)
        #expect(fresh.step == 7 && fresh.state == ["velocity": [1, 2, 3]])
        try sgd.restore(state: ["velocity": []], step: 0)
        let unused = try SGD<Double>(learningRate: 0.25, momentum: 0.5)
        #expect(sgd == unused)
    }

    // MARK: - Conventions

    @Test("The velocity is allocated on the first update and never again")
    func noReallocation() throws {
        var sgd = try SGD<Float>(learningRate: 0.05, momentum: 0.9)
        let bowl = QuadraticBowl<Float>()
        var p: [Float] = [0, 0]
        sgd.update(parameters: &p, gradients: bowl.gradient(at: p))
        let address = sgd.velocity.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
        for _ in 0..<10 { sgd.update(parameters: &p, gradients: bowl.gradient(at: p)) }
        #expect(sgd.velocity.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } == address)
    }

    @Test("SGD describes itself by what differs from the defaults")
    func describesItself() throws {
        #expect(try SGD<Double>(learningRate: 0.1).description == "SGD(learningRate: 0.1)")
        #expect(
            try SGD<Double>(
                learningRate: 0.1, momentum: 0.9, nesterov: true, weightDecay: 0.5,
                schedule: .step(every: 30, factor: 0.1)
            ).description
                == "SGD(learningRate: 0.1, momentum: 0.9, nesterov: true, weightDecay: 0.5, schedule: step(every: 30, factor: 0.1))")
    }
}

// MARK: - Helpers shared by the optimizer tests (SGDTests, AdamTests)

/// f(p) = ½ Σ aᵢ (pᵢ - cᵢ)² with curvatures a = [1, 10] and minimum c = [3, -2]: a problem whose
/// answer is known. The curvatures differ tenfold, so a step size safe for the steep direction is
/// slow along the shallow one, which is where momentum earns its keep.
struct QuadraticBowl<Scalar: TensorScalar> {
    let curvatures: [Scalar] = [1, 10]
    let center: [Scalar] = [3, -2]

    /// ∇f(p) = a ⊙ (p - c).
    func gradient(at p: [Scalar]) -> [Scalar] {
        (0..<p.count).map { curvatures[$0] * (p[$0] - center[$0]) }
    }

    /// The minimum of f(p) + ½λ|p|²: aᵢcᵢ/(aᵢ + λ).
    func minimum(weightDecay λ: Scalar) -> [Scalar] {
        (0..<center.count).map { curvatures[$0] * center[$0] / (curvatures[$0] + λ) }
    }

    /// Steps `optimizer` from the origin until every |pᵢ - targetᵢ| ≤ `tolerance`.
    /// - Returns: the number of updates taken, or nil when `limit` updates were not enough.
    func steps(toReach tolerance: Scalar, of target: [Scalar]? = nil, with optimizer: some Optimizer<Scalar>, limit: Int) -> Int? {
        var optimizer = optimizer
        let target = target ?? center
        var p: [Scalar] = [0, 0]
        for step in 0...limit {
            if zip(p, target).allSatisfy({ abs($0 - $1) <= tolerance }) { return step }
            optimizer.update(parameters: &p, gradients: gradient(at: p))
        }
        return nil
    }

    /// The parameters after `steps` updates from the origin.
    func descend(with optimizer: inout some Optimizer<Scalar>, steps: Int) -> [Scalar] {
        var p: [Scalar] = [0, 0]
        for _ in 0..<steps { optimizer.update(parameters: &p, gradients: gradient(at: p)) }
        return p
    }
}

/// Expects that an optimizer's ``Optimizer/state`` and ``Optimizer/step``, restored into a fresh
/// one made by `make`, continue exactly as the original does: the basis of exact resume.
func expectExactResume<O: Optimizer & Equatable>(
    _ make: () throws(OptimizerError) -> O, sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let bowl = QuadraticBowl<O.Scalar>()

    // Restoring before any step: the empty state of a fresh optimizer.
    var unstarted = try make()
    let unused = try make()
    try unstarted.restore(state: unused.state, step: 0)
    #expect(unstarted == unused, sourceLocation: sourceLocation)

    var original = try make()
    var p: [O.Scalar] = [0, 0]
    for _ in 0..<5 { original.update(parameters: &p, gradients: bowl.gradient(at: p)) }
    var resumed = try make()
    try resumed.restore(state: original.state, step: original.step)
    #expect(resumed == original, sourceLocation: sourceLocation)

    var q = p
    for _ in 0..<7 {
        original.update(parameters: &p, gradients: bowl.gradient(at: p))
        resumed.update(parameters: &q, gradients: bowl.gradient(at: q))
    }
    #expect(p == q, "resumed \(q) vs original \(p)", sourceLocation: sourceLocation)
    #expect(resumed == original, sourceLocation: sourceLocation)
    #expect(resumed.step == 12, sourceLocation: sourceLocation)
}
