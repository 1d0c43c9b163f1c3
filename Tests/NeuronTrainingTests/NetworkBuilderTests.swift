import NeuronCore
import Testing

@testable import NeuronTraining

@Suite("Network builder: the network, optimizer and schedule a config names")
struct NetworkBuilderTests {
    @Test("Layers, loss and seeded weights as the config says; the loss follows the output layer when not given")
    func network() throws {
        let model = ModelConfig(layers: [LayerConfig(units: 4), LayerConfig(units: 1, activation: .identity)])
        let network: Network<Double> = try model.network(features: 2, seed: 7)
        #expect(network.description == "Network[Dense(2→4, tanh), Dense(4→1, identity)]" && network.loss == .halfSquaredError)
        // The same weights as the network built by hand from the same seed.
        let direct = try Network<Double>(features: 2, layers: [(4, .tanh), (1, .identity)], loss: .halfSquaredError, seed: 7)
        #expect(network.parameters == direct.parameters)

        let softmax = ModelConfig(layers: [LayerConfig(units: 3, activation: .softmax)])
        #expect(try softmax.network(Float.self, features: 4, seed: 1).loss == .softmaxCrossEntropy)
        let given = ModelConfig(layers: [LayerConfig(units: 3, activation: .sigmoid)], loss: .halfSquaredError)
        #expect(try given.network(Float.self, features: 4, seed: 1).loss == .halfSquaredError)
    }

    @Test("layerNorm and gelu build over vectors and over a text model's sequences, with their defaults; not over images")
    func layerNormAndGELU() throws {
        var norm = LayerConfig(kind: .layerNorm), gelu = LayerConfig(kind: .gelu)
        let vectors = ModelConfig(layers: [LayerConfig(units: 6, activation: .identity), norm, gelu, LayerConfig(units: 2)])
        let network: Network<Float> = try vectors.network(features: 3, seed: 1)
        #expect(network.description == "Network[Dense(3→6, identity), LayerNorm(6), GELU(6), Dense(6→2, tanh)]")
        #expect(
            (network.layers[1] as? LayerNorm<Float>)?.epsilon == 1e-5 && (network.layers[2] as? GELU<Float>)?.approximation == GELUApproximation.none)
        #expect(
            network.parameterTensors[2].name == "layers.1.weight" && network.parameter(network.parameterTensors[2]).scalars == [1, 1, 1, 1, 1, 1])

        (norm.epsilon, gelu.approximation) = (1e-6, .tanh)
        var embedding = LayerConfig(kind: .embedding)
        embedding.features = 3
        let text = ModelConfig(layers: [embedding, norm, gelu, LayerConfig(units: 5, activation: .identity)])
        let sequences: Network<Double> = try text.network(features: 4, vocabulary: 5, seed: 1)
        #expect(
            sequences.description
                == "Network[Embedding(5→3), LayerNorm(4×3), GELU(4×3, tanh), Dense(3→5, identity, per position)]")
        #expect((sequences.layers[1] as? LayerNorm<Double>)?.epsilon == 1e-6)

        let images = ModelConfig(inputShape: [2, 2, 1], layers: [LayerConfig(kind: .layerNorm), LayerConfig(kind: .flatten), LayerConfig(units: 1)])
        do {
            _ = try images.network(Float.self, features: 4, seed: 1)
            Issue.record("a layerNorm over images was built")
        } catch {
            #expect(
                error.path == "model.layers[0]" && "\(error)".contains("LayerNorm(2×2×1): takes (features) vectors or (time, features) sequences"))
        }
    }

    @Test("The single neuron desugars to one tanh unit with half the squared error, at its weight and bias, in Double")
    func neuron() throws {
        let neuron = try neuronConfig(iterations: 7)
        let desugared = neuron.desugared
        #expect(desugared.model.neuron == nil && desugared.model.layers == [LayerConfig(units: 1, activation: .tanh)])
        #expect(desugared.model.startingParameters == [0.5, 0.5] && desugared.model.inputs == 1)
        #expect(desugared.training.epochs == 7 && desugared.training.iterations == nil && desugared.training.precision == .double)
        #expect(desugared.optimizer == neuron.optimizer && desugared.data == neuron.data)
        let network = try desugared.model.network(Double.self, features: 1, seed: 3)
        #expect(network.description == "Network[Dense(1→1, tanh)]" && network.loss == .halfSquaredError && network.parameters == [0.5, 0.5])
        // A network config is its own desugaring.
        let xor = try ConfigLoader.load(dataDirectory + "/xor.yaml")
        #expect(xor.desugared == xor)
    }

    @Test("Each optimizer kind builds its optimizer with the config's hyperparameters")
    func optimizers() throws {
        var config = OptimizerConfig()
        (config.learningRate, config.momentum, config.nesterov, config.weightDecay) = (0.5, 0.9, true, 0.01)
        let sgd = try config.optimizer(Float.self, stepsPerEpoch: 1, epochs: 1, decayedRanges: [0..<4])
        let expectedSGD = try SGD<Float>(learningRate: 0.5, momentum: 0.9, nesterov: true, weightDecay: 0.01)
        #expect(sgd is SGD<Float> && sgd.description == expectedSGD.description)

        config = OptimizerConfig()
        (config.kind, config.learningRate, config.beta1, config.beta2, config.epsilon) = (.adam, 0.002, 0.8, 0.99, 1e-6)
        (config.weightDecay, config.decoupled) = (0.1, true)
        let adam = try config.optimizer(Double.self, stepsPerEpoch: 1, epochs: 1, decayedRanges: [0..<4])
        let expectedAdam = try Adam<Double>(learningRate: 0.002, beta1: 0.8, beta2: 0.99, epsilon: 1e-6, weightDecay: 0.1, decoupled: true)
        #expect(adam is Adam<Double> && adam.description == expectedAdam.description)

        // decay: matrices hands the network's ranges to the optimizer; all, the default, hands none.
        config.decay = .matrices
        let matrices = try #require(try config.optimizer(Double.self, stepsPerEpoch: 1, epochs: 1, decayedRanges: [2..<5]) as? Adam<Double>)
        #expect(matrices.decay == .matrices([2..<5]) && matrices.description.hasSuffix("weightDecay: 0.1, decay: matrices)"))
        config.decay = .all
        #expect(try #require(try config.optimizer(Double.self, stepsPerEpoch: 1, epochs: 1, decayedRanges: [2..<5]) as? Adam<Double>).decay == .all)

        // Every kind builds (a new kind without a case here fails to compile in the builder, not here).
        for kind in OptimizerConfig.Kind.allCases {
            config.kind = kind
            config.decoupled = kind == .adam
            config.nesterov = false
            _ = try config.optimizer(Float.self, stepsPerEpoch: 1, epochs: 1, decayedRanges: [0..<4])
        }
    }

    @Test("Schedules count epochs in the config and steps in the optimizer: 2 epochs of 5 steps are 10 steps")
    func schedules() throws {
        var schedule = ScheduleConfig()
        #expect(try schedule.learningRateSchedule(stepsPerEpoch: 5, epochs: 3) == .constant)
        (schedule.kind, schedule.every) = (.step, 2)
        #expect(try schedule.learningRateSchedule(stepsPerEpoch: 5, epochs: 3) == .step(every: 10, factor: 0.1))
        schedule.factor = 0.5
        #expect(try schedule.learningRateSchedule(stepsPerEpoch: 5, epochs: 3) == .step(every: 10, factor: 0.5))
        schedule = ScheduleConfig()
        schedule.kind = .cosine
        #expect(try schedule.learningRateSchedule(stepsPerEpoch: 5, epochs: 3) == .cosine(totalSteps: 15, minimumFactor: 0))
        schedule.minimumFactor = 0.1
        #expect(try schedule.learningRateSchedule(stepsPerEpoch: 5, epochs: 3) == .cosine(totalSteps: 15, minimumFactor: 0.1))
        // Warmup counts steps: 4 of the 15, the cosine over the other 11; a constant rate after it.
        schedule.warmupSteps = 4
        #expect(
            try schedule.learningRateSchedule(stepsPerEpoch: 5, epochs: 3) == .warmup(steps: 4, then: .cosine(totalSteps: 11, minimumFactor: 0.1)))
        schedule.kind = .constant
        #expect(try schedule.learningRateSchedule(stepsPerEpoch: 5, epochs: 3) == .warmup(steps: 4, then: .constant))
        schedule.warmupSteps = 0
        #expect(try schedule.learningRateSchedule(stepsPerEpoch: 5, epochs: 3) == .constant)
        // A warmup as long as the run leaves no step after it.
        schedule.warmupSteps = 15
        #expect(throws: OptimizerError.invalidHyperparameter(name: "warmupSteps", value: "15", allowed: "fewer than the run's 15 steps")) {
            try schedule.learningRateSchedule(stepsPerEpoch: 5, epochs: 3)
        }
    }

    @Test("Steps past 2⁵³ are an error, not a trap: a cosine over huge epochs, a step every Int.max epochs")
    func scheduleOverflow() throws {
        var schedule = ScheduleConfig()
        schedule.kind = .cosine
        #expect(throws: OptimizerError.self) { try schedule.learningRateSchedule(stepsPerEpoch: 9, epochs: 4_611_686_018_427_387_904) }
        // 2⁵¹ epochs of 4 steps are 2⁵³, the most a run counts; one epoch more is refused with the bound.
        #expect(try schedule.learningRateSchedule(stepsPerEpoch: 4, epochs: 1 << 51) == .cosine(totalSteps: 1 << 53, minimumFactor: 0))
        #expect(
            throws: OptimizerError.invalidHyperparameter(
                name: "cosine schedule's epochs", value: "2251799813685249 epochs", allowed: "at most 2251799813685248 epochs of 4 steps")
        ) { try schedule.learningRateSchedule(stepsPerEpoch: 4, epochs: (1 << 51) + 1) }
        (schedule.kind, schedule.every) = (.step, Int.max)
        #expect(throws: OptimizerError.self) { try schedule.learningRateSchedule(stepsPerEpoch: 2, epochs: 1) }
    }

    @Test("A precision names its scalar type")
    func precision() {
        #expect(TrainingConfig.Precision(Float.self) == .float && TrainingConfig.Precision(Double.self) == .double)
    }

    @Test("Prediction rebuilds from a checkpoint the network the run trains")
    func predictionMatchesRun() throws {
        var data = DataConfig(kind: .synthetic)
        data.name = .xor
        var config = RunConfig(model: ModelConfig(layers: [LayerConfig(units: 4), LayerConfig(units: 1)]), data: data)
        config.training.precision = .double
        let run = try RunBuilder.build(config)
        let engine = try #require(run.engine as? NetworkTrainingEngine<Double, SGD<Double>>)
        let checkpoint = Checkpoint(engine, config: run.config, preprocessing: run.preprocessing)
        let loaded = LoadedCheckpoint(
            path: "run", file: "run/checkpoint.safetensors", state: checkpoint.state,
            tensors: Dictionary(uniqueKeysWithValues: checkpoint.tensors.map { ($0.name, $0) }))
        #expect(loaded.state.precision == .double)
        let rebuilt = try Prediction<Double>.network(loaded)
        #expect(rebuilt.description == engine.network.description && rebuilt.parameters == engine.network.parameters)
    }
}
