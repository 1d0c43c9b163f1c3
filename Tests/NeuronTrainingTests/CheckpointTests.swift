import Foundation
import NeuronCore
import Testing

@testable import NeuronTraining

/// A real checkpoint: iris (4-8-3 tanh/softmax, SGD with momentum, batches of 16, 9 an epoch)
/// after `steps` steps, with its run state.
func irisCheckpoint(steps: Int = 13, optimizer: String = "{kind: sgd, learningRate: 0.1, momentum: 0.9}") throws -> Checkpoint {
    let config = try irisConfig(epochs: 3, optimizer: optimizer)
    let run = try RunBuilder.build(config)
    func stepped<E: TrainingEngine>(_ engine: E) -> Checkpoint {
        var engine = engine
        for _ in 0..<steps { _ = engine.step() }
        return Checkpoint(engine, config: config, preprocessing: run.preprocessing)
    }
    return stepped(run.engine)
}

/// `checkpoint`'s file bytes with its run state's JSON edited as a dictionary (to write what the
/// typed state cannot hold: a generator of one word, a batch index of -1).
func editedState(_ checkpoint: Checkpoint, _ edit: (inout [String: Any]) throws -> Void) throws -> [UInt8] {
    let (entries, metadata) = try SafeTensors.decode(try checkpoint.encoded(), source: "edited")
    var state = try #require(try JSONSerialization.jsonObject(with: Data(metadata[Checkpoint.stateKey]!.utf8)) as? [String: Any])
    try edit(&state)
    var edited = metadata
    edited[Checkpoint.stateKey] = String(decoding: try JSONSerialization.data(withJSONObject: state), as: UTF8.self)
    return SafeTensors.encode(entries, metadata: edited)
}

/// Sets the value at a dotted key path (`position.generator.state`) of a JSON dictionary.
func set(_ value: Any, at path: String, in object: inout [String: Any]) {
    let keys = path.split(separator: ".").map(String.init)
    func assign(_ dictionary: inout [String: Any], _ keys: ArraySlice<String>) {
        guard let key = keys.first else { return }
        if keys.count == 1 {
            dictionary[key] = value
        } else {
            var inner = dictionary[key] as? [String: Any] ?? [:]
            assign(&inner, keys.dropFirst())
            dictionary[key] = inner
        }
    }
    assign(&object, keys[...])
}

/// The value at a dotted key path of a JSON dictionary.
func value(at path: String, in object: [String: Any]) -> Any? {
    var current: Any? = object
    for key in path.split(separator: ".") { current = (current as? [String: Any])?[String(key)] }
    return current
}

/// The field an invalid state error names, or what else `body` did.
func invalidField(_ body: () throws(CheckpointError) -> LoadedCheckpoint) -> String {
    do {
        _ = try body()
        return "loaded"
    } catch {
        guard case let .invalidState(_, field, _) = error else { return "\(error)" }
        return field
    }
}

@Suite("Checkpoint: one file, its run state in the header, every field checked on load")
struct CheckpointTests {
    @Test("Write then read gives the same state and tensors, from the directory or the file, and leaves one file")
    func roundTrip() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let checkpoint = try irisCheckpoint()
        try checkpoint.write(to: directory.path)
        // One file, one rename: nothing beside it to tear from it, and no temporary file left.
        #expect(try directory.names() == ["checkpoint.safetensors"])
        for path in [directory.path, directory.file("checkpoint.safetensors")] {
            let loaded = try Checkpoint.read(path)
            #expect(loaded.path == directory.path && loaded.file == directory.file("checkpoint.safetensors"))
            #expect(loaded.state == checkpoint.state)
            #expect(checkpoint.tensors.allSatisfy { loaded.tensors[$0.name] == $0 } && loaded.tensors.count == checkpoint.tensors.count)
        }
        // The header's short keys say what the file holds without parsing the state.
        let (_, metadata) = try SafeTensors.read(directory.file("checkpoint.safetensors"))
        #expect(metadata["format"] == "neuron-2" && metadata["step"] == "13" && metadata["epoch"] == "1" && metadata["precision"] == "float")
        #expect(metadata["network"] == "Network[Dense(4→8, tanh), Dense(8→3, softmax)]")
    }

    @Test("Dense weights are stored as PyTorch's nn.Linear holds them, (outputs, inputs), and read back bit for bit")
    func pytorchLayout() throws {
        let config = try irisConfig()
        let run = try RunBuilder.build(config)
        let engine = try #require(run.engine as? NetworkTrainingEngine<Float, SGD<Float>>)
        let checkpoint = Checkpoint(engine, config: config, preprocessing: run.preprocessing)
        let weight = try #require(checkpoint.tensors.first { $0.name == "layers.0.weight" })
        #expect(weight.shape == [8, 4])
        // Element (out, in) of the file is element (in, out) of the engine's (inputs, outputs) weight.
        let stored = try weight.tensor(as: Float.self, source: "test")
        let engineWeight = engine.network.parameter(engine.network.parameterTensors[0])
        for o in 0..<8 { for i in 0..<4 { #expect(stored[o, i].bitPattern == engineWeight[i, o].bitPattern) } }
        let loaded = try Checkpoint.decode(try checkpoint.encoded(), file: "test")
        #expect(try Prediction<Float>.network(loaded).parameters == engine.network.parameters)
    }

    @Test("Non-finite numbers in the records (an infinite validation loss) are saved and read back")
    func nonFiniteRecords() throws {
        var checkpoint = try irisCheckpoint()
        checkpoint.state.records[0].validationLoss = .infinity
        let bytes = try checkpoint.encoded()
        #expect(try Checkpoint.decode(bytes, file: "test").state == checkpoint.state)
        #expect(try SafeTensors.decode(bytes, source: "test").metadata[Checkpoint.stateKey]!.contains(#""validationLoss":"Infinity""#))
    }

    @Test("A file without the run state (format 1, or not ours) is refused, saying so")
    func missingState() throws {
        let checkpoint = try irisCheckpoint()
        let bytes = SafeTensors.encode(checkpoint.tensors, metadata: ["step": "13"])
        #expect {
            try Checkpoint.decode(bytes, file: "run/checkpoint.safetensors")
        } throws: { error in
            let message = "\(error)"
            return message.hasPrefix("run/checkpoint.safetensors: __metadata__.neuron.state: missing") && message.contains("format 1")
        }
        let garbled = try editedState(checkpoint) { $0 = ["format": "two"] }
        #expect(invalidField { () throws(CheckpointError) in try Checkpoint.decode(garbled, file: "f") } == "format")
    }

    @Test("A loaded tensor comes in the asked type and shape, or a message says what is wrong")
    func loadedTensor() throws {
        let loaded = try Checkpoint.decode(try irisCheckpoint().encoded(), file: "run/checkpoint.safetensors")
        #expect(try loaded.tensor("layers.1.bias", as: Float.self, shape: [3]).count == 3)
        #expect(throws: CheckpointError.shapeMismatch(path: "run/checkpoint.safetensors", name: "layers.0.weight", found: [8, 4], expected: [4, 8])) {
            try loaded.tensor("layers.0.weight", as: Float.self, shape: [4, 8])
        }
        #expect(throws: CheckpointError.missingTensor(path: "run/checkpoint.safetensors", name: "layers.2.weight")) {
            try loaded.tensor("layers.2.weight", as: Float.self, shape: [3, 1])
        }
    }

    /// Edits of a real checkpoint's run state, each of which once crashed, hung or overflowed
    /// later, and the field the refusal names.
    static let stateEdits: [(edit: String, path: String, json: String, field: String)] = [
        ("position.batchIndex -1", "position.batchIndex", "-1", "position.batchIndex"),
        (
            "weight decay 1e308 in a float run (finite as a Double, infinite as a Float)", "config.optimizer.weightDecay", "1e308",
            "config.optimizer.weightDecay"
        ),
        ("position.batchIndex past the epoch", "position.batchIndex", "9", "position.batchIndex"),
        ("generator state []", "position.generator.state", "[]", "position.generator.state"),
        ("generator state [1]", "position.generator.state", "[1]", "position.generator.state"),
        (
            "generator state [0, 0, 0, 0] (xoshiro never leaves it: resume spun forever)", "position.generator.state", "[0, 0, 0, 0]",
            "position.generator.state"
        ),
        ("position.epoch Int.max", "position.epoch", "9223372036854775807", "position.epoch"),
        ("epoch Int.max", "epoch", "9223372036854775807", "epoch"),
        ("classNames shorter than the outputs", "classNames", #"["setosa", "versicolor"]"#, "classNames"),
        ("saved batchSize 0", "config.training.batchSize", "0", "config.training.batchSize"),
        ("saved blasThreads 3e9", "config.training.blasThreads", "3000000000", "config.training.blasThreads"),
        (
            "saved batchThreads 257 (the loader's bound, 256, not OpenBLAS's 1024)", "config.training.batchThreads", "257",
            "config.training.batchThreads"
        ),
        (
            "saved dropout rate 1", "config.model.layers",
            #"[{"units": 16, "activation": "tanh"}, {"kind": "dropout", "rate": 1}, {"units": 3, "activation": "softmax"}]"#,
            "config.model.layers[1].rate"
        ),
        ("saved epochs Int.max", "config.training.epochs", "9223372036854775807", "config.training.epochs"),
        (
            "a step schedule every Int.max epochs", "config.optimizer.schedule", #"{"kind": "step", "every": 9223372036854775807}"#,
            "config.optimizer.schedule.every"
        ),
        ("a learning rate of 0", "config.optimizer.learningRate", "0", "config.optimizer.learningRate"),
        (
            "saved units 1e12", "config.model.layers", #"[{"units": 1000000000000, "activation": "tanh"}, {"units": 3, "activation": "softmax"}]"#,
            "layers.0.weight"
        ),
        (
            "epoch order not a permutation", "position.batches.order", "[" + Array(repeating: "0", count: 120).joined(separator: ",") + "]",
            "position.batches.order"
        ),
        ("epoch order shorter than its count", "position.batches.order", "[0, 1, 2]", "position.batches.order"),
        ("a huge sample count", "position.batches.count", "1152921504606846976", "position.batches.order"),
        ("step inconsistent with the optimizer's", "step", "14", "optimizerStep"),
        ("optimizer step inconsistent", "optimizerStep", "3", "optimizerStep"),
        ("stepsTaken inconsistent with the step", "position.stepsTaken", "12", "position.stepsTaken"),
        ("negative step", "step", "-5", "step"),
        ("epoch progress of another batch", "position.epochProgress.batches", "7", "position.epochProgress.batches"),
        ("optimizer kind of another config", "optimizerKind", #""adam""#, "optimizerKind"),
        ("a standard deviation of 0", "preprocessing.standardize.standardDeviation", "[1, 0, 1, 1]", "preprocessing"),
        ("fewer feature names than inputs", "featureNames", #"["a", "b"]"#, "layers.0.weight"),
        (
            "more records than epochs", "records", #"[{"epoch": 1, "step": 8, "trainingLoss": 1}, {"epoch": 1, "step": 8, "trainingLoss": 1}]"#,
            "records"
        ),
        ("the generator as a string", "position.generator.state", #""1,2,3,4""#, "position.generator.state"),
        ("no position", "position", "null", "position"),
        ("a precision other than the config's", "precision", #""double""#, "precision"),
    ]

    @Test("Every edited field is refused with a typed error naming the file and the field", arguments: stateEdits.indices)
    func editedFields(index: Int) throws {
        let (edit, path, json, field) = Self.stateEdits[index]
        let value = try JSONSerialization.jsonObject(with: Data(json.utf8), options: .fragmentsAllowed)
        let bytes = try editedState(try irisCheckpoint()) { NeuronTrainingTests.set(value, at: path, in: &$0) }
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let file = try directory.write(bytes, "checkpoint.safetensors")
        #expect(invalidField { () throws(CheckpointError) in try Checkpoint.read(directory.path) } == field, "\(edit)")
        #expect(
            checkpointErrorMessage { () throws(CheckpointError) in try Checkpoint.read(directory.path) }.hasPrefix("\(file): \(field): "), "\(edit)")
    }

    @Test("A batch norm running variance below 0 is refused on load, naming the file, the tensor and the element")
    func negativeRunningVariance() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let run = try RunBuilder.build(try idxCNNConfig(in: directory))
        var checkpoint = Checkpoint(run.engine, config: run.config, preprocessing: run.preprocessing)
        _ = try Checkpoint.decode(try checkpoint.encoded(), file: "f")
        let i = try #require(checkpoint.tensors.firstIndex { $0.name == "layers.1.running_var" })
        var variance = try checkpoint.tensors[i].tensor(as: Float.self, source: "f")
        #expect(variance.scalars.allSatisfy { $0 >= 0 })
        variance.withUnsafeMutableBufferPointer { $0[1] = -1 }
        checkpoint.tensors[i] = SafeTensors.entry("layers.1.running_var", variance)
        let message = checkpointErrorMessage { () throws(CheckpointError) in
            try Checkpoint.decode(try! checkpoint.encoded(), file: "run/checkpoint.safetensors")
        }
        #expect(message == "run/checkpoint.safetensors: layers.1.running_var: element 1 is below 0; a variance is 0 or more")
        // A running mean may be negative.
        var mean = checkpoint
        mean.tensors[i] = SafeTensors.entry("layers.1.running_var", Tensor<Float>(vector: [0, 1]))
        let j = try #require(mean.tensors.firstIndex { $0.name == "layers.1.running_mean" })
        mean.tensors[j] = SafeTensors.entry("layers.1.running_mean", Tensor<Float>(vector: [-1, -2]))
        _ = try Checkpoint.decode(try mean.encoded(), file: "f")
    }

    @Test("Tensors that do not fit the state are refused: an optimizer buffer of the wrong length, NaN or infinite weights, a stray tensor")
    func editedTensors() throws {
        let checkpoint = try irisCheckpoint()
        func refused(_ field: String, _ edit: (inout [SafeTensors.Entry]) -> Void) throws {
            var edited = checkpoint
            edit(&edited.tensors)
            #expect(invalidField { () throws(CheckpointError) in try Checkpoint.decode(try! edited.encoded(), file: "f") } == field)
        }
        // The velocity one value short: SGD's update stopped on a precondition.
        try refused("optimizer.velocity") { tensors in
            let i = tensors.firstIndex { $0.name == "optimizer.velocity" }!
            tensors[i] = SafeTensors.entry("optimizer.velocity", Tensor<Float>(vector: Array(repeating: 0, count: 70)))
        }
        try refused("optimizer.velocity") { $0.removeAll { $0.name == "optimizer.velocity" } }
        for bad in [Float.nan, .infinity, -.infinity] {
            try refused("layers.1.weight") { tensors in
                let i = tensors.firstIndex { $0.name == "layers.1.weight" }!
                var weight = try! tensors[i].tensor(as: Float.self, source: "f")
                weight.withUnsafeMutableBufferPointer { $0[5] = bad }
                tensors[i] = SafeTensors.entry("layers.1.weight", weight)
            }
        }
        try refused("layers.0.bias") { tensors in
            let i = tensors.firstIndex { $0.name == "layers.0.bias" }!
            tensors[i] = SafeTensors.entry("layers.0.bias", Tensor<Double>(vector: Array(repeating: 0, count: 8)))  // F64 in a float run
        }
        try refused("layers.7.weight") { $0.append(SafeTensors.entry("layers.7.weight", Tensor<Float>(vector: [1]))) }
        // A NaN weight's message says that the weights cannot be used, so evaluate and predict stop there.
        var nan = checkpoint
        let i = nan.tensors.firstIndex { $0.name == "layers.0.weight" }!
        var weight = try nan.tensors[i].tensor(as: Float.self, source: "f")
        weight.withUnsafeMutableBufferPointer { $0[0] = .nan }
        nan.tensors[i] = SafeTensors.entry("layers.0.weight", weight)
        let message = checkpointErrorMessage { () throws(CheckpointError) in
            try Checkpoint.decode(try! nan.encoded(), file: "run/checkpoint.safetensors")
        }
        #expect(message.hasPrefix("run/checkpoint.safetensors: layers.0.weight: element 0 is not finite"), "\(message)")
    }

    @Test("Adam's moments pass the same checks: loaded at steps 0 and 4, refused one value long")
    func otherKinds() throws {
        let adam = try irisCheckpoint(steps: 4, optimizer: "{kind: adam, learningRate: 0.01}")
        #expect(try Checkpoint.decode(try adam.encoded(), file: "f").state == adam.state)
        let fresh = try irisCheckpoint(steps: 0, optimizer: "{kind: adam, learningRate: 0.01}")
        #expect(try Checkpoint.decode(try fresh.encoded(), file: "f").state.progress.step == 0)
        var short = adam
        let i = short.tensors.firstIndex { $0.name == "optimizer.v" }!
        short.tensors[i] = SafeTensors.entry("optimizer.v", Tensor<Float>(vector: [1]))
        #expect(invalidField { () throws(CheckpointError) in try Checkpoint.decode(try! short.encoded(), file: "f") } == "optimizer.v")
    }
}

@Suite("A long run's checkpoint: a bounded history, the rest read back from metrics.csv")
struct LongRunCheckpointTests {
    /// XOR (one step an epoch) after `epochs` epochs, its checkpoint, and the engine's every record.
    static func longRun(epochs: Int) throws -> (Checkpoint, [EpochRecord], RunConfig) {
        var config = try ConfigLoader.load(dataDirectory + "/xor.yaml")
        config.training.epochs = epochs
        let run = try RunBuilder.build(config)
        func stepped<E: TrainingEngine>(_ engine: E) -> (Checkpoint, [EpochRecord]) {
            var engine = engine
            for _ in 0..<epochs { _ = engine.step() }
            return (Checkpoint(engine, config: config, preprocessing: run.preprocessing), engine.records)
        }
        let (checkpoint, records) = stepped(run.engine)
        return (checkpoint, records, config)
    }

    @Test("1,300 epochs: the checkpoint carries 500 records (the first, every 3rd, the newest 100) and their count")
    func bounded() throws {
        let (checkpoint, records, _) = try Self.longRun(epochs: 1_300)
        #expect(records.count == 1_300)
        #expect(checkpoint.state.records.count == 500 && checkpoint.state.recordCount == 1_300)
        #expect(checkpoint.state.records.first?.epoch == 1 && checkpoint.state.records.last?.epoch == 1_300)
        #expect(checkpoint.state.records.suffix(100).map(\.epoch) == Array(1_201...1_300))
        #expect(Set(zip(checkpoint.state.records.prefix(400), checkpoint.state.records.prefix(400).dropFirst()).map { $1.epoch - $0.epoch }) == [3])
        // A short run's checkpoint is as before: every record, no count.
        let (short, shortRecords, _) = try Self.longRun(epochs: 20)
        #expect(short.state.records == shortRecords && short.state.recordCount == nil)
        #expect(!String(decoding: try short.encoded(), as: UTF8.self).contains("recordCount"))
    }

    @Test("Read from its run directory, the checkpoint has every record again, from metrics.csv; without it, the bounded ones")
    func readBack() throws {
        let (checkpoint, records, config) = try Self.longRun(epochs: 1_300)
        let directory = try CheckpointTestDirectory()
        let outputs = RunOutputs(directory: directory.path)
        try outputs.writeCheckpoint(checkpoint)

        // No metrics.csv: the bounded history, its count kept, and the run resumes on it.
        var loaded = try Checkpoint.read(directory.path)
        #expect(loaded.state.records.count == 500 && loaded.state.recordCount == 1_300)
        #expect(try RunBuilder.build(config, resume: loaded).engine.epoch == 1_300)

        // metrics.csv as the run writes it, a few epochs ahead of the checkpoint: every record back, bit for bit.
        var ahead = records
        ahead.append(EpochRecord(epoch: 1_301, step: 1_301, trainingLoss: 0.5, trainingAccuracy: nil, validationLoss: nil, validationAccuracy: nil))
        try outputs.writeMetrics(ahead)
        loaded = try Checkpoint.read(directory.path)
        #expect(loaded.state.records == records && loaded.state.recordCount == nil)

        // A kept record edited in metrics.csv: the file does not agree with the checkpoint, which keeps its own.
        var edited = records
        edited[3].trainingLoss += 1  // epoch 4, kept (every 3rd from the first)
        try outputs.writeMetrics(edited)
        loaded = try Checkpoint.read(directory.path)
        #expect(loaded.state.records.count == 500 && loaded.state.recordCount == 1_300)

        // Not a metrics file, or too short: the same.
        for text in ["epoch,step\n1,1\n", "", String(repeating: "x", count: 100_000)] {
            try text.write(toFile: outputs.path("metrics.csv"), atomically: true, encoding: .utf8)
            #expect(try Checkpoint.read(directory.path).state.recordCount == 1_300)
        }
    }

    @Test("A record count that does not fit its records or epochs is refused, naming the field")
    func refusedCounts() throws {
        let (checkpoint, _, _) = try Self.longRun(epochs: 1_300)
        for count in [500, 12, 1_301, -1] {
            let bytes = try editedState(checkpoint) { NeuronTrainingTests.set(count, at: "recordCount", in: &$0) }
            #expect(
                invalidField { () throws(CheckpointError) in try Checkpoint.decode(bytes, file: "run/checkpoint.safetensors") } == "recordCount",
                "\(count)")
        }
    }
}
