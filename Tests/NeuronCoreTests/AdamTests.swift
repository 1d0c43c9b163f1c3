import Foundation
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

    // MARK: - Weight decay on matrices only

    @Test("AdamW decaying matrices, by hand: with no gradient only the dense weight shrinks, by lr·λ = 5% a step")
    func matricesOnlyByHand() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            let network = try EmbeddingNormDense<Scalar>()
            let lr: Scalar = 0.1, λ: Scalar = 0.5
            var adamW = try Adam<Scalar>(learningRate: lr, weightDecay: λ, decoupled: true, decay: .matrices(network.decayedRanges))
            let p0 = network.parameters
            var p = p0
            // g = 0: m = v = 0, so Adam's own step is 0/(0 + ε) = 0 and only the decay moves p.
            let zero = [Scalar](repeating: 0, count: p.count)
            adamW.update(parameters: &p, gradients: zero)
            adamW.update(parameters: &p, gradients: zero)
            let shrink = 1 - lr * λ  // 0.95, as the optimizer rounds it
            for i in p.indices {
                #expect(p[i] == (network.dense.contains(i) ? p0[i] * shrink * shrink : p0[i]), "parameter \(i)")
            }
            #expect(p0[network.dense].contains { $0 != 0 })  // something to shrink
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test(
        "Decaying matrices is PyTorch's two parameter groups (λ on the matrices, 0 on the rest): two optimizers, bit for bit",
        arguments: [false, true])
    func matricesOnlyAreParameterGroups(decoupled: Bool) throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            let network = try EmbeddingNormDense<Scalar>()
            let decayedRanges = network.decayedRanges
            let (lr, λ): (Scalar, Scalar) = (0.05, 0.1)
            let schedule = LearningRateSchedule.cosine(totalSteps: 4)
            var grouped = try Adam<Scalar>(
                learningRate: lr, weightDecay: λ, decoupled: decoupled, decay: .matrices(decayedRanges), schedule: schedule)
            var decayedGroup = try Adam<Scalar>(learningRate: lr, weightDecay: λ, decoupled: decoupled, schedule: schedule)
            var otherGroup = try Adam<Scalar>(learningRate: lr, weightDecay: 0, decoupled: decoupled, schedule: schedule)
            let decayed = decayedRanges.flatMap { Array($0) }
            let others = network.parameters.indices.filter { !decayed.contains($0) }
            var p = network.parameters
            var (pd, po) = (decayed.map { p[$0] }, others.map { p[$0] })
            var generator = SeededGenerator(seed: 11)
            for _ in 0..<4 {
                let g = p.indices.map { _ in Scalar(generator.uniform(-1, 1)) }
                grouped.update(parameters: &p, gradients: g)
                decayedGroup.update(parameters: &pd, gradients: decayed.map { g[$0] })
                otherGroup.update(parameters: &po, gradients: others.map { g[$0] })
            }
            #expect(decayed.map { p[$0] } == pd)
            #expect(others.map { p[$0] } == po)
            #expect(pd != decayed.map { network.parameters[$0] })
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("Decaying matrices gives torch.optim.AdamW's and Adam's numbers with two parameter groups (Double, within 4 ulps)")
    func matricesOnlyAgainstPyTorch() throws {
        // Printed by PyTorch 2.x in float64: p_i = 0.1·(i + 1)·(±1), params [2, 3, 4, 7, 8] in a group
        // with weight_decay 0.3 and the rest with 0, lr 0.05, three steps with g_t[i] = sin(i + t):
        //   opt = AdamW([{"params": [pd], "weight_decay": 0.3}, {"params": [po], "weight_decay": 0.0}], lr=0.05)
        let adamW: [Double] = [
            0.019815583987375519, -0.34213108839488265, 0.19709424233326014, -0.361160260575355, 0.62033269522289225,
            -0.49749808272203083, 0.69340235632070091, -0.90847641838170923, 0.75032581440172252, -1.0100619140883198,
        ]
        let adamL2: [Double] = [
            0.019815583987375519, -0.34213108839488265, 0.20136899048285381, -0.37105174227587151, 0.64145684902148492,
            -0.49749808272203083, 0.69340235632070091, -0.94148027633325193, 0.77407051649010783, -1.0100619140883198,
        ]
        for (decoupled, torch) in [(true, adamW), (false, adamL2)] {
            var adam = try Adam<Double>(learningRate: 0.05, weightDecay: 0.3, decoupled: decoupled, decay: .matrices([2..<5, 7..<9]))
            var p: [Double] = (0..<10).map { i in
                let sign: Double = i % 2 == 0 ? 1 : -1
                return 0.1 * Double(i + 1) * sign
            }
            for t in 0..<3 { adam.update(parameters: &p, gradients: (0..<10).map { i in sin(Double(i + t)) }) }
            // Our per-step constants fold the bias corrections differently (the type's documentation): a few ulps.
            for i in p.indices { expectClose(p[i], torch[i], tolerance: 4 * torch[i].ulp) }
        }
    }

    @Test("Decay over every parameter as ranges is decay over all, bit for bit; bad ranges are refused")
    func matricesCoveringAll() throws {
        var all = try Adam<Float>(learningRate: 0.1, weightDecay: 0.5, decoupled: true)
        var covering = try Adam<Float>(learningRate: 0.1, weightDecay: 0.5, decoupled: true, decay: .matrices([0..<2, 2..<5]))
        var (p, q): ([Float], [Float]) = ([1, -2, 3, 0.5, 4], [1, -2, 3, 0.5, 4])
        for _ in 0..<3 {
            all.update(parameters: &p, gradients: [0.1, 0.2, -0.3, 0, 2])
            covering.update(parameters: &q, gradients: [0.1, 0.2, -0.3, 0, 2])
        }
        #expect(p == q)
        #expect(
            message { () throws(OptimizerError) in try Adam<Float>(weightDecay: 0.1, decay: .matrices([4..<6, 2..<3])) }
                == "decayed ranges must be non-empty ranges from 0 up, ascending and disjoint, got [Range(4..<6), Range(2..<3)]")
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
        #expect(
            try Adam<Double>(weightDecay: 0.01, decoupled: true, decay: .matrices([3..<7])).description
                == "AdamW(learningRate: 0.001, beta1: 0.9, beta2: 0.999, epsilon: 1e-08, weightDecay: 0.01, decay: matrices)")
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

/// A small text network with every kind of parameter weight decay treats differently: an
/// embedding (5 tokens × 4 features, parameters 0..<20), a LayerNorm's scale and shift (20..<28),
/// a dense layer's weight (28..<48, the one matrix) and bias (48..<53).
struct EmbeddingNormDense<Scalar: TensorScalar> {
    let network: Network<Scalar>
    /// The dense weight's place in the buffer.
    let dense = 28..<48

    init() throws {
        var network = try Network<Scalar>(
            [
                try Embedding(vocabulary: 5, features: 4, time: 3), try LayerNorm(shape: [3, 4]),
                try Dense(4, 5, activation: .identity, time: 3),
            ], loss: .sequenceCrossEntropy)
        network.initialize(seed: 7)
        self.network = network
    }

    var parameters: [Scalar] { network.parameters }
    var decayedRanges: [Range<Int>] { network.decayedRanges }
}
