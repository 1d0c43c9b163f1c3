import Foundation
import NeuronCore
import Testing

@testable import NeuronTraining

/// The model section of a document config with `transformer` as its model.
private func transformer(_ transformer: String) throws -> ModelConfig {
    try config(
        """
        model: {transformer: \(transformer)}
        data: {kind: text, unit: document, path: tinyshakespeare.txt, blockSize: 64}
        training: {steps: 10, batchSize: 12}
        """
    ).model
}

@Suite("A step's cost, estimated before the first one, and the warning for a step of hours")
struct StepCostTests {
    @Test("Operations by hand: a dense layer's weights once per sample, per position over time, attention's scores on top, a token table free")
    func operations() throws {
        // Dense(3 → 4): 16 parameters used once, 2 operations each; a batch of 5, three passes.
        let dense = try Dense<Double>(3, 4)
        #expect(StepCost(layers: [dense], batch: 5).operations == Double(3 * 5 * 2 * 16))
        // Over 7 positions the same weights are used 7 times.
        let perPosition = try Dense<Double>(3, 4, time: 7)
        #expect(StepCost(layers: [perPosition], batch: 1).operations == Double(3 * 2 * 16 * 7))
        // Attention over time 10, 8 features: its 4 · 8 · 8 + 4 · 8 parameters at every position,
        // and the scores and weighted sum, 2 · 10² · 8.
        let attention = try CausalSelfAttention<Double>(time: 10, features: 8, heads: 2)
        #expect(attention.parameterCount == 4 * 64 + 4 * 8)
        let byHand: Double = 3 * 2 * (2 * 288 * 10 + 2 * 100 * 8)
        let cost = StepCost(layers: [attention], batch: 2)
        #expect(cost.operations == byHand && cost.attention == 3 * 2 * 2 * 100 * 8)
        #expect(cost.attentionShape?.features == 8 && cost.attentionShape?.heads == 2)
        // A token table is read, not multiplied; a container counts what is inside it.
        let table = try Embedding<Double>(vocabulary: 50, features: 8, time: 10)
        #expect(StepCost(layers: [table], batch: 9).operations == 0)
        let block = try Residual<Double>([attention])
        #expect(StepCost(layers: [table, block], batch: 2).operations == byHand)
    }

    @Test("The issue's block of 100,000 positions is a warning of hours at a rate this slow; the shipped Shakespeare's step is not measured")
    func warning() throws {
        // The D.yaml at blockSize 100,000: one block of 2 heads over 16 features, 66 tokens, batch 8.
        let layers = try transformer("{blocks: 1, heads: 2, features: 16}").layers(Double.self, features: 100_000, vocabulary: 66)
        let big = StepCost(layers: layers, batch: 8)
        #expect(big.attention == 3 * 8 * 2 * 1e10 * 16)
        #expect(big.products > 1e10 && big.products < 1e11, "\(big.products)")  // 12 · 16² weights and the head's 16 · 66, 10⁵ times
        var asked = 0
        let message = try #require(
            big.warning(rates: {
                asked += 1; return (1e11, 1e9)
            }))
        #expect(asked == 1)
        // 7.68e12 / 1e9 s of attention and under a second of products: 2.1 hours.
        #expect(message.contains("about 7.7e+12 floating-point operations") && message.contains("2.1 hours a step"), "\(message)")
        #expect(message.contains("100 GFLOP/s of matrix products and 1 of attention") && message.contains("data.blockSize"), "\(message)")
        // At rates that run it within ten minutes, nothing to say.
        #expect(big.warning(rates: { (1e11, 1e11) }) == nil)
        // The shipped Shakespeare recipe (4 blocks of 128 features, block 64, batch 12): far below
        // the bar, and the rates are not even measured.
        let shipped = try transformer("{blocks: 4, heads: 4, features: 128, tieWeights: true}").layers(Double.self, features: 64, vocabulary: 66)
        let small = StepCost(layers: shipped, batch: 12)
        #expect(small.operations > 1e9 && small.operations < 1e11, "\(small.operations)")
        #expect(
            small.warning(rates: {
                asked += 1; return (1, 1)
            }) == nil && asked == 1)
        #expect(StepCost.duration(90) == "2 minutes" && StepCost.duration(7200) == "2.0 hours" && StepCost.duration(3 * 86400) == "3.0 days")
    }

    @Test("The measured rates are positive and finite; without attention, none is measured for it")
    func rates() throws {
        let layers = try transformer("{blocks: 1, heads: 2, features: 16}").layers(Float.self, features: 300, vocabulary: 66)
        let rates = StepCost(layers: layers, batch: 1).rates()
        #expect(rates.products > 0 && rates.products.isFinite && rates.attention > 0 && rates.attention.isFinite, "\(rates)")
        #expect(StepCost(layers: [try Dense<Float>(3, 4)], batch: 1).rates().attention == .infinity)
    }
}
