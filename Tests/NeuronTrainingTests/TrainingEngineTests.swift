import NeuronCore
import Testing

@testable import NeuronTraining

@Suite("The training engine: a network on its data, the single neuron among them")
struct TrainingEngineTests {
    @Test("Epochs whose steps cannot be counted (past 2⁵³) are an error, not a trap in totalSteps")
    func countableSteps() throws {
        let network = try Network<Double>(features: 2, layers: [(1, .tanh)], loss: .halfSquaredError, seed: 1)
        // XOR's 4 rows in batches of 1: 4 steps an epoch, so 2⁵¹ + 1 epochs are past 2⁵³ steps, and Int.max / 2 overflow.
        for epochs in [(1 << 51) + 1, Int.max / 2] {
            #expect(throws: DataError.self) {
                try NetworkTrainingEngine(
                    network: network, optimizer: try SGD<Double>(learningRate: 0.1), dataset: Synthetic.xor(as: Double.self), batchSize: 1,
                    epochs: epochs, seed: 1)
            }
        }
        let engine = try NetworkTrainingEngine(
            network: network, optimizer: try SGD<Double>(learningRate: 0.1), dataset: Synthetic.xor(as: Double.self), batchSize: 1,
            epochs: 1 << 51, seed: 1)
        #expect(engine.totalSteps == 1 << 53)
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
        #expect(point.network == engine.title && point.progress.step == 3 && point.progress.epoch == 3 && point.optimizerStep == 3)
        #expect(point.position == engine.training.position && point.records == engine.records && point.progress.seed == 1)
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
        #expect(try neuronEngine().finalEvaluation() == nil)
    }

    @Test("Gradient checks pass on a network and on the single neuron")
    func gradientChecks() throws {
        #expect(try xorEngine(epochs: 1).checkGradients().passed)
        let neuron = try neuronEngine().checkGradients()
        #expect(neuron.passed && neuron.tensors.map(\.name) == ["layers.0.weight", "layers.0.bias"])
    }

    @Test("The neuron's config trains Docs/Reference.md §3's trajectory bit for bit: Neuron's own steps, loss for loss")
    func neuronTrajectory() throws {
        var neuron = Neuron<Double>(weight: 0.5, bias: 0.5)
        let losses = try neuron.train(inputs: [0.01], target: 0.1, learningRate: 0.01, iterations: 100_000)
        let engine = straightRun(try neuronEngine())
        #expect(engine.network.parameters == [0.4959537581015022, 0.09537581015006125])
        #expect(engine.network.parameters == [neuron.weights[0], neuron.bias])
        #expect(engine.snapshot().neuron?.output == 0.1000000000000007)
        // A record every 1,000 steps: the loss before that step, as the neuron computed it.
        #expect(engine.records.count == 100 && engine.records.allSatisfy { $0.trainingLoss == losses[$0.step - 1] })
    }

    @Test(
        "On one sample the engine records every 1% of its epochs and the last one, and resumes with them",
        arguments: [(1_000, 100), (150, 150), (205, 103)])
    func neuronRecords(iterations: Int, records: Int) throws {
        let engine = straightRun(try neuronEngine(iterations: iterations))
        #expect(engine.records.count == records && engine.records.last?.step == iterations)
        #expect(engine.records.allSatisfy { $0.epoch == $0.step && $0.trainingAccuracy == nil && $0.validationLoss == nil })
        let half = straightRun(try neuronEngine(iterations: iterations), steps: iterations / 2)
        let resumed = try NetworkTrainingEngine(
            network: half.network, optimizer: half.training.optimizer, dataset: half.training.dataset, validation: nil, test: nil,
            epochs: iterations, seed: nil, position: .oneSample(after: half.stepsTaken), records: half.records)
        let ended = straightRun(resumed)
        #expect(ended.records == engine.records && ended.network.parameters == engine.network.parameters)
    }

    @Test("Only one sample trains without a seed: more have an order to draw")
    func seedless() throws {
        let network = try Network<Double>(features: 2, layers: [(1, .tanh)], loss: .halfSquaredError, seed: 1)
        #expect(throws: DataError.self) {
            try NetworkTrainingEngine(
                network: network, optimizer: try SGD<Double>(learningRate: 0.1), dataset: Synthetic.xor(as: Double.self), batchSize: 4,
                epochs: 1, seed: nil)
        }
    }

    @Test("The neuron's snapshot is Docs/Reference.md §1's row; its resume point is the one-unit network, with no position")
    func neuronReports() throws {
        let engine = try neuronEngine()
        let row = try #require(engine.snapshot().neuron)
        #expect(row.net == 0.505 && row.output == Double.libmTanh(0.505) && row.error == Double.libmTanh(0.505) - 0.1)
        #expect(row.weight == 0.5 && row.bias == 0.5 && row.input == 0.01 && row.target == 0.1)
        let point = straightRun(engine, steps: 7).resumePoint()
        #expect(point.network == "Network[Dense(1→1, tanh)]" && point.tensors.map(\.name) == ["layers.0.weight", "layers.0.bias"])
        #expect(
            point.tensors.map(\.tensor.shape) == [[1, 1], [1]] && point.position == nil && point.progress.step == 7 && point.featureNames == ["x"])
        #expect(engine.seed == nil && point.progress.seed == nil && point.progress.epoch == 7 && point.optimizerStep == 7)
        // A network of one tanh unit on more than one sample is not the neuron: no row.
        #expect(try xorEngine(epochs: 1).snapshot().neuron == nil)
    }
}
