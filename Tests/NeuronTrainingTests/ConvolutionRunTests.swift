import Foundation
import NeuronCore
import Testing

@testable import NeuronTraining

/// The 8×8 handwritten digits as images: conv 6 3×3 same → batch norm, relu → max pool 2 →
/// dropout 0.2 → flatten → 10 softmax, Adam, in Float: every new kind of layer, small enough for tests.
func digitsCNNConfig(epochs: Int = 3, layers: String? = nil) throws -> RunConfig {
    try config(
        """
        model:
          inputShape: [8, 8, 1]
          layers: \(layers ?? """
        [{kind: conv2d, filters: 6, kernel: 3, padding: same}, {kind: batchNorm, activation: relu}, {kind: maxPool2d, size: 2},
             {kind: dropout, rate: 0.2}, {kind: flatten}, {units: 10, activation: softmax}]
        """)
        data: {kind: csv, path: digits.csv, labelColumn: digit, normalization: standardize, validationSplit: 0.2}
        optimizer: {kind: adam, learningRate: 0.01}
        training: {epochs: \(epochs), batchSize: 32, seed: 7}
        """)
}

@Suite("Convolutional runs: config to network, training, exact resume, errors at the layer's key")
struct ConvolutionRunTests {
    @Test("A CNN config builds every layer kind and learns the digits")
    func trains() throws {
        let run = try RunBuilder.build(try digitsCNNConfig())
        let engine = try #require(run.engine as? NetworkTrainingEngine<Float, Adam<Float>>)
        #expect(
            engine.network.description
                == "Network[Conv2D(8×8×1→8×8×6, 3×3, padding 1, identity), BatchNorm(8×8×6, relu), MaxPool2D(8×8×6→4×4×6, 2×2), "
                + "Dropout(4×4×6, rate 0.2), Flatten(4×4×6→96), Dense(96→10, softmax)]")
        #expect(engine.network.stateTensors.map(\.name) == ["layers.1.running_mean", "layers.1.running_var"])
        let trained = straightRun(engine)
        let accuracy = try #require(trained.snapshot().validationAccuracy)
        #expect(accuracy > 0.9, "validation accuracy \(accuracy)")
        // The layer statistics cover the new layers: dead relu share and running statistics.
        let statistics = trained.network.layerStatistics()
        #expect(statistics[1].deadShare != nil && statistics[1].runningVariance != nil && statistics[0].deadShare == nil)
        #expect(statistics[0].weightNorm > 0 && statistics[0].gradientNorm > 0)
    }

    @Test("Stopped, saved and resumed mid-epoch, a CNN with dropout and batch norm ends bit for bit as the straight run")
    func exactResume() throws {
        let config = try digitsCNNConfig(epochs: 2)
        let straight = try #require(try RunBuilder.build(config).engine as? NetworkTrainingEngine<Float, Adam<Float>>)
        let whole = straightRun(straight)
        let first = try RunBuilder.build(config)
        let stopped = try #require(first.engine as? NetworkTrainingEngine<Float, Adam<Float>>)
        let half = straightRun(stopped, steps: 50)  // epoch 1 of 36 steps, then 14 into the second
        let saved = try Checkpoint.decode(try Checkpoint(half, config: first.config, preprocessing: first.preprocessing).encoded(), file: "resume")
        let resumed = try #require(try RunBuilder.build(config, resume: saved).engine as? NetworkTrainingEngine<Float, Adam<Float>>)
        #expect(resumed.network.noiseStep == 50)
        let finished = straightRun(resumed)
        #expect(finished.network.parameters.map(\.bitPattern) == whole.network.parameters.map(\.bitPattern))
        #expect(finished.network.state.map(\.bitPattern) == whole.network.state.map(\.bitPattern))
        #expect(finished.snapshot().validationLoss == whole.snapshot().validationLoss)
    }

    @Test("Evaluation and prediction run dropout and batch norm in evaluation mode: the same rows give the same numbers")
    func evaluationMode() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let config = try digitsCNNConfig(epochs: 1)
        let run = try RunBuilder.build(config)
        let trained = straightRun(try #require(run.engine as? NetworkTrainingEngine<Float, Adam<Float>>))
        try Checkpoint(trained, config: run.config, preprocessing: run.preprocessing).write(to: directory.path)
        let loaded = try Checkpoint.read(directory.path)
        #expect(loaded.state.config.model.inputShape == [8, 8, 1])
        let input = dataDirectory + "/digits.csv"
        let once = try Prediction<Float>.csv(loaded, input: input), twice = try Prediction<Float>.csv(loaded, input: input)
        #expect(once == twice)
        var network = try Prediction<Float>.network(loaded)
        #expect(network.state == trained.network.state)
        var g = SeededGenerator(seed: 3)
        let x = try Tensor<Float>(shape: [2, 64], scalars: (0..<128).map { _ in Float(g.uniform(-1, 1)) })
        let a = try network.forward(x), b = try network.forward(x)
        #expect(a == b)
    }

    @Test("Shapes that cannot be built are errors at the layer, naming it and the shapes")
    func impossibleShapes() throws {
        func failure(_ layers: String) -> String {
            do {
                _ = try RunBuilder.build(try digitsCNNConfig(layers: layers))
                return "no error"
            } catch {
                return "\(error)"
            }
        }
        let pools =
            "[{kind: maxPool2d, size: 2}, {kind: maxPool2d, size: 2}, {kind: maxPool2d, size: 2}, {kind: maxPool2d, size: 2}, {kind: flatten}, {units: 10, activation: softmax}]"
        #expect(
            failure(pools)
                == "test.yaml:3:96: model.layers[3]: MaxPool2D(1×1×1, 2×2): a 2×2 window does not fit its 1×1 input: input shape (1, 1, 1)")
        #expect(
            failure("[{kind: conv2d, filters: 4, kernel: 3}, {units: 10, activation: softmax}]")
                == "test.yaml:3:59: model.layers[1].units: Dense(10 units): takes vectors but receives 6×6×4 images; put a flatten layer before it")
        #expect(
            failure("[{kind: conv2d, filters: 4, kernel: 9}, {kind: flatten}, {units: 10, activation: softmax}]").hasSuffix(
                "model.layers[0]: Conv2D(8×8×1→4 filters, 9×9): a 9×9 window does not fit its 8×8 input: input shape (8, 8, 1)"))
        #expect(
            failure("[{kind: maxPool2d, filters: 3, size: 2}, {kind: flatten}, {units: 10, activation: softmax}]")
                == "test.yaml:3:30: model.layers[0].filters does not apply to a maxPool2d layer; it takes size, stride, global")
        #expect(
            failure("[{kind: conv2d, filters: 4}, {kind: flatten}, {units: 10, activation: softmax}]")
                == "test.yaml:3:12: missing key 'kernel' in model.layers[0]; a conv2d layer needs filters and kernel")
        #expect(
            failure("[{kind: dropout, rate: 1}, {units: 10, activation: softmax}]")
                == "test.yaml:3:34: model.layers[0].rate: expected a number in [0, 1); found 1")
        #expect(
            failure("[{kind: conv2d, filters: 4, kernel: 3, activation: softmax}, {kind: flatten}, {units: 10, activation: softmax}]")
                .contains("model.layers[0].activation: expected tanh, sigmoid, relu or identity for a conv2d layer"))
        // CSV rows need the image shape, and it must hold the row's features.
        var noShape = try digitsCNNConfig()
        noShape.model.inputShape = nil
        #expect(throws: ConfigError.self) { try RunBuilder.build(noShape) }
        var wrongShape = try digitsCNNConfig()
        wrongShape.model.inputShape = [8, 4, 1]
        #expect(throws: ConfigError.self) { try RunBuilder.build(wrongShape) }
    }
}

@Suite("Image runs whose shape the IDX files give: resume, the shape checked against the files and the tensors")
struct IDXImageRunTests {
    @Test("An IDX run without model.inputShape resumes from its checkpoint with its own config, to the straight run's weights")
    func resumesWithoutInputShape() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let config = try idxCNNConfig(in: directory)
        #expect(config.model.inputShape == nil)
        let first = try RunBuilder.build(config)
        #expect(first.config.model.inputShape == [6, 6, 1])
        let half = straightRun(try #require(first.engine as? NetworkTrainingEngine<Float, SGD<Float>>), steps: 5)
        let saved = try Checkpoint.decode(try Checkpoint(half, config: first.config, preprocessing: first.preprocessing).encoded(), file: "idx")
        let resumed = try #require(try RunBuilder.build(config, resume: saved).engine as? NetworkTrainingEngine<Float, SGD<Float>>)
        let straight = straightRun(try #require(try RunBuilder.build(config).engine as? NetworkTrainingEngine<Float, SGD<Float>>))
        #expect(straightRun(resumed).network.parameters.map(\.bitPattern) == straight.network.parameters.map(\.bitPattern))
    }

    @Test("model.inputShape other than the files' image shape is refused at its key, even of the same size")
    func inputShapeAgainstFiles() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        var config = try idxCNNConfig(in: directory)
        config.model.inputShape = [4, 9, 1]
        #expect {
            try RunBuilder.build(config)
        } throws: {
            "\($0)".contains("model.inputShape [4, 9, 1] is not the shape of the images in the files, [6, 6, 1]")
        }
        config.model.inputShape = [6, 6, 1]
        _ = try RunBuilder.build(config)
    }

    @Test("A checkpoint whose saved inputShape was edited to another of the same size is refused on load, by every command")
    func editedInputShape() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        // Global pooling: every tensor has the same shape for 6×6×1 and 4×9×1 images.
        let layers = "[{kind: conv2d, filters: 2, kernel: 3}, {kind: avgPool2d, global: true}, {kind: flatten}, {units: 10, activation: softmax}]"
        let run = try RunBuilder.build(try idxCNNConfig(in: directory, layers: layers))
        let checkpoint = Checkpoint(run.engine, config: run.config, preprocessing: run.preprocessing)
        _ = try Checkpoint.decode(try checkpoint.encoded(), file: "f")
        let bytes = try editedState(checkpoint) { set([4, 9, 1], at: "config.model.inputShape", in: &$0) }
        let message = checkpointErrorMessage { () throws(CheckpointError) in try Checkpoint.decode(bytes, file: "f") }
        #expect(message.hasPrefix("f: network: Network[Conv2D(6×6×1→4×4×2"), "\(message)")
        #expect(message.contains("make Network[Conv2D(4×9×1→2×7×2"), "\(message)")
        // A shape of another size, or one whose product overflows, is refused at the key.
        for shape in [[6, 6, 2], [16_777_216, 16_777_216, 16_777_216]] {
            let bytes = try editedState(checkpoint) { set(shape, at: "config.model.inputShape", in: &$0) }
            #expect(invalidField { () throws(CheckpointError) in try Checkpoint.decode(bytes, file: "f") } == "config.model.inputShape")
        }
    }
}

@Suite("Gradient check reports in the checkpoint's layout")
struct GradientCheckFileLayoutTests {
    @Test("Shapes are the checkpoint's, and each entry's position and index point at the same element in the file's tensor")
    func sameElement() throws {
        let run = try RunBuilder.build(try digitsCNNConfig(epochs: 1))
        let engine = try #require(run.engine as? NetworkTrainingEngine<Float, Adam<Float>>)
        let report = try engine.gradientCheck(try GradientCheck(samplesPerTensor: 6, seed: 3, worstCount: 60), batchSize: 4)
        let file = report.inFileLayout()
        let checkpoint = Checkpoint(engine, config: run.config, preprocessing: run.preprocessing)
        for t in file.tensors { #expect(checkpoint.tensors.first { $0.name == t.name }?.shape == t.shape, "\(t.name)") }
        #expect(file.tensors.first { $0.name == "layers.0.weight" }?.shape == [6, 1, 3, 3])
        #expect(file.tensors.first { $0.name == "layers.5.weight" }?.shape == [10, 96])
        let network = engine.network
        var weights = 0
        for (inEngine, inFile) in zip(report.worst, file.worst) {
            let stored = try #require(checkpoint.tensors.first { $0.name == inFile.name }).tensor(as: Float.self, source: "c")
            let tensor = try #require(network.parameterTensors.first { $0.name == inEngine.name })
            #expect(stored[inFile.index] == network.parameters[tensor.offset + inEngine.index], "\(inFile.name)\(inFile.position)")
            #expect(inFile.index == zip(inFile.position, stored.shape).reduce(0) { $0 * $1.1 + $1.0 })
            if inFile.name.hasSuffix(".weight"), stored.shape.count > 1 { weights += 1 }
        }
        #expect(weights >= 6, "\(weights) dense or convolution weight entries among the worst")
    }
}
