import Testing

@testable import NeuronCore

@Suite("Sequence cross-entropy: a class index per position, padding left out of the mean")
struct SequenceLossTests {
    /// The kernel's value and gradient from logits `z` (rows of `columns`) and a target per row.
    static func kernel<Scalar: TensorScalar>(_ z: [Scalar], targets t: [Scalar], columns: Int) -> (loss: Scalar, gradient: [Scalar]) {
        var p = z
        p.withUnsafeMutableBufferPointer { Kernels.softmaxRows($0, columns: columns) }
        var g = [Scalar](repeating: .nan, count: z.count)  // every entry written, padding rows included
        let loss = z.withUnsafeBufferPointer { z in
            p.withUnsafeBufferPointer { p in
                t.withUnsafeBufferPointer { t in
                    g.withUnsafeMutableBufferPointer {
                        Kernels.sequenceCrossEntropy(logits: z, probabilities: p, targets: t, columns: columns, gradient: $0)
                    }
                }
            }
        }
        return (loss, g)
    }

    @Test("Two positions by hand; a padded sequence adds nothing; an all-padding batch gives 0")
    func handWorked() throws {
        // Position 0: z = [0, 0], target 0: p = [1/2, 1/2], -log p₀ = log 2.
        // Position 1: z = [0, log 3], target 1: p = [1/4, 3/4], -log p₁ = log(4/3).
        // Mean over the 2 counted positions: (log 2 + log(4/3)) / 2 = log(8/3) / 2.
        let log3 = Double.libmLog(3)
        let two = Self.kernel([0, 0, 0, log3], targets: [0, 1], columns: 2)
        expectClose(two.loss, Double.libmLog(8.0 / 3) / 2, tolerance: 1e-15)
        // (p - onehot) / 2: ([1/2, 1/2] - [1, 0]) / 2 and ([1/4, 3/4] - [0, 1]) / 2.
        expectClose(two.gradient, [-0.25, 0.25, 0.125, -0.125], tolerance: 1e-15)

        // A second sequence of padding only (any negative index), its logits anything: the same mean, zero rows.
        let padded = Self.kernel([0, 0, 0, log3, 1000, -7, 3, 3], targets: [0, 1, -1, -100], columns: 2)
        #expect(padded.loss == two.loss)
        #expect(Array(padded.gradient[0..<4]) == two.gradient && Array(padded.gradient[4...]) == [0, 0, 0, 0])

        let none = Self.kernel([5, -5, 1000, 0], targets: [-1, -1], columns: 2)
        #expect(none.loss == 0 && none.gradient == [0, 0, 0, 0])
    }

    @Test("Stable for huge logits: the shifted log-sum-exp")
    func huge() throws {
        // -log softmax([1000, 0])₁ = 1000 + log(1 + e^-1000) = 1000.
        let (loss, gradient) = Self.kernel([1000, 0], targets: [1] as [Double], columns: 2)
        #expect(loss == 1000 && gradient == [1, -1])
        let float = Self.kernel([80, 0, 0], targets: [2] as [Float], columns: 3)
        #expect(float.loss == 80 && float.loss.isFinite)
    }

    @Test("The kernel equals the definition from the probabilities, in Float and Double")
    func matchesNaive() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type, tolerance: Scalar) throws {
            var generator = SeededGenerator(seed: 12)
            for (batch, time, vocabulary) in [(1, 1, 1), (2, 3, 4), (5, 7, 27)] {
                let z = Tensor<Scalar>.random([batch, time, vocabulary], using: &generator)
                var t = Tensor<Scalar>(zeros: [batch, time])
                for i in 0..<t.count { t[i] = generator.index(below: 4) == 0 ? -1 : Scalar(generator.index(below: vocabulary)) }
                let (loss, gradient) = Self.kernel(z.scalars, targets: t.scalars, columns: vocabulary)
                var p = z
                p.withUnsafeMutableBufferPointer { Kernels.softmaxRows($0, columns: vocabulary) }
                expectClose(loss, Naive.loss(.sequenceCrossEntropy, output: p, targets: t), tolerance: tolerance)
                // The gradient's definition, (p - onehot) / counted, written out position by position.
                let counted = Scalar(max(t.scalars.filter { $0 >= 0 }.count, 1))
                for position in 0..<t.count {
                    for j in 0..<vocabulary {
                        let expected = t[position] < 0 ? 0 : (p[position * vocabulary + j] - (Scalar(j) == t[position] ? 1 : 0)) / counted
                        expectClose(gradient[position * vocabulary + j], expected, tolerance: tolerance)
                    }
                }
            }
        }
        try check(Float.self, tolerance: 1e-5)
        try check(Double.self, tolerance: 1e-13)
    }

    /// `Network[Embedding(5→3), Dense(3→4, tanh, per position), Dense(4→5, identity, per position)]`
    /// over sequences of 4.
    static func network<Scalar: TensorScalar>(_: Scalar.Type) throws -> Network<Scalar> {
        var network = try Network<Scalar>(
            [
                try Embedding<Scalar>(vocabulary: 5, features: 3, time: 4), try Dense<Scalar>(3, 4, activation: .tanh, time: 4),
                try Dense<Scalar>(4, 5, activation: .identity, time: 4),
            ], loss: .sequenceCrossEntropy)
        network.initialize(seed: 2)
        return network
    }

    @Test("Through a network: a softmax at every position, the loss its definition from them")
    func throughNetwork() throws {
        var network = try Self.network(Double.self)
        #expect(network.targetCount == 4 && network.outputCount == 20)
        let x = try Tensor<Double>(rows: [[0, 1, 2, 3], [4, 4, 0, 1], [2, 2, 2, 2]])
        let t = try Tensor<Double>(rows: [[1, 2, 3, 4], [4, 0, 1, -1], [-1, -1, -1, -1]])
        let value = try network.loss(x, targets: t)
        let y = network.output
        #expect(y.shape == [3, 4, 5])
        for position in 0..<12 { expectClose(y.scalars[position * 5..<(position + 1) * 5].reduce(0, +), 1, tolerance: 1e-15) }
        expectClose(value, Naive.loss(.sequenceCrossEntropy, output: y, targets: t), tolerance: 1e-14)
        // Padding's logits do not matter: the loss is the mean over the 7 counted positions.
        var counted = 0.0
        for position in 0..<12 where t[position] >= 0 { counted -= Double.libmLog(y[position * 5 + Int(t[position])]) }
        expectClose(value, counted / 7, tolerance: 1e-14)
        // Float through the same network.
        var float = network.converted(to: Float.self)
        expectClose(try float.loss(x.converted(to: Float.self), targets: t.converted(to: Float.self)), Float(value), tolerance: 1e-5)
    }

    @Test("Targets are checked: their shape (batch, time), and each a class index or a negative one for padding")
    func targetsChecked() throws {
        var network = try Self.network(Double.self)
        let x = try Tensor<Double>(rows: [[0, 1, 2, 3], [4, 4, 0, 1]])
        #expect(
            message { () throws(NetworkError) in try network.lossAndGradients(x, targets: Tensor(zeros: [2, 20])) }
                == "the targets have shape (2, 20) but sequenceCrossEntropy takes a class index per position: (batch, time) = (2, 4)")
        var t = try Tensor<Double>(rows: [[1, 2, 3, 4], [4, 0, 1, -100]])
        _ = try network.lossAndGradients(x, targets: t)
        t[1, 1] = 5
        #expect(
            message { () throws(NetworkError) in try network.loss(x, targets: t) }
                == "the targets' row 1, position 1 holds 5.0, but sequenceCrossEntropy takes class indices: whole numbers in 0..<5, or negative ones for padding"
        )
        for bad in [0.5, -0.5, .nan, -.infinity] {
            t[1, 1] = bad
            #expect(throws: NetworkError.self) { try network.lossAndGradients(x, targets: t) }
        }
    }

    @Test("The loss pairs only with logits of shape [time, vocabulary]")
    func pairing() throws {
        let embedding = try Embedding<Double>(vocabulary: 5, features: 3, time: 4)
        #expect(
            message { () throws(NetworkError) in
                try Network<Double>([embedding, try Dense<Double>(3, 5, activation: .tanh, time: 4)], loss: .sequenceCrossEntropy)
            }
                == "sequenceCrossEntropy takes logits: the last layer's activation must be identity (the loss head applies the softmax), got Dense(3→5, tanh, per position)"
        )
        #expect(
            message { () throws(NetworkError) in try Network<Double>(features: 3, layers: [(5, .identity)], loss: .sequenceCrossEntropy, seed: 1) }
                == "sequenceCrossEntropy needs logits of shape [time, vocabulary] per sample, but the last layer Dense(3→5, identity) gives [5]")
        // A layer with no activation of its own is taken as logits.
        _ = try Network<Double>([embedding], loss: .sequenceCrossEntropy)
        #expect(throws: NetworkError.self) {
            try Network<Double>([embedding, try Dense<Double>(3, 5, activation: .identity, time: 4)], loss: .softmaxCrossEntropy)
        }
    }

    @Test("Mini-batch training takes (samples, time) targets and lowers the loss of a next-token task")
    func trains() throws {
        // Each sequence counts up from a random start, mod 5; the target is the next token, the
        // last position padding. A per-position network learns it from the current token alone.
        var generator = SeededGenerator(seed: 9)
        var features = Tensor<Float>(zeros: [32, 4]), targets = Tensor<Float>(zeros: [32, 4])
        for n in 0..<32 {
            let start = generator.index(below: 5)
            for t in 0..<4 {
                features[n, t] = Float((start + t) % 5)
                targets[n, t] = t == 3 ? -1 : Float((start + t + 1) % 5)
            }
        }
        let dataset = try Dataset(features: features, targets: targets)
        var training = try MiniBatchTraining(
            network: try Self.network(Float.self), optimizer: try Adam<Float>(learningRate: 0.05), dataset: dataset, batchSize: 8, seed: 1)
        let first = training.finishEpoch()
        for _ in 0..<30 { training.finishEpoch() }
        let last = training.finishEpoch()
        #expect(last < first / 10, "epoch loss \(first) → \(last)")
        // Evaluation over the same rows: the mean over every counted position, as a step's.
        let evaluation = try training.network.evaluate(dataset)
        #expect(evaluation.loss < Double(first) / 10 && evaluation.accuracy == nil && evaluation.count == 32)
        #expect(throws: NetworkError.self) {
            try MiniBatchTraining(
                network: try Self.network(Float.self), optimizer: try Adam<Float>(learningRate: 0.05),
                dataset: try Dataset(features: features, targets: Tensor(zeros: [32, 20])), batchSize: 8, seed: 1)
        }
        // Tokens out of range anywhere in the dataset: refused when training is set up, not when a step meets them.
        var bad = features
        bad[31, 3] = 5
        #expect(throws: NetworkError.self) {
            try MiniBatchTraining(
                network: try Self.network(Float.self), optimizer: try Adam<Float>(learningRate: 0.05),
                dataset: try Dataset(features: bad, targets: targets), batchSize: 8, seed: 1)
        }
        // A labelled dataset's one-hot rows are not class indices per position.
        let labelled = try Dataset<Float>.classification(
            features: features, labels: Array(repeating: 1, count: 32), classNames: ["a", "b", "c", "d"])
        #expect(
            throws: NetworkError.lossMismatch(
                "sequenceCrossEntropy takes a class index per position as its targets, not a labelled dataset's one-hot rows")
        ) {
            try MiniBatchTraining(
                network: try Self.network(Float.self), optimizer: try Adam<Float>(learningRate: 0.05), dataset: labelled, batchSize: 8, seed: 1)
        }
    }

    @Test("A gradient check of a token network checks its parameters; asked for the inputs, it says why not")
    func gradientCheck() throws {
        let network = try Self.network(Double.self)
        let x = try Tensor<Double>(rows: [[0, 1, 2, 3], [4, 4, 0, 1]])
        let t = try Tensor<Double>(rows: [[1, 2, 3, 4], [4, 0, 1, -1]])
        let report = try GradientCheck().run(on: network, inputs: x, targets: t)
        #expect(report.passed, "\(report)")
        let withInputs = try GradientCheck(checkInputs: true)
        #expect(
            message { () throws(NetworkError) in try withInputs.run(on: network, inputs: x, targets: t) }
                == "layer 0 Embedding(5→3): it reads token indices, which have no gradient: check its parameters only (checkInputs false)")
    }
}
