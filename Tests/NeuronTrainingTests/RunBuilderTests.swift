import Foundation
import NeuronCore
import Testing

@testable import NeuronTraining

/// Docs/Reference.md §3's neuron, for `iterations` steps.
private func neuronConfig(iterations: Int) throws -> RunConfig {
    try config(
        """
        model: {neuron: {weight: 0.5, bias: 0.5}}
        data: {kind: sample, input: 0.01, target: 0.1}
        optimizer: {kind: sgd, learningRate: 0.01}
        training: {iterations: \(iterations), precision: double}
        """)
}

/// Expects two engines to stand at the same step with the same numbers: every saved tensor bit
/// for bit, the position, the optimizer's step and the records.
private func expectSameState<E: TrainingEngine>(_ a: E, _ b: E, sourceLocation: SourceLocation = #_sourceLocation) {
    let (x, y) = (a.resumePoint(), b.resumePoint())
    #expect(x.tensors.map(\.name) == y.tensors.map(\.name), sourceLocation: sourceLocation)
    #expect(zip(x.tensors, y.tensors).allSatisfy { $0.tensor == $1.tensor }, "tensors differ", sourceLocation: sourceLocation)
    #expect(x.step == y.step && x.position == y.position && x.optimizerStep == y.optimizerStep, sourceLocation: sourceLocation)
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

    @Test("The neuron's config builds Docs/Reference.md §3's engine")
    func neuron() throws {
        let run = try RunBuilder.build(try ConfigLoader.load(dataDirectory + "/single-neuron.yaml"))
        let engine = try #require(run.engine as? NeuronTrainingEngine)
        #expect(engine.totalSteps == 100_000 && engine.learningRate == 0.01)
        #expect(engine.neuron.weights == [0.5] && engine.neuron.bias == 0.5 && engine.input == 0.01 && engine.target == 0.1)
        #expect(run.preprocessing == .none)
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

    @Test("The neuron resumes at its step with its records, and ends where Docs/Reference.md §3's run ends")
    func neuronResume() throws {
        let config = try neuronConfig(iterations: 1_000)
        var engine = try #require(try RunBuilder.build(config).engine as? NeuronTrainingEngine)
        for _ in 0..<250 { _ = engine.step() }
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        try Checkpoint(engine, config: config, preprocessing: .none).write(to: directory.path)
        let resumed = try #require(try RunBuilder.build(config, resume: try Checkpoint.read(directory.path)).engine as? NeuronTrainingEngine)
        #expect(resumed.stepsTaken == 250 && resumed.records.count == 25 && resumed.neuron == engine.neuron)
        let (a, b) = (straightRun(resumed), straightRun(engine))
        #expect(a.neuron == b.neuron && a.records == b.records && a.stepsTaken == 1_000)
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

    @Test("A model that does not fit the data is refused, saying why")
    func modelAgainstData() throws {
        var declared = try irisConfig()
        declared.model.inputs = 5
        #expect(throws: RunError.invalid("model.inputs is 5 but the data has 4 features")) { try RunBuilder.build(declared) }
        var narrow = try irisConfig()
        narrow.model.layers[1].units = 2
        #expect(throws: RunError.invalid("the last layer has 2 units but the data has 3 targets per sample")) { try RunBuilder.build(narrow) }
    }

    @Test("Data paths saved with a checkpoint are absolute, resolved against the working directory")
    func absoluteDataPaths() {
        var data = DataConfig(kind: .idx)
        (data.path, data.trainImages, data.trainLabels, data.testImages, data.testLabels) = ("a.csv", "/abs/b", "../c", "./d", nil)
        let resolved = data.withAbsolutePaths(relativeTo: "/work/run")
        #expect(resolved.path == "/work/run/a.csv" && resolved.trainImages == "/abs/b" && resolved.trainLabels == "/work/c")
        #expect(resolved.testImages == "/work/run/d" && resolved.testLabels == nil)
    }
}
