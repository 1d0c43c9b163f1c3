// F4: W9's GPT trained on Debian's word list (lowercased, a–z, words of at most 15 letters, block
// 16) until its test loss reaches a stated target, training time only, then PyTorch on the same
// lines, batches and initial weights (Benchmarks/peers/torch_words_gpt.py).
import ArgumentParser
import Foundation
import NeuronCore
import NeuronTraining

extension Benchmarks {
    /// F4's word list.
    static let transformerWordsText = "/usr/share/dict/american-english"
    /// F4's target test loss (nats per position): the GPT first reaches it in its third epoch here
    /// (2.168, 2.102, 2.052 after epochs 1–3, on a loaded machine, measured once).
    static let transformerWordsTarget = 2.06
    /// F4's seed for the split and the batches' order; at most this many epochs.
    static let transformerWordsSeed: UInt64 = 42
    static let transformerWordsEpochs = 4

    /// F4: the lines of `/usr/share/dict/american-english` lowercased and kept when every character
    /// is in a–z, those of at most 15 letters used (block 16, as W9), a tenth of them (seed 42)
    /// held out for the test; W9's network from W9's initial weights, AdamW at 5e-4 with weight
    /// decay 0.01 on every parameter, batches of 32 — trained until the test loss reaches
    /// ``transformerWordsTarget``, timing the steps alone; then, with `--peers`, PyTorch on the same
    /// lines, batches and initial weights.
    func transformerWords() throws -> Report.Words {
        let w = TransformerWorkload.w9.split(over: threads)
        let path = Self.transformerWordsText
        progress("F4: loading \(path)")
        let corpus = try TextCorpus.load(path, lowercase: true, keep: try CharacterClass("a-z"), maximumBytes: 64 << 20)
        guard corpus.vocabulary.count == w.vocabulary else {
            throw ValidationError("F4: \(path) gives \(corpus.vocabulary.count) tokens; W9's network takes \(w.vocabulary)")
        }
        var fitting = corpus.lines.indices.filter { corpus.lines[$0].unicodeScalars.count < w.time }
        var generator = SeededGenerator(seed: Self.transformerWordsSeed)
        generator.shuffle(&fitting)
        let testCount = Int((Double(fitting.count) * 0.1).rounded())
        let rows = Array(fitting.dropLast(testCount)), testRows = Array(fitting.suffix(testCount))
        // The corpus's block is its longest line's; the words used fit in W9's, so the cut drops padding alone.
        func dataset(_ indices: [Int]) throws -> Dataset<Float> {
            let full = corpus.dataset(indices, as: Float.self)
            func cut(_ m: Tensor<Float>) throws -> Tensor<Float> {
                try Tensor(
                    shape: [indices.count, w.time], scalars: (0..<indices.count).flatMap { m.scalars[$0 * m.columns..<$0 * m.columns + w.time] })
            }
            return try Dataset(features: try cut(full.features), targets: try cut(full.targets))
        }
        let training = try dataset(rows), test = try dataset(testRows)
        var network = try w.make().network
        network.products = products
        let engine = try NetworkTrainingEngine(
            network: network, optimizer: try w.optimizer(), dataset: training, test: test, batchSize: w.batch,
            epochs: Self.transformerWordsEpochs, seed: Self.transformerWordsSeed)
        let (batchSize, orders) = try SharedBatches.orders(engine, epochs: Self.transformerWordsEpochs)
        let shared = SharedLines(
            lineCount: corpus.count, vocabulary: [""] + corpus.vocabulary.characters.map { String(Character($0)) },
            blockSize: w.time, batchSize: batchSize, rows: rows, testRows: testRows, orders: orders)
        let initial = network.parameterTensors.map {
            SafeTensors.entry($0.name, Checkpoint.fileLayout(network.parameter($0), order: $0.pytorchOrder))
        }

        let target = Self.transformerWordsTarget
        let result = try w.withRunThreads { try wordsRun(engine, test: test, target: target, orders: orders, id: "F4") }
        print(
            String(
                format:
                    "F4 %@ (%d training, %d test words) to test loss %.2f (W9's GPT, AdamW): Neuron %@ in %d epochs (training time only; test losses %@)",
                path, rows.count, testRows.count, target, result.reached ? format(result.seconds) : "not reached", result.epochs,
                result.losses.map { String(format: "%.4f", $0) }.joined(separator: " ")))
        var words = Report.Words(
            config: "W9's GPT on \(path)", target: target, neuronSeconds: result.seconds, neuronEpochs: result.epochs,
            neuronReached: result.reached, neuronTestLosses: result.losses)
        if peers {
            let runner = try Peers(threads: threads, autocast: products == .bf16)
            let directory = FileManager.default.temporaryDirectory
            let file = directory.appendingPathComponent("neuron-bench-F4.safetensors").path
            let adam = try w.optimizer()
            try SafeTensors.write(
                initial,
                metadata: [
                    "heads": "\(w.heads)", "learningRate": "\(adam.learningRate)", "weightDecay": "\(adam.weightDecay)",
                    "beta1": "\(adam.beta1)", "beta2": "\(adam.beta2)", "epsilon": "\(adam.epsilon)", "batchSize": "\(w.batch)",
                    "lowercase": "true", "keep": "a-z", "blockSize": "\(w.time)",
                ], to: file)
            try runWordsPeer(
                "torch_words_gpt.py", id: "F4", text: path, exchange: file, shared: shared, target: target,
                epochs: Self.transformerWordsEpochs, neuronSeconds: result.seconds, runner: runner, into: &words)
        }
        print("")
        return words
    }
}
