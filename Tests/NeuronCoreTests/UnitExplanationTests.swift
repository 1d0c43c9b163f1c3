import Testing

@testable import NeuronCore

@Suite("The reference table of one unit of a network")
struct UnitExplanationTests {
    /// Docs/Reference.md §1–2's neuron as the one unit of `Network[Dense(1→1, tanh)]`.
    private func referenceUnit() throws -> UnitExplanation {
        var network = try Network<Double>([try Dense<Double>(1, 1, activation: .tanh)], loss: .halfSquaredError)
        network.parameters = [0.5, 0.6]
        return try UnitExplanation(network: network, sample: [0.4], target: [0.7], layer: 0, unit: 0)
    }

    @Test("A network whose loss on the sample is not finite is refused, not tabled as NaN")
    func nonFiniteLoss() throws {
        // An identity unit at Double's limit: the output overflows to infinity, the squared error too.
        var network = try Network<Double>([try Dense<Double>(1, 1, activation: .identity)], loss: .halfSquaredError)
        network.parameters = [.greatestFiniteMagnitude, .greatestFiniteMagnitude]
        #expect(
            throws: NetworkError.invalidValue(
                "the network's loss on the sample is inf, not a finite number: its weights give non-finite scores, and every number of the table would be too"
            )
        ) {
            try UnitExplanation(network: network, sample: [0.4], target: [0.7], layer: 0, unit: 0)
        }
    }

    @Test("The reference neuron as a network's unit gives Docs/Reference.md §1's forward and chain-rule values")
    func referenceForward() throws {
        let e = try referenceUnit()
        #expect(e.inputs == [0.4] && e.weights == [0.5] && e.bias == 0.6 && e.target == 0.7 && e.isOutput)
        expectClose(e.net, 0.8, tolerance: 1e-15)
        expectClose(e.output, 0.6640367702678491, tolerance: 1e-15)
        expectClose(e.loss, 0.0006466769463837285, tolerance: 1e-17)
        // 1/cosh²(net) from the definition, against the table's 1 - output².
        expectClose(e.localNet, 0.5590551677322437, tolerance: 1e-15)
        expectClose(try #require(e.gradients.output), -0.035963229732150825, tolerance: 1e-16)
        expectClose(e.gradients.net, -0.020105429430100793, tolerance: 1e-16)
        expectClose(e.gradients.bias, -0.020105429430100793, tolerance: 1e-16)
        expectClose(e.gradients.weights, [-0.008042171772040318], tolerance: 1e-16)
        expectClose(e.gradients.inputs, [-0.010052714715050396], tolerance: 1e-16)
    }

    @Test("Its faux gradients are §2's forward differences (tiny 1e-4), nudged through the network's forward pass")
    func referenceFaux() throws {
        let e = try referenceUnit()
        // The same nudges reached another way (the target moved back, the bias moved by tiny·w):
        // equal to the table up to the rounding of one more subtraction, amplified by 1/tiny.
        expectClose(try #require(e.faux.output), -0.03591322973214633, tolerance: 1e-11)
        expectClose(e.faux.net, -0.020088469318535994, tolerance: 1e-11)
        expectClose(e.faux.bias, -0.020088469318535994, tolerance: 1e-11)
        expectClose(e.faux.weights, [-0.008039457952816777], tolerance: 1e-11)
        expectClose(e.faux.inputs, [-0.01004847442496147], tolerance: 1e-11)
        #expect(e.difference == .reference)
    }

    /// A network with every kind of hidden activation and a given loss head, seeded.
    private func network(softmax: Bool) throws -> (Network<Double>, [Double], [Double]) {
        let last: (Int, Activation) = softmax ? (3, .softmax) : (2, .identity)
        let network = try Network<Double>(
            features: 3, layers: [(4, .tanh), (3, .sigmoid), (3, .relu), last], loss: softmax ? .softmaxCrossEntropy : .halfSquaredError,
            seed: 11)
        return (network, [0.3, -1.2, 0.8], softmax ? [0, 1, 0] : [0.25, -0.5])
    }

    @Test("Every unit's chain-rule gradients equal the network's own backward pass", arguments: [false, true])
    func againstBackpropagation(softmax: Bool) throws {
        let (network, x, t) = try network(softmax: softmax)
        for layer in 0..<4 {
            for unit in 0..<(layer == 0 ? 4 : 3) where !(layer == 3 && unit >= t.count) {
                let e = try UnitExplanation(network: network, sample: x, target: t, layer: layer, unit: unit)
                // Two routes to the same numbers: dz from ∂L/∂output times f'(net) here, from the
                // saved output inside the layer's backward; they differ by rounding only.
                expectClose(e.gradients.bias, e.backpropagatedBias, tolerance: 1e-14)
                expectClose(e.gradients.weights, e.backpropagatedWeights, tolerance: 1e-14)
            }
        }
    }

    @Test("Every unit's chain-rule gradients agree with central differences", arguments: [false, true])
    func againstFaux(softmax: Bool) throws {
        let (network, x, t) = try network(softmax: softmax)
        let central = try FiniteDifference<Double>(.central, tiny: 1e-6)
        for layer in 0..<4 {
            for unit in 0..<(layer == 0 ? 4 : 3) where !(layer == 3 && unit >= t.count) {
                let e = try UnitExplanation(network: network, sample: x, target: t, layer: layer, unit: unit, difference: central)
                // Central differences err by O(tiny²) ≈ 1e-12 and by rounding ≈ 1e-16 / 1e-6.
                for (quantity, c) in e.comparisons {
                    #expect(c.absoluteError <= 1e-8 + 1e-6 * abs(c.analytic), "layer \(layer) unit \(unit) \(quantity): \(c.analytic) vs \(c.faux)")
                }
                // The output's faux gradient exists wherever the output can be nudged alone.
                #expect((e.faux.output != nil) == !(softmax && layer == 3), "layer \(layer) unit \(unit)")
            }
        }
    }

    @Test("A Float network is explained in Double with the same weights")
    func floatNetwork() throws {
        let (network, x, t) = try network(softmax: true)
        let float = network.converted(to: Float.self)
        let e = try UnitExplanation(network: float, sample: x.map(Float.init), target: t.map(Float.init), layer: 1, unit: 2)
        let weights = float.parameter(float.parameterTensors[2])  // layers.1.weight: (4, 3)
        #expect(e.weights == (0..<4).map { Double(weights[$0, 2]) })
        for (quantity, c) in e.comparisons {
            #expect(c.absoluteError <= 1e-7 + 1e-3 * abs(c.analytic), "\(quantity): \(c.analytic) vs \(c.faux)")
        }
    }

    @Test("A layer, unit or sample that does not fit is an error that says so")
    func errors() throws {
        let (network, x, t) = try network(softmax: false)
        #expect(throws: NetworkError.self) { try UnitExplanation(network: network, sample: x, target: t, layer: 4, unit: 0) }
        #expect(throws: NetworkError.self) { try UnitExplanation(network: network, sample: x, target: t, layer: 0, unit: 4) }
        #expect(throws: NetworkError.self) { try UnitExplanation(network: network, sample: [1], target: t, layer: 0, unit: 0) }
        do {
            _ = try UnitExplanation(network: network, sample: x, target: t, layer: 1, unit: 7)
            Issue.record("unit 7 of a 3-unit layer was explained")
        } catch {
            #expect("\(error)".contains("unit 7 is out of range; it has units 0 to 2"))
        }
    }

    @Test("The text table has one row per weight and input, and the JSON its keys")
    func table() throws {
        let (network, x, t) = try network(softmax: false)
        let e = try UnitExplanation(network: network, sample: x, target: t, layer: 1, unit: 0)
        let text = e.table
        #expect(text.hasPrefix("Unit 0 of layer 1 Dense(4→3, sigmoid)"))
        #expect(text.contains("output·(1 - output)"))
        for j in 0..<4 { #expect(text.contains("w[\(j)]") && text.contains("x[\(j)]")) }
        #expect(text.contains("\(e.backpropagatedBias)"))
    }
}

@Suite("A unit explained behind dropout and batch norm: evaluation mode in every pass")
struct UnitExplanationEvaluationModeTests {
    /// Dense(3→4, tanh) → BatchNorm(4, relu) with running statistics of its own → Dropout(4, rate 0.5)
    /// → Dense(4→2, softmax), seeded; and a conv → batch norm → dropout → flatten → dense image network.
    private func networks() throws -> [(network: Network<Double>, sample: [Double], target: [Double], layer: Int)] {
        var vectors = try Network<Double>(
            [
                try Dense<Double>(3, 4, activation: .tanh), try BatchNorm<Double>(input: [4], activation: .relu),
                try Dropout<Double>(input: [4], rate: 0.5), try Dense<Double>(4, 2, activation: .softmax),
            ], loss: .softmaxCrossEntropy)
        vectors.initialize(seed: 5)
        var images = try Network<Double>(
            [
                try Conv2D<Double>(input: [4, 4, 1], filters: 2, kernel: (3, 3)), try BatchNorm<Double>(input: [2, 2, 2], activation: .tanh),
                try Dropout<Double>(input: [2, 2, 2], rate: 0.3), try Flatten<Double>(input: [2, 2, 2]),
                try Dense<Double>(8, 2, activation: .identity),
            ], loss: .halfSquaredError)
        images.initialize(seed: 6)
        // Running statistics unlike one sample's batch statistics: a mean off 0, variances off 1.
        vectors.state = [0.2, -0.1, 0.3, 0.05, 0.5, 2.0, 0.7, 1.5]
        images.state = [0.1, -0.2, 0.6, 1.8]
        return [
            (vectors, [0.3, -1.2, 0.8], [0, 1], 3),
            (images, (0..<16).map { Double($0 % 5) / 4 - 0.5 }, [0.25, -0.5], 4),
        ]
    }

    @Test("The loss is the evaluation-mode loss, and each faux gradient agrees with its chain-rule one (central, 1e-6)")
    func consistent() throws {
        for (network, sample, target, layer) in try networks() {
            var evaluated = network
            let x = try Tensor<Double>(shape: [1] + network.inputShape, scalars: sample)
            let t = try Tensor<Double>(shape: [1, target.count], scalars: target)
            let evaluationLoss = try evaluated.loss(x, targets: t, mode: .evaluation)
            let trainingLoss = try evaluated.loss(x, targets: t, mode: .training)
            #expect(abs(evaluationLoss - trainingLoss) > 1e-3, "the two modes must differ for the test to tell them apart")
            for unit in 0..<2 {
                let e = try UnitExplanation(
                    network: network, sample: sample, target: target, layer: layer, unit: unit, difference: try FiniteDifference(.central, tiny: 1e-6)
                )
                #expect(e.mode == .evaluation)
                expectClose(e.loss, evaluationLoss, tolerance: 1e-12)
                for (quantity, comparison) in e.comparisons {
                    #expect(comparison.agrees(absoluteTolerance: 1e-7, relativeTolerance: 1e-5), "\(network) unit \(unit) \(quantity): \(comparison)")
                }
                #expect(e.table.contains("In evaluation mode"))
            }
        }
    }
}
