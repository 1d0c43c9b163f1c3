import Foundation
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
        let lines = try network.sampleLines(count: 3, rule: SamplingRule(), seed: 1)
        #expect(lines == [[1, 2, 3], [1, 2, 3], [1, 2, 3]])
        // A prefix longer than the block continues from its last character.
        let continued = try network.sampleLines(count: 1, prefix: [1, 2, 3, 1], rule: SamplingRule(), seed: 1)
        #expect(continued == [[1, 2, 3, 1, 2, 3]])
    }

    @Test("A line the model never closes ends at maximumLength (default four blocks)")
    func maximumLength() throws {
        var network = try Self.chain(loop: true)
        #expect(try network.sampleLines(count: 1, rule: SamplingRule(), seed: 1) == [[1] + Array(repeating: 1, count: 7)])
        #expect(try network.sampleLines(count: 2, rule: SamplingRule(), maximumLength: 3, seed: 1) == [[1, 1, 1], [1, 1, 1]])
        #expect(throws: NetworkError.self) {
            try network.sampleLines(count: 1, prefix: [1, 1, 1], rule: SamplingRule(), maximumLength: 3, seed: 1)
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

    @Test("Line i depends on the seed and i alone: the first line of 5 is the line of 1, and lines drawn in groups are the lines drawn at once")
    func lineByIndex() throws {
        // Embedding(4→4) → Dense(4→4) at random: every continuation has some probability, so draws differ.
        var network = try Network<Double>(
            [try Embedding<Double>(vocabulary: 4, features: 4, time: 3), try Dense<Double>(4, 4, activation: .identity, time: 3)],
            loss: .sequenceCrossEntropy)
        network.initialize(seed: 4)
        let rule = try SamplingRule()
        let five = try network.sampleLines(count: 5, rule: rule, seed: 7)
        #expect(try network.sampleLines(count: 1, rule: rule, seed: 7) == Array(five.prefix(1)))
        #expect(try network.sampleLines(count: 2, rule: rule, seed: 7) == Array(five.prefix(2)))
        #expect(try network.sampleLines(count: 3, rule: rule, seed: 7, firstLine: 2) == Array(five.suffix(3)))
        #expect(Set(five).count > 1, "the lines are not all alike: the streams differ")
        #expect(try network.sampleLines(count: 5, rule: rule, seed: 8) != five)
    }

    @Test("A rule that excludes the boundary gives it 0 and renormalizes the rest, before top-k: scores (5, 0, ln 3) give (0, ¼, ¾)")
    func excludesBoundary() throws {
        let scores: [Double] = [5, 0, log(3)]
        let p = try SamplingRule(excludesBoundary: true).probabilities(scores)
        #expect(p[0] == 0 && abs(p[1] - 0.25) < 1e-15 && abs(p[2] - 0.75) < 1e-15, "\(p)")
        // Top-1 among the characters is token 2, though the boundary scores highest.
        #expect(try SamplingRule(topK: 1, excludesBoundary: true).probabilities(scores) == [0, 0, 1])
        #expect(try SamplingRule(topK: 1).probabilities(scores) == [1, 0, 0])
        // ⏎ a b c chained: a greedy continuation of c would draw ⏎; excluding it, the next likeliest.
        var network = try Self.chain()
        let drawn = try network.continueText([3], length: 4, rule: try SamplingRule(excludesBoundary: true), seed: 1)
        #expect(!drawn.contains(Vocabulary.boundary) && drawn.count == 4, "\(drawn)")
    }

    @Test("A temperature so small that scores/temperature overflow (1e-309, 5e-324) is the greedy choice, not NaN")
    func subnormalTemperature() throws {
        let scores: [Double] = [1.5, 3.0, -2.0, 3.0]
        for temperature in [1e-300, Double.leastNormalMagnitude / 3, Double.leastNonzeroMagnitude] {  // 1e-300, 7.4e-309, 5e-324
            let p = try SamplingRule(temperature: temperature).probabilities(scores)
            // Two tokens tie for the highest score: they share the probability, as the softmax's limit does.
            #expect(p == [0, 0.5, 0, 0.5], "temperature \(temperature): \(p)")
        }
        // At an ordinary temperature the softmax is the textbook one: exp(sᵢ/T)/Σ exp(sⱼ/T), written out.
        let t = 0.7, e = scores.map { Foundation.exp($0 / t) }, sum = e.reduce(0, +)
        let p = try SamplingRule(temperature: t).probabilities(scores)
        for (a, b) in zip(p, e.map { $0 / sum }) { #expect(abs(a - b) < 1e-15) }
    }

    @Test("Scores that are not finite are refused by name, not turned into NaN probabilities or empty lines")
    func nonFiniteScores() throws {
        #expect(throws: NetworkError.invalidValue("the model's score for token 2 is inf, not a finite number: its weights give non-finite outputs")) {
            try SamplingRule().probabilities([1.0, 2.0, .infinity])
        }
        var network = try Self.chain()
        network.parameters = network.parameters.map { $0 < 0 ? -Double.greatestFiniteMagnitude : Double.greatestFiniteMagnitude }
        network.parameters[0] = .nan
        #expect(throws: NetworkError.self) { try network.sampleLines(count: 2, rule: SamplingRule(), seed: 1) }
        #expect(throws: NetworkError.self) { try network.nextTokenProbabilities(after: [0], rule: SamplingRule()) }
    }
}
