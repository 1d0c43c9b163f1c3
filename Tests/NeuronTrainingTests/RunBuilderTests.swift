import Foundation
import NeuronCore
import Testing

@testable import NeuronTraining

/// Expects two engines to stand at the same step with the same numbers: every saved tensor bit
/// for bit, the position, the optimizer's step and the records.
private func expectSameState<E: TrainingEngine>(_ a: E, _ b: E, sourceLocation: SourceLocation = #_sourceLocation) {
    let (x, y) = (a.resumePoint(), b.resumePoint())
    #expect(x.tensors.map(\.name) == y.tensors.map(\.name), sourceLocation: sourceLocation)
    #expect(zip(x.tensors, y.tensors).allSatisfy { $0.tensor == $1.tensor }, "tensors differ", sourceLocation: sourceLocation)
    #expect(x.progress.step == y.progress.step && x.position == y.position && x.optimizerStep == y.optimizerStep, sourceLocation: sourceLocation)
    #expect(x.records == y.records, sourceLocation: sourceLocation)
}

@Suite("RunBuilder: from a config to an engine, and from a checkpoint back to the same step")
struct RunBuilderTests {
    @Test("A network config builds the engine it names, in its precision, with its optimizer and data")
    func buildsFromConfig() throws {
        let config = try irisConfig(epochs: 3)
        let run = try RunBuilder.build(config)
        let engine = try #require(run.engine as? NetworkTrainingEngine<Float, SGD<Float>>)
        #expect(engine.title == "Network[Dense(4→8, tanh), Dense(8→3, softmax)]")
        // 120 training rows in batches of 16: 8 steps an epoch (the last one of 8 rows).
        #expect(engine.totalEpochs == 3 && engine.totalSteps == 24 && engine.stepsTaken == 0 && engine.records.isEmpty)
        #expect(engine.seed == 3 && engine.learningRate == Double(Float(0.1)))
        #expect(engine.training.dataset.count == 120 && engine.validation?.count == 30 && engine.test == nil)
        #expect(engine.training.optimizer.momentum == 0.9)
        #expect(run.config == config)
        guard case let .standardize(mean, _) = run.preprocessing else {
            Issue.record("expected standardization, got \(run.preprocessing)")
            return
        }
        #expect(mean.count == 4)
        // The seed decides the initial weights: built twice, the same network.
        #expect((try RunBuilder.build(config).engine as? NetworkTrainingEngine<Float, SGD<Float>>)?.network.parameters == engine.network.parameters)

        let adam = try RunBuilder.build(try irisConfig(optimizer: "{kind: adam, learningRate: 0.01}", precision: "double"))
        #expect(adam.engine is NetworkTrainingEngine<Double, Adam<Double>>)
    }

    @Test("The neuron's config builds Docs/Reference.md §3's run on the network engine: one tanh unit at w = b = 0.5, one sample")
    func neuron() throws {
        let config = try ConfigLoader.load(dataDirectory + "/single-neuron.yaml")
        let run = try RunBuilder.build(config)
        let engine = try #require(run.engine as? NetworkTrainingEngine<Double, SGD<Double>>)
        #expect(engine.title == "Network[Dense(1→1, tanh)]" && engine.network.loss == .halfSquaredError)
        #expect(engine.totalEpochs == 100_000 && engine.totalSteps == 100_000 && engine.learningRate == 0.01)
        #expect(engine.network.parameters == [0.5, 0.5] && engine.seed == nil && engine.samplesPerStep == 1)
        #expect(engine.training.dataset.features.scalars == [0.01] && engine.training.dataset.targets.scalars == [0.1])
        #expect(engine.training.dataset.featureNames == ["x"] && engine.validation == nil && engine.test == nil)
        // The run saves the config as written: the sugar, not the network it stands for.
        #expect(run.preprocessing == .none && run.config == config && run.config.model.neuron != nil)
    }

    @Test(
        "Resumed from a checkpoint taken mid-epoch, a run ends with exactly the numbers of one that never stopped",
        arguments: ["{kind: sgd, learningRate: 0.1, momentum: 0.9, nesterov: true}", "{kind: adam, learningRate: 0.01}"])
    func resumeExact(optimizer: String) throws {
        let config = try irisConfig(epochs: 3, optimizer: optimizer)
        let built = try RunBuilder.build(config)
        func check<E: TrainingEngine>(_ engine: E) throws {
            var first = engine
            for _ in 0..<13 { _ = first.step() }  // step 13: five steps into the second epoch
            let directory = try CheckpointTestDirectory()
            defer { directory.remove() }
            try Checkpoint(first, config: config, preprocessing: built.preprocessing).write(to: directory.path)
            let resumed = try RunBuilder.build(config, resume: try Checkpoint.read(directory.path))
            let second = try #require(resumed.engine as? E)
            expectSameState(second, first)
            #expect(resumed.preprocessing == built.preprocessing)
            expectSameState(straightRun(second), straightRun(engine))
        }
        try check(built.engine)
    }

    @Test("Resumed mid-warmup with AdamW on matrices only and clipping, a run ends with exactly the numbers of one that never stopped")
    func resumeMidWarmup() throws {
        // 120 training rows in batches of 16: 8 steps an epoch, 24 in all; warmup 20, the cosine over the last 4.
        let config = try config(
            """
            model: {layers: [{units: 8, activation: tanh}, {units: 3, activation: softmax}]}
            data: {kind: csv, path: iris.csv, labelColumn: species, validationSplit: 0.2}
            optimizer:
              kind: adam
              learningRate: 0.01
              decoupled: true
              weightDecay: 0.1
              decay: matrices
              schedule: {kind: cosine, warmupSteps: 20, minimumFactor: 0.1}
            training: {epochs: 3, batchSize: 16, seed: 3, clipGradientNorm: 0.5}
            """)
        let built = try RunBuilder.build(config)
        let engine = try #require(built.engine as? NetworkTrainingEngine<Float, Adam<Float>>)
        #expect(engine.maximumGradientNorm == 0.5)
        // Dense(4→8) weight 0..<32, bias 32..<40; Dense(8→3) weight 40..<64, bias 64..<67.
        #expect(engine.training.optimizer.decay == .matrices([0..<32, 40..<64]))
        #expect(
            engine.training.optimizer.description
                == "AdamW(learningRate: 0.01, beta1: 0.9, beta2: 0.999, epsilon: 1e-08, weightDecay: 0.1, decay: matrices, schedule: warmup(steps: 20, then: cosine(totalSteps: 4, minimumFactor: 0.1)))"
        )
        #expect(engine.learningRate == Double(Float(0.01) * Float(1.0 / 21)))  // step 0: lr·1/(20 + 1)
        var first = engine
        for _ in 0..<13 { _ = first.step() }
        #expect(first.learningRate == Double(Float(0.01) * Float(14.0 / 21)))
        #expect(first.training.lastGradientNorm != nil)
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        try Checkpoint(first, config: config, preprocessing: built.preprocessing).write(to: directory.path)
        let resumed = try RunBuilder.build(config, resume: try Checkpoint.read(directory.path))
        let second = try #require(resumed.engine as? NetworkTrainingEngine<Float, Adam<Float>>)
        expectSameState(second, first)
        #expect(second.learningRate == first.learningRate && second.maximumGradientNorm == 0.5)
        expectSameState(straightRun(second), straightRun(engine))

        // A warmup not shorter than the run's 24 steps is refused at its key.
        var long = config
        long.optimizer.schedule.warmupSteps = 24
        #expect(
            failure { try RunBuilder.build(long) }
                == "test.yaml:9:41: optimizer.schedule.warmupSteps: 24 steps of warmup are not fewer than the run's 24 (3 epochs of 8 steps); expected at most 23"
        )
        // Resumed with other settings: each change said in one line.
        var changed = config
        (changed.optimizer.decay, changed.optimizer.schedule.warmupSteps, changed.training.clipGradientNorm) = (.all, 10, nil)
        #expect(
            try ResumeSettings.changes(from: try Checkpoint.read(directory.path), to: changed) == [
                "optimizer.decay changed from matrices to all",
                "optimizer.schedule changed from {kind: cosine, minimumFactor: 0.1, warmupSteps: 20} to {kind: cosine, minimumFactor: 0.1, warmupSteps: 10}",
                "training.clipGradientNorm changed from 0.5 to none",
            ])
        // Resumed to more epochs, the cosine is counted over the new total: said, not silent.
        var longer = config
        longer.training.epochs = 6
        #expect(
            try ResumeSettings.changes(from: try Checkpoint.read(directory.path), to: longer) == [
                "optimizer.schedule: the cosine now runs over 6 epochs instead of 3 (--epochs), from the step the run stands at"
            ])
    }

    @Test("The cosine's last step runs just above the floor, as PyTorch's CosineAnnealingLR (Docs/Config.md): T = 4, warmup 1, floor 0.1")
    func cosineLastStep() throws {
        var schedule = ScheduleConfig()
        (schedule.kind, schedule.warmupSteps, schedule.minimumFactor) = (.cosine, 1, 0.1)
        let rates = try schedule.learningRateSchedule(stepsPerEpoch: 2, epochs: 2)
        // By hand: warmup (0 + 1)/(1 + 1) = 0.5; then 0.1 + 0.9·½(1 + cos(π·k/3)) for k = 0, 1, 2:
        // 1, 0.1 + 0.9·0.75 = 0.775, 0.1 + 0.9·0.25 = 0.325. The floor is where step 4 (past the run) would be.
        let expected = [0.5, 1, 0.775, 0.325, 0.1]
        for (step, rate) in expected.enumerated() { expectClose(rates.factor(at: step), rate, tolerance: 1e-15) }
    }

    @Test("The neuron resumes at its step with its records, and ends where Docs/Reference.md §3's run ends")
    func neuronResume() throws {
        let config = try neuronConfig(iterations: 1_000)
        let engine = straightRun(try neuronEngine(iterations: 1_000), steps: 250)
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let checkpoint = Checkpoint(engine, config: config, preprocessing: .none)
        try checkpoint.write(to: directory.path)
        let saved = try Checkpoint.read(directory.path)
        // Saved as the neuron's checkpoints always were: no position (nothing was drawn), seed 0,
        // which reads back as none; the planned counts are the config's.
        let json = try #require(try SafeTensors.decode(try checkpoint.encoded(), source: "neuron").metadata[Checkpoint.stateKey])
        #expect(json.contains(#""seed":0,"#) && !json.contains("totalSteps"))
        #expect(saved.state.position == nil && saved.state.progress == RunProgress(of: engine))
        #expect(saved.state.progress == RunProgress(epoch: 250, totalEpochs: 1_000, step: 250, totalSteps: 1_000, seed: nil))
        let resumed = try #require(try RunBuilder.build(config, resume: saved).engine as? NetworkTrainingEngine<Double, SGD<Double>>)
        #expect(resumed.stepsTaken == 250 && resumed.epoch == 250 && resumed.records.count == 25)
        #expect(resumed.network.parameters == engine.network.parameters)
        let (a, b) = (straightRun(resumed), straightRun(engine))
        #expect(a.network.parameters == b.network.parameters && a.records == b.records && a.stepsTaken == 1_000)
    }

    @Test("A checkpoint the old neuron engine wrote (Data/single-neuron.yaml stopped at 50,000 of 100,000) resumes to §3's end")
    func oldNeuronCheckpoint() throws {
        // Written by the build before the one engine: `neuron train Data/single-neuron.yaml --epochs 50000`.
        let saved = try Checkpoint.read(dataDirectory + "/../Tests/Fixtures/neuron-engine-50000.safetensors")
        #expect(saved.state.position == nil && saved.state.progress.step == 50_000 && saved.state.config.training.iterations == 50_000)
        let file = try ConfigLoader.load(dataDirectory + "/single-neuron.yaml")
        let run = try RunBuilder.build(RunOverrides(epochs: 100_000).applied(to: file), resume: saved)
        let ended = straightRun(try #require(run.engine as? NetworkTrainingEngine<Double, SGD<Double>>))
        #expect(ended.network.parameters == [0.4959537581015022, 0.09537581015006125] && ended.stepsTaken == 100_000)
        #expect(ended.snapshot().neuron?.output == 0.1000000000000007)
    }

    @Test(
        "A checkpoint records its data files' sizes and CRC-32s; resumed on a reordered, edited or doubled file it is refused plainly, unless asked")
    func dataChanged() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let words = try String(contentsOfFile: dataDirectory + "/words-small.txt", encoding: .utf8)
        let file = try directory.write(Array(words.utf8), "words.txt")
        let config = try config(
            """
            model: {layers: [{kind: embedding, features: 4}, {kind: rnn, units: 4}, {units: 27, activation: identity}]}
            data: {kind: text, path: \(file)}
            training: {epochs: 2, batchSize: 16, seed: 3}
            """)
        var engine = try RunBuilder.build(config).engine
        for _ in 0..<3 { _ = engine.step() }  // stopped mid-epoch
        let run = try RunBuilder.build(config)
        try Checkpoint(engine, config: config, preprocessing: run.preprocessing, data: run.data).write(to: directory.path)
        let saved = try Checkpoint.read(directory.path)
        #expect(saved.state.data?.files.map(\.key) == ["data.path"])
        #expect(saved.state.data?.files.first?.fingerprint.bytes == words.utf8.count)
        #expect(try RunBuilder.build(config, resume: saved).engine.stepsTaken == 3)

        let lines = words.split(separator: "\n", omittingEmptySubsequences: false)
        let reordered = lines.reversed().joined(separator: "\n")
        let edited = lines.enumerated().map { $0.offset == 5 ? $0.element.dropLast() + "q" : $0.element }.joined(separator: "\n")
        for (changed, size) in [(reordered, words.utf8.count), (edited, words.utf8.count), (words + words, 2 * words.utf8.count)] {
            _ = try directory.write(Array(changed.utf8), "words.txt")
            let message = failure { try RunBuilder.build(config, resume: saved) }
            #expect(
                message.hasPrefix(
                    "\(directory.path): cannot resume: the data changed since the checkpoint was written: data.path (\(file)) was \(words.utf8.count) bytes, CRC-32 0x"
                ), "\(message)")
            #expect(
                message.contains("and is \(size) bytes, CRC-32 0x")
                    && message.hasSuffix("(give --data-changed to go on with the new data, or start a new run)"))
        }
        // Asked to, it goes on with the new lines (the same count: the epoch's position still fits).
        _ = try directory.write(Array(reordered.utf8), "words.txt")
        #expect(try RunBuilder.build(config, resume: saved, dataChanged: true).engine.stepsTaken == 3)
        // A checkpoint written before fingerprints were recorded resumes unchecked.
        var old = saved
        old.state.data = nil
        #expect(try RunBuilder.build(config, resume: old).engine.stepsTaken == 3)
    }

    @Test("A file's fingerprint is its size and zlib's CRC-32: '123456789' is the check value 0xCBF43926")
    func fingerprint() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let print = try FileFingerprint(of: try directory.write(Array("123456789".utf8), "check"))
        #expect(print == FileFingerprint(bytes: 9, crc32: 0xCBF4_3926) && print.description == "9 bytes, CRC-32 0xCBF43926")
        #expect(try FileFingerprint(of: try directory.write([], "empty")) == FileFingerprint(bytes: 0, crc32: 0))
    }

    @Test("A checkpoint that does not fit the config is refused, saying why")
    func mismatches() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let config = try irisConfig()
        let run = try RunBuilder.build(config)
        try Checkpoint(run.engine, config: config, preprocessing: run.preprocessing).write(to: directory.path)
        let saved = try Checkpoint.read(directory.path)
        var wider = config
        wider.model.layers[0].units = 16
        #expect(
            throws: RunError.checkpointMismatch(
                path: directory.path, reason: "the checkpoint's model (Network[Dense(4→8, tanh), Dense(8→3, softmax)]) differs from the config's")
        ) {
            try RunBuilder.build(wider, resume: saved)
        }
        #expect(throws: RunError.checkpointMismatch(path: directory.path, reason: "the checkpoint is in float precision")) {
            try RunBuilder.build(try irisConfig(precision: "double"), resume: saved)
        }
        var otherSplit = config
        otherSplit.data.validationSplit = 0.3
        #expect(
            throws: RunError.checkpointMismatch(
                path: directory.path, reason: "the data's statistics differ from the checkpoint's (did the data files change?)")
        ) {
            try RunBuilder.build(otherSplit, resume: saved)
        }
    }

    @Test("Resumed on data whose feature names are not the checkpoint's, a run is refused naming both; evaluate --data too")
    func featureNamesAgainstData() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let config = try irisConfig()
        let run = try RunBuilder.build(config)
        let bytes = try editedState(Checkpoint(run.engine, config: config, preprocessing: run.preprocessing)) {
            $0["featureNames"] = ["a", "b", "c", "d"]
        }
        let saved = try Checkpoint.decode(bytes, file: directory.file("checkpoint.safetensors"))
        #expect(
            throws: RunError.checkpointMismatch(
                path: directory.path,
                reason:
                    "the data's features (sepal_length, sepal_width, petal_length, petal_width) are not the checkpoint's (a, b, c, d) (data: \(dataDirectory)/iris.csv)"
            )
        ) {
            try RunBuilder.build(config, resume: saved)
        }
        #expect {
            try RunBuilder.evaluation(of: saved, on: config.data, from: "iris.yaml")
        } throws: {
            "\($0)".hasPrefix(
                "\(directory.path): cannot evaluate on iris.yaml: the data's features (sepal_length, sepal_width, petal_length, petal_width) are not the model's (a, b, c, d)"
            )
        }
    }

    @Test("The command line's settings are saved and applied again on resume; given again, the new ones win")
    func overrides() throws {
        let saved = RunOverrides(epochs: 2000, learningRate: 0.01)
        let resumed = saved.updated(with: RunOverrides(learningRate: 0.02, seed: 4))
        #expect(resumed == RunOverrides(epochs: 2000, learningRate: 0.02, seed: 4))
        #expect(resumed.arguments == "--epochs 2000 --learning-rate 0.02 --seed 4" && RunOverrides().isEmpty)
        let file = try irisConfig(epochs: 3)
        let config = saved.applied(to: file)
        #expect(config.training.epochs == 2000 && config.optimizer.learningRate == 0.01 && config.training.seed == file.training.seed)
        // The neuron's iterations are its epochs: --epochs replaces them.
        let neuron = RunOverrides(epochs: 9).applied(to: try neuronConfig(iterations: 5))
        #expect(neuron.training.iterations == nil && neuron.training.epochs == 9 && neuron.desugared.training.epochs == 9)

        // Saved in the checkpoint, read back; overrides the saved config does not hold are refused.
        let run = try RunBuilder.build(config)
        let checkpoint = Checkpoint(run.engine, config: config, preprocessing: run.preprocessing, overrides: saved)
        #expect(try Checkpoint.decode(try checkpoint.encoded(), file: "f").state.overrides == saved)
        #expect(
            try Checkpoint.decode(try Checkpoint(run.engine, config: config, preprocessing: run.preprocessing).encoded(), file: "f").state.overrides
                == nil)
        let bytes = try editedState(checkpoint) { set(500, at: "overrides.epochs", in: &$0) }
        #expect(invalidField { () throws(CheckpointError) in try Checkpoint.decode(bytes, file: "f") } == "overrides")
    }

    @Test("Resuming a stopped run with fewer epochs than it reached is an error; a finished run has nothing to do")
    func endedBefore() throws {
        let config = try irisConfig(epochs: 3)
        var run = try RunBuilder.build(config)
        for _ in 0..<(9 * 2) { _ = run.engine.step() }  // two epochs of three
        let stopped = try Checkpoint.decode(try Checkpoint(run.engine, config: config, preprocessing: run.preprocessing).encoded(), file: "d/c")
        var shorter = config
        shorter.training.epochs = 1
        #expect(
            ResumeSettings.endedBefore(stopped, config: shorter)
                == .checkpointMismatch(
                    path: "d",
                    reason:
                        "the run stopped at epoch 2 of its 3, and 1 epochs end before that; give --epochs above 2, or leave --epochs out to go on to 3"
                ))
        #expect(try RunBuilder.build(shorter, resume: stopped).engine.isFinished)
        for _ in 0..<9 { _ = run.engine.step() }
        let finished = try Checkpoint.decode(try Checkpoint(run.engine, config: config, preprocessing: run.preprocessing).encoded(), file: "d/c")
        #expect(ResumeSettings.endedBefore(finished, config: config) == nil)
    }

    @Test("A model that does not fit the data is refused at the key at fault, with the data file")
    func modelAgainstData() throws {
        let iris = dataDirectory + "/iris.csv"
        let declared = try config(
            """
            model: {inputs: 5, layers: [{units: 8}, {units: 3, activation: softmax}]}
            data: {kind: csv, path: iris.csv, labelColumn: species}
            """)
        #expect(failure { try RunBuilder.build(declared) } == "test.yaml:1:17: model.inputs is 5 but the data has 4 features (data: \(iris))")
        let narrow = try config(
            """
            model:
              layers:
                - {units: 8}
                - {units: 2, activation: softmax}
            data: {kind: csv, path: iris.csv, labelColumn: species}
            """)
        #expect(
            failure { try RunBuilder.build(narrow) }
                == "test.yaml:4:15: model.layers[1].units: the last layer has 2 units but the data has 3 targets per sample (data: \(iris))")
        // A config built in code has no file to point at.
        var built = try irisConfig()
        built.origin = ConfigOrigin()
        built.model.inputs = 5
        #expect(failure { try RunBuilder.build(built) } == "the config: model.inputs is 5 but the data has 4 features (data: \(iris))")
    }

    @Test("Sizes past counting are config errors at their key, not traps: units past Int.max, epochs and a step schedule's every past 2⁵³ steps")
    func overflowingSizes() throws {
        let units = try config("model: {layers: [{units: 9223372036854775807}, {units: 1}]}\ndata: {kind: synthetic, name: xor}")
        #expect(
            failure { try RunBuilder.build(units) }.hasPrefix(
                "test.yaml:1:26: model.layers[0].units: Dense(2→9223372036854775807): 2 × 9223372036854775807 weights are more than can be counted"))
        #expect(throws: NetworkError.self) {
            _ = try Network<Float>(features: 2, layers: [(Int.max, .tanh), (1, .tanh)], loss: .halfSquaredError, seed: 1)
        }
        // 4611686018427387904 epochs of 8 iris steps are 2^65 steps.
        for schedule in ["{kind: constant}", "{kind: cosine}"] {
            let epochs = try config(
                """
                model: {layers: [{units: 8}, {units: 3, activation: softmax}]}
                data: {kind: csv, path: iris.csv, labelColumn: species}
                optimizer: {schedule: \(schedule)}
                training: {epochs: 4611686018427387904, batchSize: 16}
                """)
            #expect(
                failure { try RunBuilder.build(epochs) }
                    == "test.yaml:4:20: training.epochs: 4611686018427387904 epochs of 9 steps are more steps than can be counted; expected at most 1000799917193443"
            )
        }
        let every = try config(
            """
            model: {layers: [{units: 8}, {units: 3, activation: softmax}]}
            data: {kind: csv, path: iris.csv, labelColumn: species}
            optimizer: {schedule: {kind: step, every: 9223372036854775807}}
            """)
        #expect(
            failure { try RunBuilder.build(every) }.hasPrefix("test.yaml:3:43: optimizer.schedule.every: every 9223372036854775807 epochs of 5 steps")
        )
        // The neuron's iterations, a step each: 2⁵³ + 1 of them are refused at the key written.
        let iterations = try config(
            "model: {neuron: {weight: 0.5, bias: 0.5}}\ndata: {kind: sample, input: 0.01, target: 0.1}\ntraining: {iterations: 9007199254740993}")
        #expect(
            failure { try RunBuilder.build(iterations) }
                == "test.yaml:3:24: training.iterations: 9007199254740993 epochs of 1 steps are more steps than can be counted; expected at most 9007199254740992"
        )
    }

    @Test("A run larger than the machine's memory is refused before allocating, with both figures and the key")
    func memoryBudget() throws {
        let wide = try config("model: {layers: [{units: 1000000000}, {units: 1}]}\ndata: {kind: synthetic, name: xor}")
        let message = failure { try RunBuilder.build(wide) }
        #expect(message.hasPrefix("test.yaml:1:26: model.layers[0].units: the run needs about "), "\(message)")
        #expect(
            message.contains("but this machine has \(MemoryBudget.text(PhysicalMemory.bytes)); use fewer units or a smaller training.batchSize"),
            "\(message)")
        let many = try config(
            "model: {layers: [{units: 4}, {units: 1}]}\ndata: {kind: synthetic, name: sine, count: 1000000000000}")
        let manyMessage = failure { try RunBuilder.build(many) }
        // Per row: x and y, 4 bytes each, twice, and three 8-byte indices: 40 bytes.
        #expect(manyMessage.hasPrefix("test.yaml:2:44: data.count: the run needs about 40.0 TB of memory (data 40.0 TB)"), "\(manyMessage)")
        if PhysicalMemory.bytes < 40_000_000_000 {
            let billion = try config("model: {layers: [{units: 4}, {units: 1}]}\ndata: {kind: synthetic, name: sine, count: 1000000000}")
            #expect(failure { try RunBuilder.build(billion) }.contains("data.count: the run needs about 40.0 GB of memory"))
        }
        // What a small run needs is far below any machine's memory.
        var budget = MemoryBudget()
        budget.addNetwork(
            try ModelConfig(layers: [LayerConfig(units: 4), LayerConfig(units: 1)]).layers(Double.self, features: 2), features: 2, batchSize: 4,
            optimizer: OptimizerConfig(), scalarBytes: 8)
        // (2+1)·4 + (4+1)·1 = 17 parameters, twice (gradients), 8 bytes each; 4 rows × 7 units × 4 buffers × 8 bytes.
        #expect(budget.parameters == 17 * 2 * 8 && budget.activations == 4 * 7 * 4 * 8)
        #expect(MemoryBudget.text(999) == "999 bytes" && MemoryBudget.text(40_000_000_000_000) == "40.0 TB")
    }

    @Test("A transformer's attention buffers are in the estimate: quadratic in the block on the full path, linear on the tiled one")
    func attentionInBudget() throws {
        // The full path keeps batch × heads × time² weights; from block 128 attention runs tiled,
        // keeping log-sum-exps and tiles instead. Both keep [q | k | v], the heads' sums and their gradients.
        let full = try CausalSelfAttention<Float>(time: 1000, features: 8, heads: 2, path: .full)
        let tiled = try CausalSelfAttention<Float>(time: 1000, features: 8, heads: 2)
        #expect(full.cacheCount == 1000 * 1000 * 3 + 8 * 1000 * 8)
        #expect(tiled.path != .full && tiled.cacheCount > 8 * 1000 * 8 + 2 * 1000 && tiled.cacheCount < 2 * 8 * 1000 * 8)
        // The run's estimate counts the layer's caches for every row of the batch.
        var budget = MemoryBudget()
        budget.addNetwork([full], features: 1000 * 8, batchSize: 32, optimizer: OptimizerConfig(), scalarBytes: 4)
        #expect(budget.caches >= 32 * full.cacheCount * 4, "\(budget.caches)")
        // Worked by hand at time 3, 8 features, 2 heads: 3·3·(2 + 1) + 8·3·8 = 27 + 192 per sample.
        let attention = try CausalSelfAttention<Float>(time: 3, features: 8, heads: 2)
        #expect(attention.cacheCount == 219)
        // A residual block holds its body's outputs, input gradients and caches: LayerNorm's 24 twice
        // and its mean and 1/σ at each of 3 positions, attention's 24 twice and 219.
        let norm = try LayerNorm<Float>(shape: [3, 8])
        #expect(norm.cacheCount == 3 * 2)
        let block = try Residual<Float>([norm, attention])
        #expect(block.cacheCount == 24 * 2 + 3 * 2 + 24 * 2 + 219)
    }

    @Test("Data paths saved with a checkpoint are absolute, resolved against the working directory")
    func absoluteDataPaths() {
        var data = DataConfig(kind: .idx)
        (data.path, data.trainImages, data.trainLabels, data.testImages, data.testLabels) = ("a.csv", "/abs/b", "../c", "./d", nil)
        let resolved = data.withAbsolutePaths(relativeTo: "/work/run")
        #expect(resolved.path == "/work/run/a.csv" && resolved.trainImages == "/abs/b" && resolved.trainLabels == "/work/c")
        #expect(resolved.testImages == "/work/run/d" && resolved.testLabels == nil)
    }

    @Test("A number finite as written but infinite in float precision is refused at its key, not as 'inf'")
    func beyondFloat() throws {
        let text = "model: {layers: [{units: 3}, {units: 1}]}\ndata: {kind: synthetic, name: xor}\noptimizer: {learningRate: 1e308}\n"
        let message = failure { try RunBuilder.build(try config(text)) }
        #expect(message.hasPrefix("test.yaml:3:27: optimizer.learningRate: 1e+308 is beyond float precision"), "\(message)")
        #expect(!message.contains("got inf"))
        // In double precision the same number is a (huge, but finite) learning rate.
        #expect(failure { try RunBuilder.build(try config(text + "training: {precision: double}")) } == "no error")
    }
}

/// The description of the error `body` throws, or "no error".
private func failure(_ body: () throws -> Run) -> String {
    do {
        _ = try body()
        return "no error"
    } catch {
        return "\(error)"
    }
}
