import Foundation
import NeuronCore
import Testing

@testable import NeuronTraining

/// A text config over Data/words-small.txt (words of up to 17 letters) with `model.transformer`
/// given as YAML, and `extra` data keys.
private func transformer(_ sizes: String, extra: String = "") throws -> RunConfig {
    try config(
        """
        model: {transformer: \(sizes)}
        data: {kind: text, path: words-small.txt\(extra)}
        optimizer: {kind: adam, learningRate: 0.001}
        training: {epochs: 1, batchSize: 8, seed: 5, precision: double}
        """)
}

/// The message of the error that parsing `text` throws (data paths not checked), or "no error".
private func failure(_ text: String) -> String {
    do {
        _ = try ConfigLoader.parse(text, source: "run.yaml", baseDirectory: nil)
        return "no error"
    } catch {
        return error.description
    }
}

@Suite("model.transformer: nanoGPT's model from its sizes")
struct TransformerConfigTests {
    @Test("Two blocks of 2 heads over 8 features: nanoGPT's layers, in order, with the MLP 4·8 wide and a dense head")
    func layers() throws {
        let run = try RunBuilder.build(try transformer("{blocks: 2, heads: 2, features: 8}"))
        let engine = try #require(run.engine as? NetworkTrainingEngine<Double, Adam<Double>>)
        let network = engine.network
        // words-small's longest word has 17 letters: 18 positions, the position table as long.
        #expect(
            network.layers.map(\.description) == [
                "Embedding(27→8)", "PositionEmbedding(18×8)",
                "Residual[LayerNorm(18×8), CausalSelfAttention(8, 2 heads, time 18)]",
                "Residual[LayerNorm(18×8), Dense(8→32, identity, per position), GELU(18×32), Dense(32→8, identity, per position)]",
                "Residual[LayerNorm(18×8), CausalSelfAttention(8, 2 heads, time 18)]",
                "Residual[LayerNorm(18×8), Dense(8→32, identity, per position), GELU(18×32), Dense(32→8, identity, per position)]",
                "LayerNorm(18×8)", "Dense(8→27, identity, per position)",
            ])
        // Counted by hand: embeddings 27·8 + 18·8; per block 2·16 (norms) + 8·24 + 24 + 8·8 + 8 (attention) + 8·32 + 32 + 32·8 + 8 (MLP);
        // the final norm 16; the head 8·27 + 27.
        let block = 32 + 8 * 24 + 24 + 64 + 8 + 8 * 32 + 32 + 32 * 8 + 8
        #expect(network.parameterCount == 27 * 8 + 18 * 8 + 2 * block + 16 + 8 * 27 + 27)
        #expect(network.loss == .sequenceCrossEntropy && run.config.model.transformer?.blocks == 2 && run.config.model.layers.isEmpty)
    }

    @Test("Tied weights: the head reads the embedding's table, stored once; dropout layers when dropout > 0; a longer position table")
    func tiedDropoutPositions() throws {
        let run = try RunBuilder.build(
            try transformer("{blocks: 1, heads: 2, features: 4, mlpRatio: 2, dropout: 0.1, tieWeights: true, positions: 20}"))
        let network = try #require(run.engine as? NetworkTrainingEngine<Double, Adam<Double>>).network
        #expect(
            network.layers.map(\.description) == [
                "Embedding(27→4)", "PositionEmbedding(18 of 20×4)", "Dropout(18×4, rate 0.1)",
                "Residual[LayerNorm(18×4), CausalSelfAttention(4, 2 heads, time 18), Dropout(18×4, rate 0.1)]",
                "Residual[LayerNorm(18×4), Dense(4→8, identity, per position), GELU(18×8), Dense(8→4, identity, per position), Dropout(18×4, rate 0.1)]",
                "LayerNorm(18×4)", "TiedHead(4→27, tied to layer 0)",
            ])
        #expect(network.parameterTensors.filter { $0.layer == network.layers.count - 1 }.isEmpty)
        #expect(network.parameterTensors.first?.name == "layers.0.weight" && network.parameterTensors.first?.shape == [27, 4])
        #expect(network.parameterTensors[1].shape == [20, 4])
    }

    @Test("GPT-2's initialization: tables and products N(0, 0.02²), the residual branches' last products 0.02/√(2·blocks), biases 0")
    func gpt2Initialization() throws {
        let run = try RunBuilder.build(try transformer("{blocks: 2, heads: 2, features: 64, initialization: gpt2}"))
        let network = try #require(run.engine as? NetworkTrainingEngine<Double, Adam<Double>>).network
        /// The sample standard deviation of a tensor's entries, and their mean.
        func spread(_ name: String) throws -> (deviation: Double, mean: Double) {
            let tensor = try #require(network.parameterTensors.first { $0.name == name }, "\(name)")
            let values = network.parameters[tensor.offset..<tensor.offset + tensor.count]
            let mean = values.reduce(0, +) / Double(values.count)
            return ((values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(values.count - 1)).squareRoot(), mean)
        }
        let residual = 0.02 / 2  // 0.02/√(2·2)
        for (name, expected) in [
            ("layers.0.weight", 0.02), ("layers.2.body.1.c_attn.weight", 0.02), ("layers.2.body.1.c_proj.weight", residual),
            ("layers.3.body.1.weight", 0.02), ("layers.3.body.3.weight", residual), ("layers.7.weight", 0.02),
        ] {
            let (deviation, mean) = try spread(name)
            // thousands of draws each: within 6% of σ, the mean within a few σ/√n
            #expect(abs(deviation / expected - 1) < 0.06 && abs(mean) < 0.1 * expected, "\(name): \(deviation) against \(expected)")
        }
        #expect(try spread("layers.3.body.1.bias").deviation == 0)
        // The default keeps each layer's own rule: a dense layer's Glorot uniform, √(6/(64+256))/√3 = 0.079.
        let plain = try #require(
            try RunBuilder.build(try transformer("{blocks: 2, heads: 2, features: 64}")).engine as? NetworkTrainingEngine<Double, Adam<Double>>
        ).network
        let dense = try #require(plain.parameterTensors.first { $0.name == "layers.3.body.1.weight" })
        let values = plain.parameters[dense.offset..<dense.offset + dense.count]
        #expect(abs((values.reduce(0) { $0 + $1 * $1 } / Double(values.count)).squareRoot() / 0.0791 - 1) < 0.06)
    }

    @Test("A block beyond the position table names data.blockSize and model.transformer.positions, whether the block is given or derived")
    func positionsTooFew() throws {
        // Derived: the longest word's 18 positions against a table of 16.
        var derived = "no error"
        do { _ = try RunBuilder.build(try transformer("{blocks: 1, heads: 1, features: 4, positions: 16}")) } catch { derived = "\(error)" }
        #expect(derived.contains("model.transformer.positions") && derived.contains("data.blockSize") && derived.contains("18"), "\(derived)")
        // Given: caught when the config is read.
        let given = failure(
            "model: {transformer: {blocks: 1, heads: 1, features: 4, positions: 16}}\ndata: {kind: text, path: w.txt, blockSize: 20}")
        #expect(given.contains("model.transformer.positions") && given.contains("data.blockSize 20") && given.contains("16"), "\(given)")
    }

    @Test("Windows: block 8 over words of up to 17 letters trains, each window's samples counted once")
    func windowed() throws {
        let run = try RunBuilder.build(try transformer("{blocks: 1, heads: 2, features: 4}", extra: ", blockSize: 8, longLines: window"))
        var engine = try #require(run.engine as? NetworkTrainingEngine<Double, Adam<Double>>)
        #expect(engine.network.inputShape == [8])
        let data = try RunData<Double>(run.config.data, seed: 5)
        let text = try #require(data.text)
        // Every counted target of the training rows is one character (or closing boundary) of a training line.
        let counted = data.training.targets.scalars.filter { $0 >= 0 }.count
        #expect(counted == text.training.map { text.corpus.lines[$0].count + 1 }.reduce(0, +))
        _ = engine.step()
        #expect(engine.stepsTaken == 1)
    }

    @Test("training.batchThreads: 2 splits each step's batch over two threads; five steps end where one thread's end, within rounding")
    func batchThreads() throws {
        func engine(_ threads: Int?) throws -> NetworkTrainingEngine<Double, Adam<Double>> {
            var config = try transformer("{blocks: 1, heads: 2, features: 4}")
            config.training.batchThreads = threads
            return try #require(try RunBuilder.build(config).engine as? NetworkTrainingEngine<Double, Adam<Double>>)
        }
        var one = try engine(nil), two = try engine(2)
        #expect(one.network.batchThreads == 1 && two.network.batchThreads == 2)
        for _ in 0..<5 {
            let (a, b) = (one.step(), two.step())
            #expect(abs(a - b) <= 1e-12 * abs(a), "losses \(a) and \(b)")
        }
        let gap = zip(one.network.parameters, two.network.parameters).map { abs($0 - $1) }.max() ?? .infinity
        #expect(gap < 1e-10, "parameters apart by \(gap)")
    }

    @Test("Errors name the key: both layers and transformer, heads not dividing features, sizes out of range, data that is not text")
    func errors() {
        let text = "data: {kind: text, path: w.txt}"
        #expect(
            failure("model: {layers: [{kind: embedding}], transformer: {blocks: 1, heads: 1, features: 4}}\n" + text)
                == "run.yaml:1:38: model: expected either layers (a network of the layers listed) or transformer (a GPT by its sizes), not both")
        #expect(
            failure("model: {transformer: {blocks: 1, heads: 3, features: 64}}\n" + text)
                == "run.yaml:1:41: model.transformer.heads: expected a number of heads dividing model.transformer.features, 64, into heads of equal size; found 3"
        )
        #expect(
            failure("model: {transformer: {blocks: 0, heads: 1, features: 4}}\n" + text).contains(
                "model.transformer.blocks: expected a whole number from 1 to 1024; found 0"))
        #expect(
            failure("model: {transformer: {blocks: 1, heads: 1, features: 4, dropout: 1}}\n" + text).contains(
                "model.transformer.dropout: expected a number in [0, 1)"))
        #expect(failure("model: {transformer: {blocks: 1, heads: 1}}\n" + text).contains("features"))
        #expect(
            failure("model: {transformer: {blocks: 1, heads: 1, features: 4}}\ndata: {kind: synthetic, name: xor}")
                .contains("data.kind: expected text for a transformer"))
        #expect(
            failure("model: {transformer: {blocks: 1, heads: 1, features: 4}}\ndata: {kind: text, path: w.txt, longLines: cut}").contains("longLines")
        )
    }
}
