import Foundation
import Testing

@testable import NeuronCore

@Suite("Text generation: a prompt continued token by token, with the layers' caches or by whole passes")
struct TextGenerationTests {
    /// How a test transformer is built: nanoGPT's blocks, as NeuronTraining's builder lays them out.
    struct Shape: CustomStringConvertible {
        var vocabulary = 7, features = 8, heads = 2, time = 8, blocks = 2
        var tied = false, rms = false, dropout = 0.0
        var description: String {
            "\(blocks) blocks, \(heads) heads, \(features) features, block \(time)" + (tied ? ", tied" : "") + (rms ? ", RMSNorm" : "")
                + (dropout > 0 ? ", dropout" : "")
        }
    }

    /// Embedding → PositionEmbedding → [Dropout] → blocks × (Residual[norm → attention → [Dropout]],
    /// Residual[norm → Dense → GELU → Dense → [Dropout]]) → norm → Dense or TiedHead, its parameters
    /// drawn wider than nanoGPT's start (N(0, 0.3²) added to each), so that attention is peaked and
    /// every position read changes the distribution: a model that has learned something, roughly.
    static func transformer<Scalar: TensorScalar>(_: Scalar.Type, _ s: Shape, seed: UInt64) throws -> Network<Scalar> {
        let sequence = [s.time, s.features]
        func norm() throws -> any Layer<Scalar> { s.rms ? try RMSNorm<Scalar>(shape: sequence) : try LayerNorm<Scalar>(shape: sequence) }
        func dropout() throws -> [any Layer<Scalar>] { s.dropout > 0 ? [try Dropout<Scalar>(input: sequence, rate: s.dropout)] : [] }
        var layers: [any Layer<Scalar>] = [
            try Embedding<Scalar>(vocabulary: s.vocabulary, features: s.features, time: s.time),
            try PositionEmbedding<Scalar>(time: s.time, features: s.features),
        ]
        layers += try dropout()
        for _ in 0..<s.blocks {
            layers.append(
                try Residual<Scalar>([try norm(), try CausalSelfAttention<Scalar>(time: s.time, features: s.features, heads: s.heads)] + dropout()))
            layers.append(
                try Residual<Scalar>(
                    [
                        try norm(), try Dense<Scalar>(s.features, 2 * s.features, activation: .identity, time: s.time),
                        try GELU<Scalar>(shape: [s.time, 2 * s.features]),
                        try Dense<Scalar>(2 * s.features, s.features, activation: .identity, time: s.time),
                    ] + dropout()))
        }
        layers.append(try norm())
        layers.append(
            s.tied
                ? try TiedHead<Scalar>(time: s.time, features: s.features, vocabulary: s.vocabulary)
                : try Dense<Scalar>(s.features, s.vocabulary, activation: .identity, time: s.time))
        var network = try Network<Scalar>(layers, loss: .sequenceCrossEntropy)
        network.initialize(seed: seed)
        var g = SeededGenerator(seed: seed &+ 1)
        for i in network.parameters.indices { network.parameters[i] += Scalar(0.3 * g.normal()) }
        return network
    }

    static let shapes: [Shape] = [
        Shape(), Shape(tied: true), Shape(rms: true), Shape(dropout: 0.2), Shape(heads: 1, time: 5, blocks: 1, tied: true, rms: true, dropout: 0.1),
        // From block 128 attention trains on its tiled path: the prompt's pass fills the cache all the same.
        Shape(time: 130, blocks: 1),
    ]

    static func randomText(_ count: Int, vocabulary: Int, using g: inout SeededGenerator) -> [Int] {
        (0..<count).map { _ in g.index(below: vocabulary) }
    }

    // MARK: The same text both ways

    @Test("Double: the cache gives the reference's tokens, token for token, past the block and from prompts longer than it", arguments: shapes)
    func cachedIsReference(shape: Shape) throws {
        var network = try Self.transformer(Double.self, shape, seed: 3)
        #expect(network.layers.allSatisfy { $0.runsByPosition }, "every layer of \(shape) decodes by position")
        var g = SeededGenerator(seed: 11), texts: Set<[Int]> = []
        for seed in UInt64(0)..<12 {
            // 1 token, a few, exactly the block, and longer than the block; 3 blocks drawn.
            let context = Self.randomText([1, 3, shape.time, shape.time + 3][Int(seed) % 4], vocabulary: shape.vocabulary, using: &g)
            let rule = try SamplingRule(temperature: [1, 0.7, 1.5][Int(seed) % 3], topK: seed % 5 == 4 ? 3 : nil)
            let cached = try network.continueText(context, length: 3 * shape.time, rule: rule, seed: seed)
            let reference = try network.continueText(context, length: 3 * shape.time, rule: rule, seed: seed, cache: false)
            #expect(cached == reference, "\(shape), seed \(seed), context \(context)")
            texts.insert(cached)
        }
        #expect(texts.count > 6, "the texts differ from seed to seed: the test can tell them apart")
    }

    /// The largest gap between the probabilities the two paths give after each prefix of one
    /// random text, the tokens given rather than drawn.
    static func probabilityGap<Scalar: TensorScalar>(_: Scalar.Type, _ shape: Shape, context: Int) throws -> Double {
        var network = try transformer(Scalar.self, shape, seed: 5), reference = network
        var g = SeededGenerator(seed: 6)
        let text = randomText(context + 3 * shape.time, vocabulary: shape.vocabulary, using: &g), rule = try SamplingRule()
        var gap = 0.0
        _ = try network.continueText(Array(text.prefix(context)), length: text.count - context, rule: rule, cache: true) { p, drawn in
            let expected = try! reference.nextTokenProbabilities(after: Array(text.prefix(context + drawn)), rule: rule)
            gap = max(gap, zip(p, expected).map { abs($0 - $1) }.max()!)
            return text[context + drawn]
        }
        return gap
    }

    @Test(
        "After every prefix, inside the block and past it, the cached probabilities are nextTokenProbabilities' (Double 1e-13, Float 1e-5)",
        arguments: shapes)
    func probabilities(shape: Shape) throws {
        // The two differ in the order of their sums alone (a gemv against a gemm's row, one row's
        // exp against the whole block's): ε times the few hundred operations on the way to a
        // probability ≤ 1, 2.2e-16 · 500 ≈ 1e-13 and 1.2e-7 · 100 ≈ 1e-5 (measured: 4e-16 and 2e-7).
        for context in [1, 4] {
            let double = try Self.probabilityGap(Double.self, shape, context: context)
            #expect(double <= 1e-13, "\(shape), Double: off by \(double)")
            let float = try Self.probabilityGap(Float.self, shape, context: context)
            #expect(float <= 1e-5, "\(shape), Float: off by \(float)")
        }
    }

    @Test("Float: the cache gives the reference's tokens up to rounding: where they part, the draw sat within 1e-4 of a boundary between two tokens")
    func floatTokens() throws {
        let shape = Shape(tied: true)
        var network = try Self.transformer(Float.self, shape, seed: 3)
        var g = SeededGenerator(seed: 12)
        let rule = try SamplingRule()
        for seed in UInt64(0)..<12 {
            let context = Self.randomText(1 + Int(seed) % 4, vocabulary: shape.vocabulary, using: &g)
            let cached = try network.continueText(context, length: 3 * shape.time, rule: rule, seed: seed)
            let reference = try network.continueText(context, length: 3 * shape.time, rule: rule, seed: seed, cache: false)
            guard let part = cached.indices.first(where: { cached[$0] != reference[$0] }) else { continue }
            // The uniform draw of token `part`, and the running sums it was compared with.
            var draws = SeededGenerator(seed: seed)
            for _ in 0..<part { _ = draws.nextUnit() }
            let u = draws.nextUnit()
            let p = try network.nextTokenProbabilities(after: context + reference.prefix(part), rule: rule)
            let sums = p.indices.map { p[...$0].reduce(0, +) }
            #expect(sums.contains { abs($0 - u) < 1e-4 }, "seed \(seed): the paths part at token \(part), draw \(u), running sums \(sums)")
        }
    }

    // MARK: Worked by hand

    /// The bigram chain of TextSamplingTests: ⏎ → a → b → c → ⏎ all but certain, over 2 positions.
    static func chain() throws -> Network<Double> {
        var network = try Network<Double>([try Embedding<Double>(vocabulary: 4, features: 4, time: 2)], loss: .sequenceCrossEntropy)
        var table = [Double](repeating: -50, count: 16)
        for (from, to) in [(0, 1), (1, 2), (2, 3), (3, 0)] { table[from * 4 + to] = 50 }
        network.parameters = table
        return network
    }

    @Test("The boundary token ends nothing: ⏎ continues as a b c ⏎ a b c ⏎ through a 2-position block, both ways")
    func boundaryDrawnLikeAnyToken() throws {
        var network = try Self.chain()
        let rule = try SamplingRule()
        for cache in [true, false] {
            #expect(try network.continueText([0], length: 8, rule: rule, seed: 1, cache: cache) == [1, 2, 3, 0, 1, 2, 3, 0])
            #expect(try network.continueText([2, 3, 0, 1], length: 3, rule: rule, seed: 1, cache: cache) == [2, 3, 0])
            #expect(try network.continueText([1], length: 0, rule: rule, seed: 1, cache: cache) == [])
        }
    }

    // MARK: Layers that do not run by position

    @Test("A recurrent model decodes by whole passes, with or without the cache asked for: each token nextTokenProbabilities' draw")
    func recurrentTakesTheReference() throws {
        var network = try Network<Double>(
            [
                try Embedding<Double>(vocabulary: 5, features: 4, time: 6), try GRU<Double>(time: 6, inputs: 4, hidden: 8),
                try Dense<Double>(8, 5, activation: .identity, time: 6),
            ], loss: .sequenceCrossEntropy)
        network.initialize(seed: 2)
        for i in network.parameters.indices { network.parameters[i] *= 3 }
        #expect(!network.layers[1].runsByPosition)
        let rule = try SamplingRule(), context = [0, 3]
        var text = context, draws = SeededGenerator(seed: 9)
        for _ in 0..<15 { text.append(Network<Double>.draw(try network.nextTokenProbabilities(after: text, rule: rule), using: &draws)) }
        let expected = Array(text.dropFirst(context.count))
        #expect(try network.continueText(context, length: 15, rule: rule, seed: 9) == expected)
        #expect(try network.continueText(context, length: 15, rule: rule, seed: 9, cache: false) == expected)
        #expect(Set(expected).count > 1, "the draws differ: the test can tell texts apart")
    }

    @Test("runsByPosition: the position-wise layers and attention over a sequence; not recurrent layers, a context window or a layer over vectors")
    func runsByPosition() throws {
        let yes: [any Layer<Double>] = [
            try LayerNorm<Double>(shape: [4, 3]), try RMSNorm<Double>(shape: [4, 3]), try GELU<Double>(shape: [4, 3]),
            try Dropout<Double>(input: [4, 3], rate: 0.5), try Dense<Double>(3, 2, activation: .tanh, time: 4),
            try Residual<Double>([try LayerNorm<Double>(shape: [4, 3]), try CausalSelfAttention<Double>(time: 4, features: 3, heads: 1)]),
        ]
        let no: [any Layer<Double>] = [
            try LayerNorm<Double>(shape: [3]), try Dense<Double>(3, 2), try GRU<Double>(time: 4, inputs: 3, hidden: 2),
            try RNN<Double>(time: 4, inputs: 3, hidden: 2), try ContextWindow<Double>(time: 4, features: 3, size: 2),
            try Residual<Double>([try LayerNorm<Double>(shape: [4, 3]), try GRU<Double>(time: 4, inputs: 3, hidden: 3)]),
        ]
        for layer in yes { #expect(layer.runsByPosition, "\(layer)") }
        for layer in no { #expect(!layer.runsByPosition, "\(layer)") }
    }

    // MARK: Each layer at one position

    @Test(
        "Each layer at positions t, t+1, … from a pass whose later positions held other inputs gives its whole pass's output (and attention's weights)"
    )
    func layerSteps() throws {
        let (time, features) = (6, 4)
        let layers: [any Layer<Double>] = [
            try PositionEmbedding<Double>(time: time, features: features), try LayerNorm<Double>(shape: [time, features]),
            try RMSNorm<Double>(shape: [time, features]), try GELU<Double>(shape: [time, features], approximation: .tanh),
            try Dropout<Double>(input: [time, features], rate: 0.5), try Dense<Double>(features, 5, activation: .tanh, time: time),
            try CausalSelfAttention<Double>(time: time, features: features, heads: 2),
            try Residual<Double>([
                try RMSNorm<Double>(shape: [time, features]), try CausalSelfAttention<Double>(time: time, features: features, heads: 1),
            ]),
        ]
        var g = SeededGenerator(seed: 21)
        for layer in layers {
            let parameters = (0..<layer.parameterCount).map { _ in g.uniform(-1, 1) }
            var state: [Double] = []
            let x = Tensor<Double>.random([1, time, features], using: &g)
            var whole = layer, stepped = layer
            parameters.withUnsafeBufferPointer { p in
                state.withUnsafeMutableBufferPointer { s in
                    whole.forward(x, parameters: p, state: s, mode: .evaluation)
                    // Positions 2… first hold other inputs, then arrive one at a time.
                    var y = x
                    for i in 2 * features..<y.count { y[i] = g.uniform(-3, 3) }
                    stepped.forward(y, parameters: p, state: s, mode: .evaluation)
                    for t in 2..<time {
                        for i in t * features..<(t + 1) * features { y[i] = x[i] }
                        stepped.forward(position: t, y, parameters: p, state: s)
                    }
                }
            }
            expectClose(stepped.output.scalars, whole.output.scalars, tolerance: 1e-13)
            if let a = whole as? CausalSelfAttention<Double>, let b = stepped as? CausalSelfAttention<Double> {
                expectClose(b.attentionWeights.scalars, a.attentionWeights.scalars, tolerance: 1e-14)
            }
        }
    }

    // MARK: Errors

    @Test("An empty context, a token outside the vocabulary, a negative length and a model that is not over tokens are refused by name")
    func errors() throws {
        var network = try Self.transformer(Double.self, Shape(), seed: 1)
        let rule = try SamplingRule()
        for cache in [true, false] {
            #expect(
                message { () throws(NetworkError) in try network.continueText([], length: 3, rule: rule, seed: 1, cache: cache) }
                    .hasPrefix("an empty context"))
            #expect(throws: NetworkError.invalidValue("the context's token 2 is 7, outside the vocabulary: token indices are 0..<7")) {
                try network.continueText([0, 1, 7], length: 3, rule: rule, seed: 1, cache: cache)
            }
            #expect(throws: NetworkError.invalidValue("the context's token 0 is -1, outside the vocabulary: token indices are 0..<7")) {
                try network.continueText([-1], length: 3, rule: rule, seed: 1, cache: cache)
            }
            #expect(throws: NetworkError.invalidValue("a length of -1 tokens: the number of tokens to draw is 0 or more")) {
                try network.continueText([0], length: -1, rule: rule, seed: 1, cache: cache)
            }
        }
        var dense = try Network<Double>([try Dense<Double>(3, 4, activation: .softmax)], loss: .softmaxCrossEntropy)
        #expect(
            message { () throws(NetworkError) in try dense.continueText([0], length: 1, rule: rule, seed: 1) }
                .contains("is not a sequence model over tokens"))
    }
}
