import Testing

@testable import NeuronCore

/// The layers a random sequence network stacks between its embedding and its output layer, in
/// this order. A new kind (a recurrent layer) is a case here and a line in ``make(after:using:)``;
/// every random network then includes it, and the kinds test expects its name.
enum SequenceLayerKind: String, CaseIterable {
    case positionEmbedding
    case contextWindow
    case dense
    case rnn
    case gru
    case attention
    case layerNorm
    case gelu

    /// The name the layer's description starts with.
    var name: String {
        switch self {
        case .positionEmbedding: "PositionEmbedding"
        case .contextWindow: "ContextWindow"
        case .dense: "Dense"
        case .rnn: "RNN"
        case .gru: "GRU"
        case .attention: "CausalSelfAttention"
        case .layerNorm: "LayerNorm"
        case .gelu: "GELU"
        }
    }

    /// A layer of this kind for samples of `shape = [time, features]`, its sizes drawn from `g`.
    func make(after shape: [Int], using g: inout SeededGenerator) throws -> any Layer<Double> {
        let (time, features) = (shape[0], shape[1])
        switch self {
        case .positionEmbedding:
            return try PositionEmbedding<Double>(time: time, features: features)
        case .contextWindow:
            return try ContextWindow<Double>(time: time, features: features, size: 1 + g.index(below: 3))
        case .dense:
            let activation: Activation = g.index(below: 3) == 0 ? .sigmoid : .tanh  // smooth: no kink for a difference to straddle
            return try Dense<Double>(features, 1 + g.index(below: 4), activation: activation, time: time)
        case .rnn:
            return try RNN<Double>(time: time, inputs: features, hidden: 1 + g.index(below: 4))
        case .gru:
            return try GRU<Double>(time: time, inputs: features, hidden: 1 + g.index(below: 4))
        case .attention:
            let divisors = (1...features).filter { features % $0 == 0 }
            return try CausalSelfAttention<Double>(time: time, features: features, heads: divisors[g.index(below: divisors.count)])
        case .layerNorm:
            return try LayerNorm<Double>(shape: shape)
        case .gelu:
            return try GELU<Double>(shape: shape, approximation: g.index(below: 2) == 0 ? .none : .tanh)
        }
    }
}

/// A realistic mistake in one sequence layer's backward pass, or in the sequence loss's gradient,
/// planted by ``PlantedInSequence``.
enum PlantedSequenceBug: String, Sendable, CaseIterable {
    /// Embedding: each position's gradient scattered into the next token's row.
    case scatteredIntoWrongRow
    /// Embedding: a token's row set to its last position's gradient instead of summing every position's.
    case duplicatesNotAccumulated
    /// PositionEmbedding: the weight's gradient from the first sample only, not summed over the batch.
    case notSummedOverBatch
    /// ContextWindow: every slice's gradient sent back one position late.
    case windowOffByOne
    /// Dense per position: the bias gradient from the first position of each sample only.
    case biasFromFirstPosition
    /// The loss: the gradient divided by all positions, padding included, instead of the counted
    /// ones. Planted where the loss gradient enters the output layer.
    case dividedByAllPositions
}

/// A layer with a bug planted in its backward pass: forward is the real layer's, backward the
/// real one's followed by the bug's damage (or, for the loss's bug, the real one's of a wrong
/// loss gradient).
struct PlantedInSequence<Scalar: TensorScalar>: Layer {
    var layer: any Layer<Scalar>
    let bug: PlantedSequenceBug
    /// For ``PlantedSequenceBug/dividedByAllPositions``: counted positions / all positions, the
    /// factor by which the wrong gradient differs from the right one.
    var countedShare: Scalar = 1
    var damaged = Tensor<Scalar>(zeros: [0, 0])

    var inputShape: [Int] { layer.inputShape }
    var outputShape: [Int] { layer.outputShape }
    var parameterShapes: [(name: String, shape: [Int])] { layer.parameterShapes }
    var description: String { "Planted(\(bug), \(layer))" }
    var output: Tensor<Scalar> { layer.output }
    var inputGradient: Tensor<Scalar> { damaged }

    func initialize(parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>, using generator: inout SeededGenerator)
    {
        layer.initialize(parameters: parameters, state: state, using: &generator)
    }
    mutating func forward(_ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>, mode: LayerMode) {
        layer.forward(x, parameters: parameters, state: state, mode: mode)
    }
    func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        PlantedInSequence<Other>(layer: layer.converted(to: Other.self), bug: bug, countedShare: Other(countedShare))
    }

    mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>, computeInputGradient: Bool
    ) {
        let before = Array(gradients)
        var dy = dy
        if bug == .dividedByAllPositions {
            // (p - onehot) / all instead of / counted: the right gradient times counted / all.
            for i in 0..<dy.count { dy[i] *= countedShare }
        }
        layer.backward(input: x, outputGradient: dy, parameters: parameters, gradients: gradients, computeInputGradient: computeInputGradient)
        damaged = layer.inputGradient
        switch bug {
        case .scatteredIntoWrongRow, .duplicatesNotAccumulated:
            let embedding = layer as! Embedding<Scalar>
            let features = embedding.features
            for i in 0..<gradients.count { gradients[i] = before[i] }
            for position in 0..<x.count {
                let token = Int(x[position])
                let row = bug == .scatteredIntoWrongRow ? (token + 1) % embedding.vocabulary : token
                for j in 0..<features {
                    let g = dy[position * features + j]
                    if bug == .scatteredIntoWrongRow {
                        gradients[row * features + j] += g
                    } else {
                        gradients[row * features + j] = before[row * features + j] + g  // the last position wins
                    }
                }
            }
        case .notSummedOverBatch:
            let sample = gradients.count  // (time, features): one sample's dy
            for i in 0..<sample { gradients[i] = before[i] + dy[i] }
        case .windowOffByOne:
            let window = layer as! ContextWindow<Scalar>
            let (time, features, size) = (window.time, window.features, window.size)
            damaged = Tensor(zeros: x.shape)
            for b in 0..<x.count / (time * features) {
                for t in 0..<time {
                    for j in 0..<size {
                        let source = t - size + 2 + j  // one late: t - size + 1 + j is right
                        guard (0..<time).contains(source) else { continue }
                        for i in 0..<features { damaged[(b * time + source) * features + i] += dy[((b * time + t) * size + j) * features + i] }
                    }
                }
            }
        case .biasFromFirstPosition:
            let dense = layer as! Dense<Scalar>
            let (time, outputs, bias) = (dense.time!, dense.outputs, dense.inputs * dense.outputs)
            let dz = dense.cache.preActivationGradient
            for j in 0..<outputs {
                gradients[bias + j] = before[bias + j]
                for b in 0..<dz.rows / time { gradients[bias + j] += dz[b * time, j] }
            }
        case .dividedByAllPositions:
            break
        }
    }
}

@Suite("Whole-network gradient check of sequence networks")
struct SequenceNetworkGradientCheckTests {
    /// A random small sequence network, `Embedding → [each kind of SequenceLayerKind] → Dense(per
    /// position, identity)` with ``Loss/sequenceCrossEntropy``, with a batch of tokens and targets
    /// that hold padding and at least one counted position; every size drawn from `seed`.
    static func randomCase(seed: UInt64) throws -> (Network<Double>, Tensor<Double>, Tensor<Double>) {
        var g = SeededGenerator(seed: seed)
        let (batch, time, vocabulary) = (2 + g.index(below: 3), 2 + g.index(below: 5), 2 + g.index(below: 5))
        var layers: [any Layer<Double>] = [try Embedding<Double>(vocabulary: vocabulary, features: 1 + g.index(below: 4), time: time)]
        for kind in SequenceLayerKind.allCases { layers.append(try kind.make(after: layers.last!.outputShape, using: &g)) }
        layers.append(try Dense<Double>(layers.last!.outputShape[1], vocabulary, activation: .identity, time: time))
        var network = try Network<Double>(layers, loss: .sequenceCrossEntropy)
        network.initialize(seed: seed)
        let x = randomTokens(batch: batch, time: time, vocabulary: vocabulary, using: &g)
        return (network, x, randomTargets(batch: batch, time: time, vocabulary: vocabulary, using: &g))
    }

    /// Tokens drawn from `0..<vocabulary`: with a small vocabulary, tokens repeat within a batch.
    static func randomTokens(batch: Int, time: Int, vocabulary: Int, using g: inout SeededGenerator) -> Tensor<Double> {
        var x = Tensor<Double>(zeros: [batch, time])
        for i in 0..<x.count { x[i] = Double(g.index(below: vocabulary)) }
        return x
    }

    /// Class indices with about a quarter padding (-1), at least one padding and one counted position.
    static func randomTargets(batch: Int, time: Int, vocabulary: Int, using g: inout SeededGenerator) -> Tensor<Double> {
        var t = Tensor<Double>(zeros: [batch, time])
        for i in 0..<t.count { t[i] = g.index(below: 4) == 0 ? -1 : Double(g.index(below: vocabulary)) }
        let padding = g.index(below: t.count)
        t[padding] = -1
        t[(padding + 1) % t.count] = Double(g.index(below: vocabulary))
        return t
    }

    @Test("100 random sequence networks, every sequence layer in each, pass: every parameter, padding in the targets")
    func randomNetworksPass() throws {
        var kinds: Set<String> = []
        for seed in UInt64(1)...100 {
            let (network, x, t) = try Self.randomCase(seed: seed)
            for layer in network.layers { kinds.insert(String(layer.description.prefix { $0 != "(" })) }
            let report = try GradientCheck().run(on: network, inputs: x, targets: t)
            #expect(report.passed, "seed \(seed), \(network): \(report)")
            #expect(report.tensors.map(\.checked).reduce(0, +) == network.parameterCount)
        }
        #expect(kinds == Set(["Embedding"] + SequenceLayerKind.allCases.map(\.name)))
    }

    /// `[Embedding(4→3), PositionEmbedding(5×3), ContextWindow(2×3→6), Dense(6→4, tanh, per
    /// position), Dense(4→4, identity, per position)]` with the bug's layer in its place, a batch
    /// of 3 with repeated tokens, and targets with padding.
    static func plantedCase(_ bug: PlantedSequenceBug) throws -> (Network<Double>, x: Tensor<Double>, t: Tensor<Double>, planted: Int) {
        var layers: [any Layer<Double>] = [
            try Embedding<Double>(vocabulary: 4, features: 3, time: 5), try PositionEmbedding<Double>(time: 5, features: 3),
            try ContextWindow<Double>(time: 5, features: 3, size: 2), try Dense<Double>(6, 4, activation: .tanh, time: 5),
            try Dense<Double>(4, 4, activation: .identity, time: 5),
        ]
        let x = try Tensor<Double>(rows: [[0, 1, 1, 3, 0], [2, 2, 2, 1, 0], [3, 0, 1, 2, 3]])
        let t = try Tensor<Double>(rows: [[1, 1, 3, 0, -1], [2, 1, 0, -1, -1], [0, 1, 2, 3, 0]])
        let planted: Int
        switch bug {
        case .scatteredIntoWrongRow, .duplicatesNotAccumulated: planted = 0
        case .notSummedOverBatch: planted = 1
        case .windowOffByOne: planted = 2
        case .biasFromFirstPosition: planted = 3
        case .dividedByAllPositions: planted = 4
        }
        var victim = PlantedInSequence(layer: layers[planted], bug: bug)
        victim.countedShare = 12.0 / 15  // 12 of the 15 positions count
        layers[planted] = victim
        var network = try Network<Double>(layers, loss: .sequenceCrossEntropy)
        network.initialize(seed: 7)
        return (network, x, t, planted)
    }

    @Test(
        "A bug planted in each sequence layer's backward, and in the loss's gradient, is caught; the report names where",
        arguments: PlantedSequenceBug.allCases)
    func plantedBug(_ bug: PlantedSequenceBug) throws {
        let (network, x, t, planted) = try Self.plantedCase(bug)
        let report = try GradientCheck().run(on: network, inputs: x, targets: t)
        #expect(!report.passed, "\(bug) went unnoticed: \(report)")
        let failing = report.failingTensors.map(\.name)
        switch bug {
        case .scatteredIntoWrongRow, .duplicatesNotAccumulated, .notSummedOverBatch:
            // A wrong weight gradient: that weight's alone.
            #expect(failing == ["layers.\(planted).weight"], "\(report)")
        case .windowOffByOne:
            // A wrong input gradient: every tensor before the window is handed it, none after.
            #expect(failing == ["layers.0.weight", "layers.1.weight"], "\(report)")
        case .biasFromFirstPosition:
            #expect(failing == ["layers.\(planted).bias"], "\(report)")
        case .dividedByAllPositions:
            // The loss's gradient is where backward starts: every tensor is off by 12/15.
            #expect(failing == network.parameterTensors.map(\.name), "\(report)")
        }
    }

    @Test("Dividing by all positions is only wrong when there is padding: without it the check cannot tell")
    func divisorNeedsPadding() throws {
        let (network, x, _, _) = try Self.plantedCase(.dividedByAllPositions)
        // The same layers with the factor of a batch without padding (15 of 15): the planted gradient is the right one.
        let layers = network.layers.map { layer -> any Layer<Double> in
            guard var planted = layer as? PlantedInSequence<Double> else { return layer }
            planted.countedShare = 1
            return planted
        }
        var unpadded = try Network<Double>(layers, loss: .sequenceCrossEntropy)
        unpadded.parameters = network.parameters
        let t = try Tensor<Double>(rows: [[1, 1, 3, 0, 2], [2, 1, 0, 3, 3], [0, 1, 2, 3, 0]])
        #expect(try GradientCheck().run(on: unpadded, inputs: x, targets: t).passed)
    }
}
