import NeuronCore
import Testing

@testable import NeuronTraining

@Suite("Training engines: a network on its data, and the single neuron")
struct TrainingEngineTests {
    @Test("Epochs whose steps cannot be counted are an error, not a trap in totalSteps")
    func countableSteps() throws {
        let network = try Network<Double>(features: 2, layers: [(1, .tanh)], loss: .halfSquaredError, seed: 1)
        // XOR's 4 rows in batches of 1: 4 steps an epoch, so Int.max / 2 epochs overflow.
        #expect(throws: DataError.self) {
            try NetworkTrainingEngine(
                network: network, optimizer: try SGD<Double>(learningRate: 0.1), dataset: Synthetic.xor(as: Double.self), batchSize: 1,
                epochs: Int.max / 2, seed: 1)
        }
        let engine = try NetworkTrainingEngine(
            network: network, optimizer: try SGD<Double>(learningRate: 0.1), dataset: Synthetic.xor(as: Double.self), batchSize: 1,
            epochs: Int.max / 4, seed: 1)
        #expect(engine.totalSteps == Int.max / 4 * 4)
    }

    @Test("A network's snapshot: validation after the last epoch, one statistics entry per layer")
    func networkSnapshot() throws {
        let engine = try #require(try RunBuilder.build(try irisConfig(epochs: 2)).engine as? NetworkTrainingEngine<Float, SGD<Float>>)
        #expect(engine.snapshot().validationLoss == nil && engine.snapshot().layers.count == 2)
        let trained = straightRun(engine, steps: 8)  // one epoch
        let snapshot = trained.snapshot()
        var network = trained.network
        let validation = try network.evaluate(try #require(trained.validation))
        #expect(snapshot.validationLoss == validation.loss && snapshot.validationAccuracy == validation.accuracy)
        #expect(snapshot.records.count == 1 && snapshot.records[0].validationLoss == validation.loss)
        #expect(snapshot.layers == trained.network.layerStatistics())
    }

    @Test("A network's resume point: parameters then optimizer buffers, the position and the records")
    func networkResumePoint() throws {
        let engine = straightRun(try xorEngine(epochs: 5), steps: 3)
        let point = engine.resumePoint()
        #expect(point.tensors.map(\.name) == ["layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias", "optimizer.velocity"])
        #expect(point.tensors[0].tensor == engine.network.parameter(engine.network.parameterTensors[0]))
        #expect(point.tensors[4].tensor.scalars == engine.training.optimizer.state["velocity"])
        #expect(point.network == engine.title && point.step == 3 && point.epoch == 3 && point.optimizerStep == 3)
        #expect(point.position == engine.training.position && point.records == engine.records && point.seed == 1)
        #expect(point.featureNames == engine.training.dataset.featureNames && point.classNames == nil)
    }

    @Test("The final evaluation is on the test rows, else the validation rows, else none")
    func finalEvaluation() throws {
        let iris = try #require(try RunBuilder.build(try irisConfig()).engine as? NetworkTrainingEngine<Float, SGD<Float>>)
        var network = iris.network
        let evaluated = try #require(try iris.finalEvaluation())
        let validation = try network.evaluate(try #require(iris.validation))
        #expect(evaluated.name == "validation" && evaluated.evaluation == validation)
        #expect(try xorEngine(epochs: 1).finalEvaluation() == nil)
        #expect(try NeuronTrainingEngine().finalEvaluation() == nil)
    }

    @Test("Gradient checks pass on both engines; the neuron's includes its input")
    func gradientChecks() throws {
        #expect(try xorEngine(epochs: 1).checkGradients().passed)
        let neuron = try NeuronTrainingEngine().checkGradients()
        #expect(neuron.passed && neuron.tensors.map(\.name) == ["layers.0.weight", "layers.0.bias", "input"])
    }

    @Test("The neuron records every 1% of its steps and the last one, and resumes with them", arguments: [(1_000, 100), (150, 150), (205, 103)])
    func neuronRecords(iterations: Int, records: Int) throws {
        let engine = straightRun(try NeuronTrainingEngine(iterations: iterations))
        #expect(engine.records.count == records && engine.records.last?.step == iterations)
        #expect(engine.records.allSatisfy { $0.epoch == $0.step && $0.trainingAccuracy == nil && $0.validationLoss == nil })
        let half = straightRun(try NeuronTrainingEngine(iterations: iterations), steps: iterations / 2)
        let resumed = try NeuronTrainingEngine(iterations: iterations)
            .restored(weight: half.neuron.weights[0], bias: half.neuron.bias, stepsTaken: half.stepsTaken, records: half.records)
        let ended = straightRun(resumed)
        #expect(ended.records == engine.records && ended.neuron == engine.neuron)
    }

    @Test("The neuron's snapshot is Docs/Reference.md §1's row; its resume point is the one-unit network it equals")
    func neuronReports() throws {
        let engine = try NeuronTrainingEngine()
        let row = try #require(engine.snapshot().neuron)
        #expect(row.net == 0.505 && row.output == Double.libmTanh(0.505) && row.error == Double.libmTanh(0.505) - 0.1)
        #expect(row.weight == 0.5 && row.bias == 0.5 && row.input == 0.01 && row.target == 0.1)
        let point = straightRun(engine, steps: 7).resumePoint()
        #expect(point.network == "Network[Dense(1→1, tanh)]" && point.tensors.map(\.name) == ["layers.0.weight", "layers.0.bias"])
        #expect(point.tensors.map(\.tensor.shape) == [[1, 1], [1]] && point.position == nil && point.step == 7 && point.featureNames == ["x"])
    }
}
