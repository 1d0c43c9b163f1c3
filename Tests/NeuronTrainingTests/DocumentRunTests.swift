import Foundation
import NeuronCore
import Testing

@testable import NeuronTraining

/// A short play: 30 copies of two speakers' lines, 1,140 characters of 18 distinct ones.
private let play = String(repeating: "ANNA:\nthe cat sat.\n\nBEN:\non the mat!\n\n", count: 30)

/// A document run's config over `path`: a one-block transformer, block 16, in Double.
private func documentConfig(
    _ path: String, training: String = "{steps: 20, evaluateEvery: 10, batchSize: 4, seed: 3, precision: double}", data: String = ""
) throws -> RunConfig {
    try config(
        """
        model: {transformer: {blocks: 1, heads: 2, features: 8}}
        data: {kind: text, unit: document, path: \(path), blockSize: 16\(data)}
        optimizer: {kind: adam, learningRate: 0.01}
        training: \(training)
        """)
}

private func engine(_ run: Run) throws -> NetworkTrainingEngine<Double, Adam<Double>> {
    try #require(run.engine as? NetworkTrainingEngine<Double, Adam<Double>>)
}

@Suite("Document runs: one text, windows drawn at random, measured in steps")
struct DocumentRunTests {
    @Test("A run is its steps in evaluation intervals; each validation loss is the loss over every held-out character once")
    func exactValidation() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        try play.write(toFile: directory.file("play.txt"), atomically: true, encoding: .utf8)
        var trained = try engine(try RunBuilder.build(try documentConfig(directory.file("play.txt"))))
        #expect(trained.totalSteps == 20 && trained.totalEpochs == 2 && trained.samplesPerStep == 4)
        while !trained.isFinished { _ = trained.step() }
        #expect(trained.records.map(\.step) == [10, 20])

        // The oracle: the held-out part is the last 114 characters (1,140 · 0.1); each of them but
        // the first is predicted once, reading the characters before it back to the start of its
        // block of 16, here by hand from the text.
        let characters = Array(play.unicodeScalars), vocabulary = Array(Set(characters)).sorted()
        let held = Array(characters[(1140 - 114)...])
        #expect(characters.count == 1140 && vocabulary.count == 18)
        var network = trained.network
        var total = 0.0, predicted = 0
        for start in stride(from: 0, to: held.count - 1, by: 16) {
            let end = min(start + 16, held.count - 1)
            var x = Tensor<Double>(zeros: [1, 16])
            for t in start..<end { x[0, t - start] = Double(vocabulary.firstIndex(of: held[t])! + 1) }
            try network.forward(x)
            let logits = network.layers[network.layers.count - 1].output.scalars
            for t in start..<end {
                let row = Array(logits[(t - start) * 19..<(t - start + 1) * 19])
                let top = row.max()!, sum = row.reduce(0) { $0 + exp($1 - top) }
                total -= row[vocabulary.firstIndex(of: held[t + 1])! + 1] - top - log(sum)
                predicted += 1
            }
        }
        #expect(predicted == 113)
        let validation = try #require(trained.records.last?.validationLoss)
        #expect(abs(validation - total / Double(predicted)) < 1e-12, "\(validation) vs \(total / Double(predicted))")
        #expect(validation < log(19.0))  // below guessing among the 19 tokens
    }

    @Test("A document keeps its tokens in a byte each and its first training windows as rows; any training window is read from the tokens")
    func compactTraining() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        try play.write(toFile: directory.file("play.txt"), atomically: true, encoding: .utf8)
        let config = try documentConfig(directory.file("play.txt"))
        let data = try RunData<Double>(config.data, seed: 3)
        let document = try #require(data.document)
        #expect(document.text.tokens.bytesPerToken == 1 && document.training == 0..<1026)
        // 1,025 characters predicted at block 16: 65 windows, of which the first 64 are rows.
        #expect(data.trainingSampleCount == 65 && data.training.count == RunData<Double>.documentSampleWindows && data.training.count == 64)
        // Window w reads characters 16w ..< 16w + 16 and predicts the ones a place later; the last,
        // window 64, reads the one character 1024 and predicts 1025, the rest padding. By hand:
        let characters = Array(play.unicodeScalars), vocabulary = Array(Set(characters)).sorted()
        let token = { (i: Int) in Double(vocabulary.firstIndex(of: characters[i])! + 1) }
        for w in [0, 63, 64] {
            let row = data.trainingSample(w), read = min(16, 1025 - 16 * w)
            #expect(row.features.scalars == (0..<16).map { $0 < read ? token(16 * w + $0) : 0 })
            #expect(row.targets.scalars == (0..<16).map { $0 < read ? token(16 * w + $0 + 1) : -1 })
            if w < 64 { #expect(row.features == data.training.subset([w]).features) }
        }
        // The steps draw from every start of the training part, not only the kept rows.
        let trained = try engine(try RunBuilder.build(config))
        #expect(trained.training.batches.windows == 1026 - 16)
    }

    @Test("A document run resumed from its checkpoint goes on to the weights of a run never interrupted")
    func resume() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        try play.write(toFile: directory.file("play.txt"), atomically: true, encoding: .utf8)
        let config = try documentConfig(
            directory.file("play.txt"), training: "{steps: 12, evaluateEvery: 4, batchSize: 3, seed: 8, precision: double}")
        var whole = try engine(try RunBuilder.build(config))
        while !whole.isFinished { _ = whole.step() }
        var half = try engine(try RunBuilder.build(config))
        for _ in 0..<6 { _ = half.step() }  // mid-interval: the drawn starts must travel with the checkpoint
        try Checkpoint(half, config: config, preprocessing: .none).write(to: directory.path)
        let saved = try Checkpoint.read(directory.path)
        #expect(saved.state.position?.batches.windows == 1026 - 16)
        var rest = try engine(try RunBuilder.build(config, resume: saved))
        while !rest.isFinished { _ = rest.step() }
        #expect(rest.network.parameters == whole.network.parameters)
        #expect(rest.records.map(\.validationLoss) == whole.records.map(\.validationLoss))
    }

    @Test("A checkpoint's header stays small however many window starts an interval draws: the generator that drew them is saved, not the starts")
    func smallHeader() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        try play.write(toFile: directory.file("play.txt"), atomically: true, encoding: .utf8)
        // 20,000 steps an interval of 64 windows: 1,280,000 starts, 10 MB as JSON numbers.
        let config = try documentConfig(
            directory.file("play.txt"), training: "{steps: 200000, evaluateEvery: 20000, batchSize: 64, seed: 8, precision: double}")
        var run = try engine(try RunBuilder.build(config))
        _ = run.step()
        try Checkpoint(run, config: config, preprocessing: .none).write(to: directory.path)
        let file = try FileHandle(forReadingFrom: URL(fileURLWithPath: directory.file("checkpoint.safetensors")))
        let length = try file.read(upToCount: 8)!.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
        #expect(length < 100_000, "a header of \(length) bytes")
        // Read back, the starts are drawn again: the same as those the run drew.
        let saved = try Checkpoint.read(directory.path)
        #expect(saved.state.position?.batches == run.resumePoint().position?.batches)
    }

    @Test("A resumed run keeps its interval: a changed evaluateEvery is refused naming both, a changed steps counts in the saved interval")
    func resumeWithOtherSteps() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        try play.write(toFile: directory.file("play.txt"), atomically: true, encoding: .utf8)
        let path = directory.file("play.txt")
        let config = try documentConfig(path, training: "{steps: 20, evaluateEvery: 10, batchSize: 3, seed: 8, precision: double}")
        var first = try engine(try RunBuilder.build(config))
        while !first.isFinished { _ = first.step() }
        try Checkpoint(first, config: config, preprocessing: .none).write(to: directory.path)
        let saved = try Checkpoint.read(directory.path)
        do {
            _ = try RunBuilder.build(
                try documentConfig(path, training: "{steps: 40, evaluateEvery: 5, batchSize: 3, seed: 8, precision: double}"), resume: saved)
            Issue.record("a resume with evaluateEvery 5 over intervals of 10 was accepted")
        } catch {
            #expect("\(error)".contains("training.evaluateEvery: 5, but the run being resumed evaluates every 10 steps"), "\(error)")
        }
        // Without evaluateEvery, 40 steps are 4 intervals of the saved 10 (the default for 40 would be 4).
        var longer = try engine(
            try RunBuilder.build(try documentConfig(path, training: "{steps: 40, batchSize: 3, seed: 8, precision: double}"), resume: saved))
        #expect(longer.totalSteps == 40)
        while !longer.isFinished { _ = longer.step() }
        #expect(longer.stepsTaken == 40 && longer.records.map(\.step) == [10, 20, 30, 40])
    }

    @Test("A document run's config as saved has no training.epochs (a key a document refuses), and decodes to the config written")
    func savedConfigLoads() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        try play.write(toFile: directory.file("play.txt"), atomically: true, encoding: .utf8)
        let written = try documentConfig(directory.file("play.txt"))
        let json = try #require(String(data: try JSONEncoder().encode(written), encoding: .utf8))
        #expect(!json.contains("\"epochs\""), "\(json)")
        #expect(try JSONDecoder().decode(RunConfig.self, from: Data(json.utf8)) == written)
        // Line data keeps its epochs.
        var lines = written
        lines.training.steps = nil
        #expect(String(data: try JSONEncoder().encode(lines.training), encoding: .utf8)!.contains("\"epochs\":10"))
    }

    @Test("--epochs on a document run counts its intervals: 2 epochs of evaluateEvery 10 are 20 steps")
    func epochsOverride() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        try play.write(toFile: directory.file("play.txt"), atomically: true, encoding: .utf8)
        let written = try documentConfig(
            directory.file("play.txt"), training: "{steps: 40, evaluateEvery: 10, batchSize: 3, seed: 8, precision: double}")
        let config = RunOverrides(epochs: 2).applied(to: written)
        #expect(config.training.steps == 20 && config.training.evaluateEvery == 10)
        let run = try engine(try RunBuilder.build(config))
        #expect(run.totalSteps == 20 && run.totalEpochs == 2)
        // Without evaluateEvery, the interval is the default for the config's steps (4 of 40): 3 epochs are 12 steps.
        let implicit = RunOverrides(epochs: 3).applied(
            to: try documentConfig(directory.file("play.txt"), training: "{steps: 40, batchSize: 3, seed: 8, precision: double}"))
        #expect(implicit.training.steps == 12 && implicit.training.evaluateEvery == 4)
    }

    @Test("The estimate averages over batches of random validation windows, drawn apart from training's")
    func estimate() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        try play.write(toFile: directory.file("play.txt"), atomically: true, encoding: .utf8)
        let training = "{steps: 8, evaluateEvery: 4, batchSize: 4, seed: 3, precision: double, evaluation: estimate, evaluationBatches: 3}"
        var estimated = try engine(try RunBuilder.build(try documentConfig(directory.file("play.txt"), training: training)))
        var exact = try engine(
            try RunBuilder.build(
                try documentConfig(directory.file("play.txt"), training: "{steps: 8, evaluateEvery: 4, batchSize: 4, seed: 3, precision: double}")))
        while !estimated.isFinished { _ = estimated.step(); _ = exact.step() }
        // The same training steps: drawing the estimate's windows does not disturb training's.
        #expect(estimated.network.parameters == exact.network.parameters)
        let estimate = try #require(estimated.validationEstimate)
        #expect(estimate.windows(afterEpoch: 2).count == 12)
        var network = estimated.network
        #expect(estimated.records.last?.validationLoss == (try network.evaluate(estimate.windows(afterEpoch: 2))).loss)
        #expect(estimated.records.last?.validationLoss != exact.records.last?.validationLoss)
    }

    @Test(
        "A document config's errors name the key and say what was expected",
        arguments: [
            ("{steps: 20}", ", keep: a-z", "data.keep", "does not apply to a text document"),
            ("{steps: 20}", ", longLines: window", "data.longLines", "does not apply to a text document"),
            ("{epochs: 2}", "", "training.epochs", "training.steps"),
            ("{batchSize: 4}", "", "training", "steps"),
            ("{steps: 20, evaluateEvery: 6}", "", "training.evaluateEvery", "steps 18 or steps 24"),
            ("{steps: 20, evaluationBatches: 5}", "", "training.evaluationBatches", "estimate"),
            ("{steps: 20}", ", validationSplit: 0.995", "data.validationSplit", "at least 17"),
            // Sizes past the machine's memory are refused before anything is allocated: a batch of
            // windows drawn with replacement, and an interval's window starts.
            ("{steps: 20, batchSize: 1000000000}", "", "training.batchSize", "but this machine has"),
            // An estimate needs a validation part longer than the block (0.01 of 1,140 characters holds out 12: 1,140 less the training part, ⌊1,140 · 0.99⌋).
            ("{steps: 20, evaluation: estimate}", ", validationSplit: 0.01", "training.evaluation", "holds 12 characters"),
            ("{steps: 10000000000, batchSize: 12}", "", "training.batchSize", "window starts"),
            ("{steps: 20, evaluateEvery: 10, batchSize: 1099511627776}", "", "training.evaluateEvery", "window starts"),
        ])
    func configErrors(training: String, data: String, key: String, expected: String) throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        try play.write(toFile: directory.file("play.txt"), atomically: true, encoding: .utf8)
        do {
            _ = try RunBuilder.build(try documentConfig(directory.file("play.txt"), training: training, data: data))
            Issue.record("\(training) \(data) was accepted")
        } catch {
            #expect("\(error)".contains(key) && "\(error)".contains(expected), "\(error)")
        }
    }

    @Test("Line data refuses a document run's keys; a document needs its block")
    func keysOfTheOtherUnit() throws {
        for (yaml, key) in [
            ("data: {kind: text, path: words-small.txt}\ntraining: {steps: 10}", "training.steps"),
            ("data: {kind: text, path: words-small.txt}\ntraining: {evaluation: exact}", "training.evaluation"),
            ("data: {kind: text, unit: document, path: words-small.txt}\ntraining: {steps: 10}", "blockSize"),
        ] {
            do {
                _ = try config("model: {transformer: {blocks: 1, heads: 1, features: 4}}\n" + yaml)
                Issue.record("\(yaml) was accepted")
            } catch {
                #expect("\(error)".contains(key), "\(error)")
            }
        }
        // The default evaluation interval divides the steps, about ten evaluations.
        #expect(TrainingConfig.defaultEvaluateEvery(steps: 2000) == 200)
        #expect(TrainingConfig.defaultEvaluateEvery(steps: 7) == 1)
        #expect(TrainingConfig.defaultEvaluateEvery(steps: 1234) == 617)
    }
}
