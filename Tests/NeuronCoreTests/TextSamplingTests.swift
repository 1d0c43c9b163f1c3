import Testing

@testable import NeuronCore

@Suite("Text sampling: lines drawn past the block, the context cropped to its last positions")
struct TextSamplingTests {
    /// A bigram model over ⏎ a b c (tokens 0…3) reading 2 positions: its embedding is the table of
    /// logits, which makes ⏎ → a, a → b, b → c and c → ⏎ all but certain (and, with `loop`, a → a).
    static func chain(loop: Bool = false) throws -> Network<Double> {
        var network = try Network<Double>([try Embedding<Double>(vocabulary: 4, features: 4, time: 2)], loss: .sequenceCrossEntropy)
        var table = [Double](repeating: -50, count: 16)
        for (from, to) in [(0, 1), (1, loop ? 1 : 2), (2, 3), (3, 0)] { table[from * 4 + to] = 50 }
        network.parameters = table
        return network
    }

    @Test("A chain longer than the block is drawn to its end: ⏎ a b c ⏎ gives abc through a 2-position window")
    func longerThanTheBlock() throws {
        var network = try Self.chain()
        var generator = SeededGenerator(seed: 1)
        let lines = try network.sampleLines(count: 3, rule: SamplingRule(), using: &generator)
        #expect(lines == [[1, 2, 3], [1, 2, 3], [1, 2, 3]])
        // A prefix longer than the block continues from its last character.
        let continued = try network.sampleLines(count: 1, prefix: [1, 2, 3, 1], rule: SamplingRule(), using: &generator)
        #expect(continued == [[1, 2, 3, 1, 2, 3]])
    }

    @Test("A line the model never closes ends at maximumLength (default four blocks)")
    func maximumLength() throws {
        var network = try Self.chain(loop: true)
        var generator = SeededGenerator(seed: 2)
        #expect(try network.sampleLines(count: 1, rule: SamplingRule(), using: &generator) == [[1] + Array(repeating: 1, count: 7)])
        #expect(try network.sampleLines(count: 2, rule: SamplingRule(), maximumLength: 3, using: &generator) == [[1, 1, 1], [1, 1, 1]])
        #expect(throws: NetworkError.self) {
            try network.sampleLines(count: 1, prefix: [1, 1, 1], rule: SamplingRule(), maximumLength: 3, using: &generator)
        }
    }

    @Test("The next token's probabilities after a long prefix are those after its last `time` tokens")
    func probabilitiesCropped() throws {
        // Embedding(4→3) → CausalSelfAttention → Dense(3→4): position 1's scores depend on both positions read.
        var network = try Network<Double>(
            [
                try Embedding<Double>(vocabulary: 4, features: 3, time: 2), try CausalSelfAttention<Double>(time: 2, features: 3, heads: 1),
                try Dense<Double>(3, 4, activation: .identity, time: 2),
            ], loss: .sequenceCrossEntropy)
        network.initialize(seed: 9)
        let rule = try SamplingRule()
        let long = try network.nextTokenProbabilities(after: [0, 1, 2, 3, 2], rule: rule)
        let window = try network.nextTokenProbabilities(after: [3, 2], rule: rule)
        #expect(long == window)
        #expect(long != (try network.nextTokenProbabilities(after: [1, 2], rule: rule)))
    }
}
