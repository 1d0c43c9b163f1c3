import Foundation
import NeuronCore
import Testing

@testable import NeuronTraining

/// A text config over Data/words-small.txt with `model` (YAML), double precision unless told.
private func words(_ model: String, training: String = "{epochs: 1, batchSize: 32, seed: 5, precision: double}", extra: String = "")
    throws -> RunConfig
{
    try config(
        """
        model: \(model)
        data: {kind: text, path: words-small.txt\(extra)}
        optimizer: {kind: adam, learningRate: 0.05}
        training: \(training)
        """)
}

/// The counted bigram model's mean negative log-likelihood per predicted character, worked out
/// here from the words alone (the oracle of ``BigramCounts`` and of the network that evaluates
/// its table): each word is `.` + word + `.`, counts over `trained`, add-`alpha` smoothing over
/// `symbols` symbols, the loss over every pair of `evaluated`.
private func countedLoss(trained: [String], evaluated: [String], alpha: Double, symbols: Int) -> Double {
    var pairs: [String: Int] = [:], starts: [Character: Int] = [:]
    for word in trained {
        let chars = Array("." + word + ".")
        for i in 0..<chars.count - 1 {
            pairs[String([chars[i], chars[i + 1]]), default: 0] += 1
            starts[chars[i], default: 0] += 1
        }
    }
    var total = 0.0, count = 0
    for word in evaluated {
        let chars = Array("." + word + ".")
        for i in 0..<chars.count - 1 {
            let pair = Double(pairs[String([chars[i], chars[i + 1]])] ?? 0), row = Double(starts[chars[i]] ?? 0)
            total -= Foundation.log((pair + alpha) / (row + alpha * Double(symbols)))
            count += 1
        }
    }
    return total / Double(count)
}

@Suite("Text runs: character models from a file of words")
struct TextRunTests {
    @Test("The counted bigram's test loss is the count's, worked out separately from the words")
    func countedBigram() throws {
        let run = try RunBuilder.build(
            try words("{layers: [{kind: embedding}]}", training: "{fit: counts, smoothing: 1, seed: 5, precision: double}"))
        let engine = try #require(run.engine as? NetworkTrainingEngine<Double, Adam<Double>>)
        #expect(engine.totalSteps == 0)
        let data = try RunData<Double>(run.config.data, seed: 5)
        let text = try #require(data.text)
        let (name, evaluation) = try #require(try engine.finalEvaluation())
        #expect(name == "test")
        let expected = countedLoss(
            trained: text.training.map { text.corpus.lines[$0] }, evaluated: text.test.map { text.corpus.lines[$0] }, alpha: 1,
            symbols: text.corpus.vocabulary.count)
        #expect(abs(evaluation.loss - expected) < 1e-12, "network \(evaluation.loss), counted \(expected)")
        // In batches of 7 lines too: the whole is the mean over every counted position, not of the batches' means.
        var network = engine.network
        let batched = try network.evaluate(try #require(data.test), batchSize: 7).loss
        #expect(abs(batched - expected) < 1e-12, "in batches of 7: \(batched), counted \(expected)")
        // A sanity bound: better than guessing among 27 tokens (log 27 = 3.30), worse than a perfect model.
        #expect(expected > 1.5 && expected < Foundation.log(27.0))
    }

    @Test("Smoothing past 1e6 is refused at its key; at the bound the table is finite and near uniform (1e308 made -inf, a NaN loss)")
    func smoothingBounds() throws {
        for huge in ["1e308", "1e307", "1000001"] {
            do {
                _ = try RunBuilder.build(try words("{layers: [{kind: embedding}]}", training: "{fit: counts, smoothing: \(huge)}"))
                Issue.record("smoothing \(huge) was accepted")
            } catch {
                #expect("\(error)".contains("training.smoothing: expected a number above 0 and at most 1e6"), "\(error)")
            }
        }
        let run = try RunBuilder.build(
            try words("{layers: [{kind: embedding}]}", training: "{fit: counts, smoothing: 1e6, seed: 5, precision: double}"))
        let engine = try #require(run.engine as? NetworkTrainingEngine<Double, Adam<Double>>)
        let data = try RunData<Double>(run.config.data, seed: 5)
        let text = try #require(data.text)
        let (_, evaluation) = try #require(try engine.finalEvaluation())
        let expected = countedLoss(
            trained: text.training.map { text.corpus.lines[$0] }, evaluated: text.test.map { text.corpus.lines[$0] }, alpha: 1e6,
            symbols: text.corpus.vocabulary.count)
        #expect(abs(evaluation.loss - expected) < 1e-12 && abs(expected - Foundation.log(Double(text.corpus.vocabulary.count))) < 1e-3)
        // The table itself stays finite for any finite smoothing, however large: log α + log(count/α + V).
        let table = BigramCounts(text.corpus, lines: text.training).logits(smoothing: 1e308)
        #expect(table.allSatisfy { abs($0 + Foundation.log(Double(text.corpus.vocabulary.count))) < 1e-12 })
    }

    @Test("Gradient descent on the same bigram table comes down to the counted table's training loss")
    func learnedBigram() throws {
        let run = try RunBuilder.build(
            try words("{layers: [{kind: embedding}]}", training: "{epochs: 60, batchSize: 128, seed: 5, precision: double}"))
        var engine = try #require(run.engine as? NetworkTrainingEngine<Double, Adam<Double>>)
        while engine.stepsTaken < engine.totalSteps { _ = engine.step() }
        var network = engine.network
        let learned = try network.evaluate(engine.training.dataset).loss
        let data = try RunData<Double>(run.config.data, seed: 5)
        let text = try #require(data.text)
        let lines = text.training.map { text.corpus.lines[$0] }
        // The maximum-likelihood table (no smoothing) is the least training loss any table reaches.
        let least = countedLoss(trained: lines, evaluated: lines, alpha: 0, symbols: text.corpus.vocabulary.count)
        #expect(learned >= least - 1e-9)
        #expect(learned - least < 0.01, "learned \(learned), counted \(least)")
    }

    @Test("A checkpoint keeps the vocabulary, and the network rebuilt from it draws the same lines")
    func checkpointAndSamples() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let config = try words(
            "{layers: [{kind: embedding, features: 8}, {kind: gru, units: 16}, {units: 27, activation: identity}]}",
            training: "{epochs: 1, batchSize: 64, seed: 5}")
        let run = try RunBuilder.build(config)
        var engine = try #require(run.engine as? NetworkTrainingEngine<Float, Adam<Float>>)
        while engine.stepsTaken < engine.totalSteps { _ = engine.step() }
        // The epoch's end drew the config's default 5 lines, each marked against the training words.
        let sampled = try #require(engine.sampledLines)
        #expect(sampled.count == 5)
        let text = try #require(try RunData<Float>(config.data, seed: 5).text)
        let training = Set(text.training.map { text.corpus.lines[$0] })
        for line in sampled { #expect(line.inTraining == training.contains(line.text)) }

        try Checkpoint(engine, config: config, preprocessing: run.preprocessing).write(to: directory.path)
        let loaded = try Checkpoint.read(directory.path)
        let vocabulary = try #require(loaded.state.vocabulary)
        #expect(vocabulary.count == 27)
        #expect(vocabulary.characters.map { String($0) }.joined() == "abcdefghijklmnopqrstuvwxyz")
        var rebuilt = try Prediction<Float>.network(loaded)
        #expect(rebuilt.parameters == engine.network.parameters)
        let rule = try SamplingRule(temperature: 0.8, topK: 5)
        var trained = engine.network
        let first = try trained.sampleLines(count: 20, prefix: [3], rule: rule, seed: 9)
        let second = try rebuilt.sampleLines(count: 20, prefix: [3], rule: rule, seed: 9)
        #expect(first == second)
        #expect(first.allSatisfy { $0.first == 3 && $0.count <= 17 && $0.allSatisfy { (1..<27).contains($0) } })
    }

    @Test("A text run resumed from its checkpoint goes on to the weights of a run never interrupted; other tokens are refused")
    func resume() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let model = "{layers: [{kind: embedding, features: 6}, {kind: rnn, units: 8}, {units: 27, activation: identity}]}"
        let config = try words(model, training: "{epochs: 2, batchSize: 64, seed: 5}")
        func trained(_ engine: any TrainingEngine, steps: Int) throws -> NetworkTrainingEngine<Float, Adam<Float>> {
            var engine = try #require(engine as? NetworkTrainingEngine<Float, Adam<Float>>)
            for _ in 0..<steps { _ = engine.step() }
            return engine
        }
        let straight = try RunBuilder.build(config)
        let whole = try trained(straight.engine, steps: straight.engine.totalSteps)
        let half = try trained(try RunBuilder.build(config).engine, steps: straight.engine.totalSteps / 2 + 1)
        try Checkpoint(half, config: config, preprocessing: .none).write(to: directory.path)
        let saved = try Checkpoint.read(directory.path)
        let resumed = try RunBuilder.build(config, resume: saved)
        let rest = try trained(resumed.engine, steps: resumed.engine.totalSteps - resumed.engine.stepsTaken)
        #expect(rest.network.parameters == whole.network.parameters)
        #expect(rest.sampledLines == whole.sampledLines)

        // The same config over a file of other characters is another vocabulary: refused, not misread.
        try String(repeating: "abc\nxyz\n", count: 10).write(toFile: directory.file("other.txt"), atomically: true, encoding: .utf8)
        var other = config
        other.data.path = directory.file("other.txt")
        other.data.blockSize = saved.state.featureNames.count  // the same positions: only the tokens differ
        do {
            _ = try RunBuilder.build(other, resume: saved)
            Issue.record("a checkpoint of a-z resumed on a file of abcxyz")
        } catch {
            #expect(error is RunError && "\(error)".contains("tokens"), "\(error)")
        }
    }

    @Test(
        "A text run's config errors name the key and say what was expected",
        arguments: [
            ("{layers: [{units: 27, activation: identity}]}", "", "model.layers[0].kind", "embedding"),
            ("{layers: [{kind: embedding}, {kind: embedding}]}", "", "model.layers[1].kind", "only be the first layer"),
            ("{layers: [{kind: embedding, features: 8}, {units: 27}]}", "", "model.layers[1].activation", "identity"),
            ("{layers: [{kind: embedding, features: 8}, {kind: gru}]}", "", "model.layers[1]", "units"),
            ("{layers: [{kind: embedding}]}", ", keep: 'z-a'", "data.keep", "backwards"),
            ("{layers: [{kind: embedding}]}", ", blockSize: 1", "data.blockSize", "from 2"),
            ("{layers: [{kind: embedding}]}", ", testSplit: 1.5", "data.testSplit", "[0, 1)"),
        ])
    func configErrors(model: String, extra: String, key: String, expected: String) throws {
        do {
            _ = try RunBuilder.build(try words(model, extra: extra))
            Issue.record("\(model)\(extra) was accepted")
        } catch {
            #expect("\(error)".contains(key) && "\(error)".contains(expected), "\(error)")
        }
    }

    @Test("Counting fits only a bigram model, and smoothing belongs to counting")
    func countingErrors() throws {
        for (model, training, key) in [
            ("{layers: [{kind: embedding, features: 8}, {units: 27, activation: identity}]}", "{fit: counts}", "model.layers"),
            ("{layers: [{kind: embedding}]}", "{smoothing: 1}", "training.smoothing"),
            ("{layers: [{kind: embedding}]}", "{fit: counts, smoothing: 0}", "training.smoothing"),
        ] {
            #expect(throws: ConfigError.self) { try words(model, training: training) }
            do { _ = try words(model, training: training) } catch { #expect("\(error)".contains(key), "\(error)") }
        }
    }

    @Test("A line longer than the block size is refused, naming the file and the line")
    func lineTooLong() throws {
        do {
            _ = try RunBuilder.build(try words("{layers: [{kind: embedding}]}", extra: ", blockSize: 5"))
            Issue.record("a block of 5 accepted words of up to 17 letters")
        } catch {
            #expect("\(error)".contains("words-small.txt:") && "\(error)".contains("block size 5"), "\(error)")
        }
    }
}
