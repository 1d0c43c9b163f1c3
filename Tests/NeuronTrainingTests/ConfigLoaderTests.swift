import Foundation
import NeuronCore
import Testing

@testable import NeuronTraining

/// The repository root: three levels up from Tests/NeuronTrainingTests/ConfigLoaderTests.swift.
private let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

/// A ready config in the repository's Data folder.
private func ready(_ name: String) throws -> RunConfig {
    try ConfigLoader.load(repositoryRoot + "/Data/" + name)
}

/// The message of the error that parsing `text` as `run.yaml` throws (data paths not checked),
/// or "no error".
private func failure(_ text: String, source: String = "run.yaml") -> String {
    do {
        _ = try ConfigLoader.parse(text, source: source, baseDirectory: nil)
        return "no error"
    } catch {
        return error.description
    }
}

/// A fresh folder in the temporary directory holding `files` (name → text), removed after `body`.
private func withFolder(_ files: [String: String], _ body: (String) throws -> Void) throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-config-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    for (name, text) in files { try Data(text.utf8).write(to: folder.appendingPathComponent(name)) }
    try body(folder.path)
}

/// A valid network config, lines 1–7; tests append sections from line 8 on.
private let xorNetwork = """
    model:
      layers:
        - units: 4
        - units: 1
    data:
      kind: synthetic
      name: xor

    """

/// A valid neuron config, lines 1–7.
private let neuron = """
    model:
      neuron: {weight: 0.5, bias: 0.5}
    data:
      kind: sample
      input: 0.01
      target: 0.1
    training: {iterations: 10}

    """

@Suite("Config: YAML and JSON run configs, checked key by key")
struct ConfigLoaderTests {
    // MARK: Ready configs

    @Test("Every ready config in Data/ loads, with relative data paths resolved against Data/")
    func readyConfigs() throws {
        let neuron = try ready("single-neuron.yaml")
        #expect(neuron.model.neuron == NeuronConfig(weight: 0.5, bias: 0.5) && neuron.model.layers.isEmpty && neuron.model.loss == nil)
        #expect(neuron.data.kind == .sample && neuron.data.input == 0.01 && neuron.data.target == 0.1)
        #expect(neuron.optimizer.kind == .sgd && neuron.optimizer.learningRate == 0.01)
        #expect(neuron.training.iterations == 100_000 && neuron.training.precision == .double)

        let xor = try ready("xor.yaml")
        #expect(xor.model.inputs == 2 && xor.model.layers == [LayerConfig(units: 4, activation: .tanh), LayerConfig(units: 1, activation: .tanh)])
        #expect(xor.model.loss == .halfSquaredError)
        #expect(xor.data.kind == .synthetic && xor.data.name == .xor && xor.data.validationSplit == 0)
        #expect(xor.optimizer.learningRate == 0.5 && xor.optimizer.momentum == 0.9)
        #expect(xor.training.epochs == 1000 && xor.training.batchSize == 4 && xor.training.seed == 1 && xor.training.precision == .double)

        let iris = try ready("iris.yaml")
        #expect(iris.data.path == repositoryRoot + "/Data/iris.csv" && iris.data.labelColumn == "species")
        #expect(iris.data.normalization == .standardize && iris.data.validationSplit == 0.2)
        #expect(iris.model.inputs == 4 && iris.model.layers.map(\.units) == [16, 3] && iris.model.layers.map(\.activation) == [.tanh, .softmax])
        #expect(iris.model.loss == .softmaxCrossEntropy)
        #expect(iris.optimizer.learningRate == 0.05 && iris.optimizer.momentum == 0.9)
        #expect(iris.training.epochs == 100 && iris.training.batchSize == 16 && iris.training.seed == 42)

        let digits = try ready("digits.yaml")
        #expect(digits.data.path == repositoryRoot + "/Data/digits.csv" && digits.data.labelColumn == "digit")
        #expect(digits.model.inputs == 64 && digits.model.layers.map(\.units) == [32, 10])
        #expect(digits.training.epochs == 20 && digits.training.batchSize == 32 && digits.training.seed == 7)

        let fashion = try ready("fashion-mnist.yaml")
        #expect(fashion.data.kind == .idx && fashion.data.normalization == .scale && fashion.data.validationSplit == 0.1)
        #expect(fashion.data.trainImages == "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")
        #expect(fashion.data.testLabels == "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz")
        #expect(fashion.model.inputs == 784 && fashion.model.layers.map(\.units) == [256, 128, 10])
        #expect(fashion.model.layers.map(\.activation) == [.tanh, .tanh, .softmax])
        #expect(fashion.optimizer.nesterov == false && fashion.optimizer.learningRate == 0.02 && fashion.optimizer.schedule.kind == .cosine)
        #expect(fashion.training.epochs == 20 && fashion.training.batchSize == 64 && fashion.training.precision == .float)
        #expect(fashion.training.blasThreads == 2)
    }

    @Test("xor.json is the same run as xor.yaml")
    func jsonEqualsYAML() throws {
        #expect(try ready("xor.json") == ready("xor.yaml"))
    }

    // MARK: Defaults

    @Test("A minimal config takes every documented default; the loss follows the last activation")
    func defaults() throws {
        let config = try ConfigLoader.parse(xorNetwork, source: "run.yaml", baseDirectory: nil)
        var data = DataConfig(kind: .synthetic)
        data.name = .xor
        let expected = RunConfig(
            model: ModelConfig(layers: [LayerConfig(units: 4), LayerConfig(units: 1)], loss: .halfSquaredError), data: data)
        #expect(config == expected)
        // The defaults spelled out, as Docs/Config.md documents them.
        #expect(config.model.layers[0].activation == .tanh && config.model.inputs == nil && config.model.neuron == nil)
        let o = config.optimizer
        #expect(o.kind == .sgd && o.learningRate == 0.01 && o.momentum == 0 && !o.nesterov)
        #expect(o.beta1 == 0.9 && o.beta2 == 0.999 && o.epsilon == 1e-8 && o.weightDecay == 0 && !o.decoupled && o.decay == nil)
        #expect(o.schedule.kind == .constant && o.schedule.every == nil && o.schedule.factor == nil && o.schedule.minimumFactor == nil)
        #expect(o.schedule.warmupSteps == nil && config.training.clipGradientNorm == nil)
        let t = config.training
        #expect(t.epochs == 10 && t.iterations == nil && t.batchSize == 32 && t.seed == 42 && t.precision == .float && t.blasThreads == 2)
        #expect(config.output.directory == nil && config.output.checkpointEvery == nil && config.output.checkpointSeconds == 30)
        #expect(config.data.normalization == nil && config.data.validationSplit == nil && config.data.limit == nil)

        let softmax = try ConfigLoader.parse(
            "model: {layers: [{units: 3, activation: softmax}]}\ndata: {kind: synthetic, name: xor}\n", source: "s.yaml", baseDirectory: nil)
        #expect(softmax.model.loss == .softmaxCrossEntropy)
    }

    @Test("A null value (key: with nothing after it) keeps the default")
    func nullIsDefault() throws {
        let config = try ConfigLoader.parse(xorNetwork + "training:\n  epochs:\n  seed: ~\noptimizer:\n", source: "run.yaml", baseDirectory: nil)
        #expect(config.training == TrainingConfig() && config.optimizer == OptimizerConfig())
    }

    @Test("RunConfig decodes with any Decoder, taking defaults for absent keys, and round-trips through JSON")
    func codable() throws {
        let minimal = #"{"model": {"layers": [{"units": 2}]}, "data": {"kind": "csv", "path": "a.csv", "labelColumn": "y"}}"#
        let decoded = try JSONDecoder().decode(RunConfig.self, from: Data(minimal.utf8))
        var data = DataConfig(kind: .csv)
        (data.path, data.labelColumn) = ("a.csv", "y")
        #expect(decoded == RunConfig(model: ModelConfig(layers: [LayerConfig(units: 2)]), data: data))

        let full = Self.everyKeySet()
        #expect(try JSONDecoder().decode(RunConfig.self, from: JSONEncoder().encode(full)) == full)
    }

    @Test("A saved config (a checkpoint's run state embeds one) decodes and encodes to the same text, every choice by its name")
    func savedConfigText() throws {
        let saved =
            #"{"data":{"blockSize":16,"count":5,"featureColumns":["x"],"input":0.5,"keep":"a-z","kind":"csv","labelColumn":"y","limit":3,"#
            + #""longLines":"window","lowercase":true,"name":"sine","normalization":"none","path":"a.csv","pattern":"gpt2","target":0.25,"#
            + #""task":"regression","testImages":"c","#
            + #""testLabels":"d","testPath":"t.csv","testSplit":0.25,"tokenizer":"t.model","trainImages":"a","trainLabels":"b","unit":"document","#
            + #""validationSplit":0.5,"vocabularySize":512},"#
            + #""model":{"inputShape":[28,28,1],"inputs":3,"layers":[{"activation":"tanh","units":2},{"activation":"relu","approximation":"tanh","epsilon":1e-05,"#
            + #""features":8,"filters":4,"global":true,"heads":2,"kernel":3,"kind":"conv2d","momentum":0.1,"pad":1,"padding":"same","rate":0.5,"size":2,"#
            + #""stride":2},{"kind":"residual","layers":[{"activation":"tanh","units":2},{"activation":"relu","approximation":"tanh","epsilon":1e-05,"#
            + #""features":8,"filters":4,"global":true,"heads":2,"kernel":3,"kind":"conv2d","momentum":0.1,"pad":1,"padding":"same","rate":0.5,"size":2,"#
            + #""stride":2}]}],"#
            + #""loss":"halfSquaredError","neuron":{"bias":2,"weight":1},"#
            + #""transformer":{"blocks":2,"dropout":0.1,"features":8,"heads":2,"initialization":"gpt2","mlpRatio":3,"positions":32,"tieWeights":true}},"#
            + #""optimizer":{"beta1":0.9,"beta2":0.999,"decay":"matrices","decoupled":true,"epsilon":1e-08,"kind":"adam","learningRate":0.01,"#
            + #""momentum":0.5,"nesterov":true,"schedule":{"every":2,"factor":0.5,"kind":"step","minimumFactor":0.1,"warmupSteps":3},"weightDecay":0},"#
            + #""output":{"checkpointEvery":1,"checkpointSeconds":30,"directory":"runs/x","samples":4},"#
            + #""training":{"batchSize":32,"batchThreads":2,"blasThreads":2,"clipGradientNorm":1.5,"epochs":3,"evaluateEvery":5,"evaluation":"estimate","#
            + #""evaluationBatches":4,"fit":"counts","iterations":7,"precision":"float","products":"bf16","seed":42,"smoothing":0.5,"steps":20}}"#
        let decoded = try JSONDecoder().decode(RunConfig.self, from: Data(saved.utf8))
        #expect(decoded == Self.everyKeySet())
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        #expect(String(decoding: try encoder.encode(decoded), as: UTF8.self) == saved)
    }

    @Test("The loader's schema knows exactly the keys RunConfig encodes")
    func schemaMatchesCodable() throws {
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(Self.everyKeySet()))
        func paths(_ value: Any, _ prefix: String) -> Set<String> {
            if let object = value as? [String: Any] {
                return object.reduce(into: Set<String>()) { result, entry in
                    let path = prefix.isEmpty ? entry.key : prefix + "." + entry.key
                    result.insert(path)
                    result.formUnion(paths(entry.value, path))
                }
            }
            if let array = value as? [Any] { return array.reduce(into: Set<String>()) { $0.formUnion(paths($1, prefix + "[]")) } }
            return []
        }
        #expect(
            paths(json, "") == ConfigLoader.schemaKeyPaths,
            "json only: \(paths(json, "").subtracting(ConfigLoader.schemaKeyPaths).sorted()), schema only: \(ConfigLoader.schemaKeyPaths.subtracting(paths(json, "")).sorted())"
        )
    }

    /// A layer with every key set (no kind takes them all; encoding writes every one).
    static var everyLayerKey: LayerConfig {
        var layer = LayerConfig(kind: .conv2d)
        (layer.activation, layer.filters, layer.kernel, layer.stride, layer.padding, layer.pad) = (.relu, 4, 3, 2, .same, 1)
        (layer.size, layer.global, layer.rate, layer.momentum, layer.epsilon) = (2, true, 0.5, 0.1, 1e-5)
        (layer.features, layer.heads, layer.approximation) = (8, 2, .tanh)
        return layer
    }

    /// A config with every optional key set, so that encoding writes every key.
    static func everyKeySet() -> RunConfig {
        var residual = LayerConfig(kind: .residual)
        residual.layers = [LayerConfig(units: 2), everyLayerKey]
        var data = DataConfig(kind: .csv)
        (data.path, data.labelColumn, data.task, data.featureColumns, data.testPath) = ("a.csv", "y", .regression, ["x"], "t.csv")
        (data.trainImages, data.trainLabels, data.testImages, data.testLabels) = ("a", "b", "c", "d")
        (data.name, data.count, data.input, data.target) = (.sine, 5, 0.5, 0.25)
        (data.normalization, data.validationSplit, data.limit) = (DataConfig.Normalization.none, 0.5, 3)
        (data.lowercase, data.keep, data.blockSize, data.testSplit) = (true, "a-z", 16, 0.25)
        (data.longLines, data.unit) = (.window, .document)
        (data.tokenizer, data.vocabularySize, data.pattern) = ("t.model", 512, .gpt2)
        var transformer = TransformerConfig(blocks: 2, heads: 2, features: 8)
        (transformer.mlpRatio, transformer.dropout, transformer.tieWeights, transformer.positions) = (3, 0.1, true, 32)
        transformer.initialization = .gpt2
        var optimizer = OptimizerConfig()
        (optimizer.kind, optimizer.momentum, optimizer.nesterov, optimizer.decoupled) = (.adam, 0.5, true, true)
        (optimizer.schedule.kind, optimizer.schedule.every, optimizer.schedule.factor, optimizer.schedule.minimumFactor) = (.step, 2, 0.5, 0.1)
        (optimizer.decay, optimizer.schedule.warmupSteps) = (.matrices, 3)
        var training = TrainingConfig()
        (training.iterations, training.fit, training.smoothing, training.clipGradientNorm) = (7, .counts, 0.5, 1.5)
        training.epochs = 3  // not the default: with steps, a default epochs is not encoded
        training.batchThreads = 2
        training.products = .bf16
        (training.steps, training.evaluateEvery, training.evaluation, training.evaluationBatches) = (20, 5, .estimate, 4)
        var output = OutputConfig()
        (output.directory, output.checkpointEvery, output.samples) = ("runs/x", 1, 4)
        var model = ModelConfig(
            inputs: 3, inputShape: [28, 28, 1], layers: [LayerConfig(units: 2), everyLayerKey, residual], loss: .halfSquaredError,
            neuron: NeuronConfig(weight: 1, bias: 2))
        model.transformer = transformer
        return RunConfig(model: model, data: data, optimizer: optimizer, training: training, output: output)
    }

    // MARK: Data paths

    @Test("Relative data paths are resolved against the config's folder; absolute ones stay")
    func dataPaths() throws {
        let config = """
            model: {layers: [{units: 3, activation: softmax}]}
            data: {kind: csv, path: table.csv, labelColumn: y}
            """
        try withFolder(["run.yaml": config, "table.csv": "x,y\n1,a\n"]) { folder in
            let relative = try ConfigLoader.load(folder + "/run.yaml")
            #expect(relative.data.path == folder + "/table.csv")
            let text = config.replacingOccurrences(of: "table.csv", with: folder + "/table.csv")
            let absolute = try ConfigLoader.parse(text, source: "run.yaml", baseDirectory: "/elsewhere")
            #expect(absolute.data.path == folder + "/table.csv")
            // Without a base directory, paths stay as written and are not looked for.
            let unresolved = try ConfigLoader.parse(config, source: "run.yaml", baseDirectory: nil)
            #expect(unresolved.data.path == "table.csv")
        }
    }

    @Test("A missing data file names the config, the key's place and the path looked for")
    func missingDataFile() throws {
        let config = """
            model: {layers: [{units: 3, activation: softmax}]}
            data:
              kind: csv
              path: tabel.csv
              labelColumn: y
            """
        try withFolder(["run.yaml": config, "table.csv": "x,y\n1,a\n"]) { folder in
            #expect(
                throws: ConfigError(
                    file: folder + "/run.yaml", line: 4, column: 9,
                    message: "data.path: no such file 'tabel.csv' (looked for \(folder)/tabel.csv)")
            ) {
                try ConfigLoader.load(folder + "/run.yaml")
            }
        }
        let idx = """
            model: {layers: [{units: 10, activation: softmax}]}
            data: {kind: idx, trainImages: /nowhere/images.gz, trainLabels: /nowhere/labels.gz}
            """
        #expect(throws: ConfigError(file: "i.yaml", line: 2, column: 32, message: "data.trainImages: no such file '/nowhere/images.gz'")) {
            try ConfigLoader.parse(idx, source: "i.yaml", baseDirectory: "")
        }
    }

    @Test("A missing config file, or a folder, names the path")
    func missingConfigFile() throws {
        #expect(throws: ConfigError(file: "/nowhere/run.yaml", message: "no such file")) { try ConfigLoader.load("/nowhere/run.yaml") }
        #expect(ConfigError(file: "/nowhere/run.yaml", message: "no such file").description == "/nowhere/run.yaml: no such file")
        try withFolder([:]) { folder in
            #expect(throws: ConfigError(file: folder, message: "is a directory; expected a YAML or JSON config file")) {
                try ConfigLoader.load(folder)
            }
        }
    }

    // MARK: Syntax

    @Test("A YAML syntax error reports Yams' line and column")
    func syntaxError() {
        #expect(
            failure("model:\n  layers: [{units: 4}\ndata: {kind: csv}\n")
                == "run.yaml:3:1: invalid YAML: did not find expected ',' or ']' (while parsing a flow sequence at line 2, column 11)")
        #expect(
            failure("model:\n  layers:\n    - units: 4\n   bad indent\n")
                == "run.yaml:4:4: invalid YAML: did not find expected key (while parsing a block mapping at line 2, column 3)")
    }

    @Test("A key twice, an empty file, a top level that is not a mapping")
    func structure() {
        #expect(
            failure("training:\n  epochs: 3\n  epochs: 4\n")
                == "run.yaml:2:3: the key 'epochs' appears more than once in one mapping; each key may appear once")
        #expect(failure("") == "run.yaml: the file is empty; expected a mapping with the keys model and data")
        #expect(failure("# only a comment\n") == "run.yaml: the file is empty; expected a mapping with the keys model and data")
        #expect(failure("- model\n") == "run.yaml:1:1: top level: expected a mapping (keys model, data, optimizer, training, output); found a list")
    }

    // MARK: Unknown keys

    @Test("Unknown keys at the top level and nested, with the nearest valid key when it is close")
    func unknownKeys() {
        #expect(failure("modle:\n  layers: []\n") == "run.yaml:1:1: unknown key 'modle' at the top level; did you mean 'model'?")
        #expect(
            failure(xorNetwork + "colour: red\n")
                == "run.yaml:8:1: unknown key 'colour' at the top level; expected one of model, data, optimizer, training, output")
        #expect(
            failure(xorNetwork + "optimizer:\n  learning_rate: 0.1\n")
                == "run.yaml:9:3: unknown key 'learning_rate' in optimizer; did you mean 'learningRate'?")
        #expect(failure(xorNetwork + "training:\n  epoch: 3\n") == "run.yaml:9:3: unknown key 'epoch' in training; did you mean 'epochs'?")
        #expect(failure(xorNetwork + "training:\n  batch: 3\n") == "run.yaml:9:3: unknown key 'batch' in training; did you mean 'batchSize'?")
        #expect(
            failure(xorNetwork + "output:\n  folder: runs\n")
                == "run.yaml:9:3: unknown key 'folder' in output; expected one of directory, checkpointEvery, checkpointSeconds, samples")
        #expect(
            failure(xorNetwork + "optimizer:\n  schedule: {kind: step, evry: 2}\n")
                == "run.yaml:9:26: unknown key 'evry' in optimizer.schedule; did you mean 'every'?")
        #expect(failure("model:\n  layers:\n    - unit: 4\n") == "run.yaml:3:7: unknown key 'unit' in model.layers[0]; did you mean 'units'?")
    }

    @Test("A JSON config with an unknown key gives its line and column")
    func jsonUnknownKey() {
        let json = """
            {
              "model": {"layers": [{"units": 1}]},
              "data": {"kind": "synthetic", "name": "xor"},
              "optimizer": {"kind": "sgd", "learningrate": 0.1}
            }
            """
        #expect(failure(json, source: "run.json") == "run.json:4:32: unknown key 'learningrate' in optimizer; did you mean 'learningRate'?")
    }

    // MARK: Types

    @Test("Wrong types name the expected type and what was found")
    func wrongTypes() {
        #expect(
            failure(xorNetwork + "optimizer:\n  learningRate: \"0.1\"\n")
                == "run.yaml:9:17: optimizer.learningRate: expected a number; found the string '0.1' (numbers are written without quotes)")
        #expect(
            failure("model:\n  - units: 4\n")
                == "run.yaml:2:3: model: expected a mapping (keys inputs, inputShape, layers, transformer, loss, neuron); found a list")
        #expect(
            failure("model:\n  layers: {units: 4}\n")
                == "run.yaml:2:11: model.layers: expected a list, each item a mapping (keys kind, units, features, heads, activation, filters, kernel, stride, padding, pad, size, global, rate, momentum, epsilon, approximation, layers); found a mapping"
        )
        #expect(failure(xorNetwork + "training:\n  epochs: 1.5\n") == "run.yaml:9:11: training.epochs: expected a whole number; found 1.5")
        #expect(
            failure(xorNetwork + "training:\n  seed: -1\n")
                == "run.yaml:9:9: training.seed: expected a whole number from 0 to 18446744073709551615; found -1")
        #expect(
            failure(xorNetwork + "optimizer:\n  momentum: 0.9\n  nesterov: 'true'\n")
                == "run.yaml:10:13: optimizer.nesterov: expected true or false; found the string 'true' (true and false are written without quotes)")
        #expect(failure(xorNetwork + "optimizer:\n  kind: [sgd]\n") == "run.yaml:9:9: optimizer.kind: expected a string; found a list")
        #expect(
            failure("model:\n  layers:\n    - units:\ndata: {kind: csv}\n")
                == "run.yaml:3:13: model.layers[0].units: expected a whole number; found nothing (null)")
        // Integers are fine where numbers are expected.
        #expect(failure(xorNetwork + "optimizer:\n  learningRate: 1\n") == "no error")
    }

    // MARK: Values: model

    @Test("Model values out of range")
    func modelValues() {
        #expect(
            failure("model:\n  layers:\n    - units: 0\ndata: {kind: synthetic, name: xor}\n")
                == "run.yaml:3:14: model.layers[0].units: expected a whole number 1 or more; found 0")
        #expect(
            failure("model:\n  layers:\n    - {units: 4, activation: Tanh}\ndata: {kind: synthetic, name: xor}\n")
                == "run.yaml:3:30: model.layers[0].activation: expected one of tanh, sigmoid, relu, identity, softmax; found 'Tanh'; did you mean 'tanh'?"
        )
        #expect(
            failure("model:\n  layers:\n    - {units: 4, activation: softmax}\n    - {units: 1}\ndata: {kind: synthetic, name: xor}\n")
                == "run.yaml:3:30: model.layers[0].activation: expected tanh, sigmoid, relu or identity before the last layer (softmax belongs only in the output layer); found 'softmax'"
        )
        #expect(
            failure("model:\n  layers: [{units: 3, activation: softmax}]\n  loss: halfSquaredError\ndata: {kind: synthetic, name: xor}\n")
                == "run.yaml:3:9: model.loss: expected softmaxCrossEntropy after a softmax output layer; found 'halfSquaredError'")
        #expect(
            failure("model:\n  layers: [{units: 3}]\n  loss: softmaxCrossEntropy\ndata: {kind: synthetic, name: xor}\n")
                == "run.yaml:3:9: model.loss: expected halfSquaredError: softmaxCrossEntropy needs a softmax output layer, and the last layer's activation is tanh; found 'softmaxCrossEntropy'"
        )
        #expect(
            failure("model:\n  layers: [{units: 3}]\n  loss: mse\ndata: {kind: synthetic, name: xor}\n")
                == "run.yaml:3:9: model.loss: expected one of halfSquaredError, softmaxCrossEntropy, sequenceCrossEntropy; found 'mse'")
        #expect(
            failure("model:\n  inputs: 0\n  layers: [{units: 3}]\ndata: {kind: synthetic, name: xor}\n")
                == "run.yaml:2:11: model.inputs: expected a whole number 1 or more; found 0")
        #expect(
            failure("model:\n  layers: []\ndata: {kind: synthetic, name: xor}\n")
                == "run.yaml:2:11: model.layers: expected at least one layer; found an empty list")
        #expect(
            failure("model:\n  inputs: 2\ndata: {kind: synthetic, name: xor}\n")
                == "run.yaml:1:1: missing key 'layers' in model; a model needs layers (a network), transformer (a GPT) or neuron (the single neuron)")
        #expect(
            failure("model:\n  layers: [{units: 1}]\n  neuron: {}\ndata: {kind: sample, input: 1, target: 1}\n")
                == "run.yaml:3:3: model: expected either layers (a network) or neuron (the single neuron), not both")
        #expect(
            failure("model:\n  neuron: {weight: .nan}\ndata: {kind: sample, input: 1, target: 1}\n")
                == "run.yaml:2:20: model.neuron.weight: expected a finite number; found .nan")
        #expect(
            failure("model:\n  neuron: {}\n  loss: halfSquaredError\ndata: {kind: sample, input: 1, target: 1}\n")
                == "run.yaml:3:3: model.loss does not apply to the single neuron; its loss is always half the squared error")
    }

    // MARK: Values: data

    @Test("Each data kind's required keys")
    func dataRequiredKeys() {
        let model = "model: {layers: [{units: 1}]}\n"
        #expect(
            failure(model + "data:\n  kind: csv\n  labelColumn: y\n")
                == "run.yaml:2:1: missing key 'path' in data; a csv dataset needs path and labelColumn")
        #expect(
            failure(model + "data:\n  kind: csv\n  path: a.csv\n")
                == "run.yaml:2:1: missing key 'labelColumn' in data; a csv dataset needs path and labelColumn")
        #expect(
            failure(model + "data:\n  kind: idx\n  trainImages: a.gz\n")
                == "run.yaml:2:1: missing key 'trainLabels' in data; an idx dataset needs trainImages and trainLabels")
        #expect(
            failure(model + "data: {kind: idx, trainImages: a, trainLabels: b, testImages: c}\n")
                == "run.yaml:2:1: missing key 'testLabels' in data; a test set needs testImages and testLabels together, and testImages is given")
        #expect(
            failure(model + "data:\n  kind: synthetic\n")
                == "run.yaml:2:1: missing key 'name' in data; a synthetic dataset needs name (xor or sine)")
        #expect(
            failure("model: {neuron: {}}\ndata:\n  kind: sample\n  input: 0.01\n")
                == "run.yaml:2:1: missing key 'target' in data; a sample needs input and target")
        #expect(failure("model: {layers: [{units: 1}]}\n") == "run.yaml: missing key 'data' at the top level")
        #expect(failure(model + "data:\n  path: a.csv\n") == "run.yaml:2:1: missing key 'kind' in data")
    }

    @Test("Data values out of range, and keys of another kind")
    func dataValues() {
        let model = "model: {layers: [{units: 1}]}\n"
        #expect(
            failure(model + "data:\n  kind: parquet\n")
                == "run.yaml:3:9: data.kind: expected one of csv, idx, synthetic, sample, text; found 'parquet'")
        #expect(
            failure(model + "data:\n  kind: synthetic\n  name: xor\n  validationSplit: 1\n")
                == "run.yaml:5:20: data.validationSplit: expected a number in [0, 1); found 1")
        #expect(
            failure(model + "data:\n  kind: synthetic\n  name: sine\n  count: 0\n")
                == "run.yaml:5:10: data.count: expected a whole number 1 or more; found 0")
        #expect(
            failure(model + "data:\n  kind: synthetic\n  name: xor\n  limit: 0\n")
                == "run.yaml:5:10: data.limit: expected a whole number 1 or more; found 0")
        #expect(
            failure(model + "data:\n  kind: synthetic\n  name: sin\n")
                == "run.yaml:4:9: data.name: expected one of xor, sine; found 'sin'; did you mean 'sine'?")
        #expect(
            failure(model + "data:\n  kind: synthetic\n  name: xor\n  normalization: standardise\n")
                == "run.yaml:5:18: data.normalization: expected one of standardize, scale, none; found 'standardise'; did you mean 'standardize'?")
        #expect(
            failure(model + "data: {kind: csv, path: a.csv, labelColumn: y, task: regresion}\n")
                == "run.yaml:2:54: data.task: expected one of classification, regression; found 'regresion'; did you mean 'regression'?")
        #expect(
            failure(model + "data: {kind: csv, path: a.csv, labelColumn: y, name: xor}\n")
                == "run.yaml:2:48: data.name does not apply to a csv dataset; it takes path, labelColumn, task, featureColumns, testPath, normalization, validationSplit, limit"
        )
        // The first such key in the file is the one reported.
        #expect(
            failure(model + "data: {kind: csv, path: a.csv, labelColumn: y, target: 1, name: xor}\n")
                == "run.yaml:2:48: data.target does not apply to a csv dataset; it takes path, labelColumn, task, featureColumns, testPath, normalization, validationSplit, limit"
        )
        #expect(
            failure("model: {neuron: {}}\ndata: {kind: sample, input: 1, target: 1, normalization: none}\n")
                == "run.yaml:2:43: data.normalization does not apply to a sample dataset; it takes input, target")
        #expect(
            failure(model + "data: {kind: synthetic, name: xor, count: 8}\n")
                == "run.yaml:2:36: data.count does not apply to the xor dataset (always its 4 rows); only sine takes a count")
        #expect(
            failure(model + "data: {kind: sample, input: 1, target: 1}\n")
                == "run.yaml:2:14: data.kind: expected csv, idx, synthetic or text for a network (sample is the single neuron's one input and target); found 'sample'"
        )
        #expect(
            failure("model: {neuron: {}}\ndata: {kind: synthetic, name: xor}\n")
                == "run.yaml:2:14: data.kind: expected sample for the single neuron (model.neuron trains on one input and target); found 'synthetic'")
    }

    // MARK: Values: optimizer

    @Test("Optimizer values out of range, and keys of the other kind")
    func optimizerValues() {
        func check(_ lines: String, _ expected: String, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(failure(xorNetwork + "optimizer:\n" + lines) == expected, sourceLocation: sourceLocation)
        }
        check("  learningRate: 0\n", "run.yaml:9:17: optimizer.learningRate: expected a finite number greater than 0; found 0")
        check("  learningRate: .inf\n", "run.yaml:9:17: optimizer.learningRate: expected a finite number greater than 0; found .inf")
        check("  momentum: 1\n", "run.yaml:9:13: optimizer.momentum: expected a number in [0, 1); found 1")
        check(
            "  nesterov: true\n",
            "run.yaml:9:13: optimizer.nesterov: expected false when momentum is 0 (Nesterov momentum needs momentum > 0); found true")
        check("  kind: adam\n  beta2: 1\n", "run.yaml:10:10: optimizer.beta2: expected a number in [0, 1); found 1")
        check("  kind: adam\n  epsilon: 0\n", "run.yaml:10:12: optimizer.epsilon: expected a finite number greater than 0; found 0")
        check("  weightDecay: -0.1\n", "run.yaml:9:16: optimizer.weightDecay: expected a finite number 0 or greater; found -0.1")
        check("  kind: adamw\n", "run.yaml:9:9: optimizer.kind: expected one of sgd, adam; found 'adamw'; did you mean 'adam'?")
        check(
            "  kind: sgd\n  beta1: 0.8\n",
            "run.yaml:10:3: optimizer.beta1 does not apply to sgd; it takes learningRate, momentum, nesterov, weightDecay, decay, schedule")
        check(
            "  kind: adam\n  momentum: 0.9\n",
            "run.yaml:10:3: optimizer.momentum does not apply to adam; it takes learningRate, beta1, beta2, epsilon, weightDecay, decoupled, decay, schedule"
        )
        check(
            "  schedule: {kind: linear}\n",
            "run.yaml:9:20: optimizer.schedule.kind: expected one of constant, step, cosine; found 'linear'")
        check(
            "  schedule: {kind: step}\n",
            "run.yaml:9:3: missing key 'every' in optimizer.schedule; a step schedule multiplies the rate by factor every so many epochs")
        check("  schedule: {kind: step, every: 0}\n", "run.yaml:9:33: optimizer.schedule.every: expected a whole number 1 or more; found 0")
        check("  schedule: {kind: step, every: 5, factor: 1.5}\n", "run.yaml:9:44: optimizer.schedule.factor: expected a number in (0, 1]; found 1.5")
        check(
            "  schedule: {kind: cosine, minimumFactor: 2}\n",
            "run.yaml:9:43: optimizer.schedule.minimumFactor: expected a number in [0, 1]; found 2")
        check(
            "  schedule: {kind: cosine, every: 2}\n",
            "run.yaml:9:28: optimizer.schedule.every does not apply to a cosine schedule; it takes minimumFactor, warmupSteps")
        check("  schedule: {kind: step, every: 30}\n", "no error")
        check("  decay: weights\n", "run.yaml:9:10: optimizer.decay: expected one of all, matrices; found 'weights'")
        check("  kind: adam\n  decoupled: true\n  weightDecay: 0.1\n  decay: matrices\n", "no error")
        check(
            "  schedule: {kind: cosine, warmupSteps: -1}\n",
            "run.yaml:9:41: optimizer.schedule.warmupSteps: expected a whole number 0 or greater; found -1")
        check("  schedule: {kind: cosine, warmupSteps: 1.5}\n", "run.yaml:9:41: optimizer.schedule.warmupSteps: expected a whole number; found 1.5")
        check(
            "  schedule: {kind: step, every: 2, warmupSteps: 10}\n",
            "run.yaml:9:36: optimizer.schedule.warmupSteps does not apply to a step schedule; it takes every, factor")
        check("  schedule: {warmupSteps: 10}\n", "no error")
    }

    // MARK: Values: choices

    @Test("Every choice offers exactly its enum's cases, in declaration order")
    func choicesAreEnumCases() {
        let model = "model: {layers: [{units: 1}]}\n"
        let choices: [(config: String, path: String, names: [String])] = [
            (
                "model:\n  layers: [{units: 1, activation: bogus}]\ndata: {kind: synthetic, name: xor}\n", "model.layers[0].activation",
                Activation.allCases.map(\.rawValue)
            ),
            ("model:\n  layers: [{units: 1}]\n  loss: bogus\ndata: {kind: synthetic, name: xor}\n", "model.loss", Loss.allCases.map(\.rawValue)),
            (model + "data: {kind: bogus}\n", "data.kind", DataConfig.Kind.allCases.map(\.rawValue)),
            (model + "data: {kind: csv, path: a.csv, labelColumn: y, task: bogus}\n", "data.task", CSV.Task.allCases.map(\.rawValue)),
            (model + "data: {kind: synthetic, name: bogus}\n", "data.name", DataConfig.SyntheticName.allCases.map(\.rawValue)),
            (
                model + "data: {kind: synthetic, name: xor, normalization: bogus}\n", "data.normalization",
                DataConfig.Normalization.allCases.map(\.rawValue)
            ),
            (xorNetwork + "optimizer: {kind: bogus}\n", "optimizer.kind", OptimizerConfig.Kind.allCases.map(\.rawValue)),
            (xorNetwork + "optimizer: {schedule: {kind: bogus}}\n", "optimizer.schedule.kind", ScheduleConfig.Kind.allCases.map(\.rawValue)),
            (xorNetwork + "training: {precision: bogus}\n", "training.precision", TrainingConfig.Precision.allCases.map(\.rawValue)),
            (
                "model:\n  layers: [{kind: gelu, approximation: bogus}, {units: 1}]\ndata: {kind: synthetic, name: xor}\n",
                "model.layers[0].approximation", GELUApproximation.allCases.map(\.rawValue)
            ),
        ]
        for (config, path, names) in choices {
            let message = failure(config)
            #expect(message.hasSuffix(": \(path): expected one of \(names.joined(separator: ", ")); found 'bogus'"), "\(message)")
        }
        // Every name of every choice is accepted.
        for activation in Activation.allCases where activation != .softmax {
            #expect(failure("model:\n  layers: [{units: 1, activation: \(activation.rawValue)}]\ndata: {kind: synthetic, name: xor}\n") == "no error")
        }
        for precision in TrainingConfig.Precision.allCases {
            #expect(failure(xorNetwork + "training: {precision: \(precision.rawValue)}\n") == "no error")
        }
        for kind in OptimizerConfig.Kind.allCases {
            #expect(failure(xorNetwork + "optimizer: {kind: \(kind.rawValue)}\n") == "no error")
        }
        for approximation in GELUApproximation.allCases {
            let gelu = "model:\n  layers: [{kind: gelu, approximation: \(approximation.rawValue)}, {units: 1}]\ndata: {kind: synthetic, name: xor}\n"
            #expect(failure(gelu) == "no error")
        }
    }

    @Test("The single neuron takes plain gradient steps: sgd and a learning rate only")
    func neuronOptimizer() {
        #expect(
            failure(neuron + "optimizer: {kind: adam}\n")
                == "run.yaml:8:19: optimizer.kind: expected sgd for the single neuron (it takes plain gradient steps); found 'adam'")
        #expect(
            failure(neuron + "optimizer: {momentum: 0.9}\n")
                == "run.yaml:8:13: optimizer.momentum does not apply to the single neuron (plain gradient steps); it takes learningRate")
        #expect(failure(neuron + "optimizer: {learningRate: 0.1}\n") == "no error")
    }

    @Test("training.iterations is the neuron's name for its epochs: 1 or more, not beside epochs, and not a network's")
    func iterations() {
        let sample = neuron.replacingOccurrences(of: "training: {iterations: 10}\n", with: "")
        #expect(failure(sample + "training:\n  iterations: 0\n") == "run.yaml:8:15: training.iterations: expected a whole number 1 or more; found 0")
        #expect(
            failure(sample + "training:\n  iterations: 5\n  epochs: 5\n")
                == "run.yaml:9:3: training: expected iterations or epochs, not both (the single neuron's iterations are its epochs, one step on its one sample)"
        )
        #expect(failure(sample + "training: {epochs: 5}\n") == "no error")
        #expect(
            failure(xorNetwork + "training:\n  iterations: 5\n")
                == "run.yaml:9:3: training.iterations is the single neuron's name for its epochs; a network trains for training.epochs")
    }

    // MARK: Values: training and output

    @Test("Training and output values out of range")
    func trainingValues() {
        func check(_ lines: String, _ expected: String, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(failure(xorNetwork + lines) == expected, sourceLocation: sourceLocation)
        }
        check("training:\n  epochs: 0\n", "run.yaml:9:11: training.epochs: expected a whole number 1 or more; found 0")
        check("training:\n  batchSize: -4\n", "run.yaml:9:14: training.batchSize: expected a whole number 1 or more; found -4")
        check("training:\n  clipGradientNorm: 0\n", "run.yaml:9:21: training.clipGradientNorm: expected a finite number greater than 0; found 0")
        check(
            "training:\n  clipGradientNorm: .nan\n", "run.yaml:9:21: training.clipGradientNorm: expected a finite number greater than 0; found .nan")
        check("training:\n  clipGradientNorm: 1\n", "no error")
        check("training:\n  precision: half\n", "run.yaml:9:14: training.precision: expected one of float, double; found 'half'")
        check("training:\n  blasThreads: 0\n", "run.yaml:9:16: training.blasThreads: expected a whole number from 1 to 1024; found 0")
        check("training:\n  batchThreads: 0\n", "run.yaml:9:17: training.batchThreads: expected a whole number from 1 to 256; found 0")
        check("training:\n  batchThreads: 257\n", "run.yaml:9:17: training.batchThreads: expected a whole number from 1 to 256; found 257")
        // OpenBLAS takes a C int: three billion threads are refused here, not trapped on conversion.
        check(
            "training:\n  blasThreads: 3000000000\n", "run.yaml:9:16: training.blasThreads: expected a whole number from 1 to 1024; found 3000000000")
        check("output:\n  checkpointEvery: 0\n", "run.yaml:9:20: output.checkpointEvery: expected a whole number 1 or more; found 0")
        check("output:\n  checkpointSeconds: 0\n", "run.yaml:9:22: output.checkpointSeconds: expected a finite number greater than 0; found 0")
        // An empty run directory is the current folder.
        check(
            "output:\n  directory: ''\n",
            "run.yaml:9:14: output.directory: expected a folder name (leave the key out for runs/<config name>); found ''")
    }

    @Test("A value tagged !!null but written as something else is refused at its key, in a mapping or a list")
    func taggedNull() {
        #expect(
            failure("model: {layers: [{units: 1}]}\ndata: {kind: synthetic, name: !!null xor}\n")
                == "run.yaml:2:31: data.name: tagged !!null but written xor; write null (or leave the key out) for the default, or the value without the tag"
        )
        #expect(
            failure("model: {layers: [!!null dense]}\ndata: {kind: synthetic, name: xor}\n").hasPrefix(
                "run.yaml:1:18: model.layers[0]: tagged !!null"))
        // A plain null under the tag is still the default.
        #expect(failure("model: {layers: [{units: 1}]}\ndata: {kind: synthetic, name: xor}\ntraining: {seed: !!null null}\n") == "no error")
    }

    @Test("An image shape whose product overflows is refused at model.inputShape, before anything multiplies it")
    func inputShapeOverflow() {
        #expect(
            failure(
                "model:\n  inputShape: [16777216, 16777216, 16777216]\n  layers: [{kind: flatten}, {units: 2, activation: softmax}]\ndata: {kind: synthetic, name: xor}\n"
            )
                == "run.yaml:2:15: model.inputShape: expected values per sample (height × width × channels) that can be counted, at most \(Int.max); 16777216 × 16777216 × 16777216 is more; found a list"
        )
    }

    @Test("Booleans are true and false only: YAML 1.1's yes, on, y are refused")
    func booleans() {
        let sgd = "optimizer:\n  momentum: 0.9\n  nesterov: "
        #expect(failure(xorNetwork + sgd + "true\n") == "no error")
        for word in ["yes", "on", "True", "no", "off"] {
            #expect(failure(xorNetwork + sgd + word + "\n") == "run.yaml:10:13: optimizer.nesterov: expected true or false; found \(word)")
        }
        #expect(failure(xorNetwork + sgd + "y\n") == "run.yaml:10:13: optimizer.nesterov: expected true or false; found the string 'y'")
    }

    @Test("A number past Double's range is echoed as written, not as inf; 1e308 is a number")
    func hugeNumbers() {
        #expect(failure(xorNetwork + "optimizer:\n  learningRate: 1e308\n") == "no error")
        #expect(
            failure(xorNetwork + "optimizer:\n  learningRate: 1e400\n")
                == "run.yaml:9:17: optimizer.learningRate: expected a number of at most about 1.8e308 in size; found 1e400, which is beyond it")
        #expect(
            failure(xorNetwork + "optimizer:\n  learningRate: .inf\n")
                == "run.yaml:9:17: optimizer.learningRate: expected a finite number greater than 0; found .inf")
    }

    @Test("An alias bomb is refused in milliseconds, before Yams composes (and hashes) it")
    func aliasBomb() {
        var text = "lol0: &l0 [a, a, a, a, a, a, a, a, a, a]\n"
        for level in 1...8 { text += "lol\(level): &l\(level) [" + Array(repeating: "*l\(level - 1)", count: 10).joined(separator: ", ") + "]\n" }
        text += "? *l8\n: 1\n"
        let message = failure(text)
        #expect(message.hasPrefix("run.yaml:5:"), "\(message)")
        #expect(message.contains("more than 100000 values once its aliases are expanded"), "\(message)")
        // An alias or two, as people use them, is fine.
        #expect(failure("shared: &units 4\n" + xorNetwork).hasPrefix("run.yaml:1:1: unknown key 'shared'"))
        #expect(
            failure("model:\n  layers:\n    - &layer {units: 4}\n    - *layer\n    - {units: 1}\ndata: {kind: synthetic, name: xor}\n") == "no error")
    }

    @Test("Long values and keys are cut in messages")
    func longValuesCut() {
        let long = String(repeating: "x", count: 100_000)
        #expect(
            failure(xorNetwork + "optimizer:\n  learningRate: '\(long)'\n")
                == "run.yaml:9:17: optimizer.learningRate: expected a number; found the string '\(String(repeating: "x", count: 40))… (100000 bytes)'"
        )
        #expect(failure(xorNetwork + "\(long): 1\n").count < 300)
        #expect(failure(xorNetwork + "training:\n  precision: \(long)\n").count < 300)
    }

    @Test("A config file larger than a megabyte is refused unread")
    func hugeFile() throws {
        try withFolder(["big.yaml": xorNetwork + "#" + String(repeating: "x", count: 1 << 20) + "\n"]) { folder in
            let error = #expect(throws: ConfigError.self) { try ConfigLoader.load(folder + "/big.yaml") }
            #expect(error?.message.contains("a config is at most 1048576 bytes") == true)
        }
    }

    @Test("A loaded config knows where each key was written, for checks made after loading")
    func origin() throws {
        let config = try ConfigLoader.parse(xorNetwork + "training:\n  epochs: 5\n", source: "run.yaml", baseDirectory: nil)
        #expect(config.origin.error(at: "training.epochs", "too many").description == "run.yaml:9:11: too many")
        #expect(config.origin.error(at: "model.layers[1].units", "x").description == "run.yaml:4:14: x")
        #expect(config.origin.error(at: "data.validationSplit", "x").description == "run.yaml: x")
        // Where a config was written is not part of what it says.
        var moved = config
        moved.origin = ConfigOrigin(file: "elsewhere.yaml")
        #expect(moved == config)
    }

    // MARK: Suggestions

    @Test("Suggestions: close misspellings and prefixes, nothing for a stranger")
    func suggestions() {
        let training = ["epochs", "iterations", "batchSize", "seed", "precision", "blasThreads"]
        #expect(Spelling.nearest(to: "epoch", in: training) == "epochs")
        #expect(Spelling.nearest(to: "batch_size", in: training) == "batchSize")
        #expect(Spelling.nearest(to: "Seed", in: training) == "seed")
        #expect(Spelling.nearest(to: "threads", in: training) == nil)
        #expect(Spelling.nearest(to: "colour", in: training) == nil)
        #expect(Spelling.nearest(to: "modle", in: ["model", "data"]) == "model")
    }
}

@Suite("Config: residual blocks")
struct ResidualConfigTests {
    /// A network config whose second layer is `block` (YAML lines, indented under the layer list).
    static func network(_ block: String) -> String {
        """
        model:
          layers:
            - units: 4
        \(block)
            - units: 1
        data:
          kind: synthetic
          name: xor

        """
    }

    @Test("A residual block's body is read layer by layer, activations written out, and builds the network it describes")
    func builds() throws {
        let config = try ConfigLoader.parse(
            Self.network(
                """
                    - kind: residual
                      layers:
                        - units: 4
                          activation: relu
                        - kind: batchNorm
                        - units: 4
                          activation: identity
                """), source: "run.yaml", baseDirectory: nil)
        let block = config.model.layers[1]
        #expect(block.kind == .residual && block.layers?.map(\.kind) == [.dense, .batchNorm, .dense])
        #expect(block.layers?.map(\.activation) == [.relu, .identity, .identity])
        let network: Network<Double> = try config.model.network(features: 2, seed: 1)
        #expect(
            network.description
                == "Network[Dense(2→4, tanh), Residual[Dense(4→4, relu), BatchNorm(4), Dense(4→4, identity)], Dense(4→1, tanh)]")
        #expect(network.stateTensors.map(\.name) == ["layers.1.body.1.running_mean", "layers.1.body.1.running_var"])
    }

    @Test("A body that is missing, empty, nests a residual block, holds a softmax or an unknown key, or changes the shape is refused at its key")
    func refused() {
        #expect(failure(Self.network("    - kind: residual")).contains("missing key 'layers' in model.layers[1]; a residual layer needs layers"))
        #expect(
            failure(Self.network("    - {kind: residual, layers: []}")).contains("model.layers[1].layers: expected at least one layer in the body"))
        let nested = failure(Self.network("    - {kind: residual, layers: [{kind: residual, layers: [{units: 4}]}]}"))
        #expect(nested.contains("model.layers[1].layers[0]"), "\(nested)")
        let softmax = failure(Self.network("    - {kind: residual, layers: [{units: 4, activation: softmax}]}"))
        #expect(softmax.contains("model.layers[1].layers[0].activation"), "\(softmax)")
        let unknown = failure(Self.network("    - {kind: residual, layers: [{units: 4, size: 2}]}"))
        #expect(unknown.contains("model.layers[1].layers[0]") && unknown.contains("size"), "\(unknown)")
        do {
            let config = try ConfigLoader.parse(
                Self.network("    - {kind: residual, layers: [{units: 3}]}"), source: "run.yaml", baseDirectory: nil)
            let built: Result<Network<Double>, LayerBuildError> = Result { () throws(LayerBuildError) in
                try config.model.network(features: 2, seed: 1)
            }
            guard case let .failure(error) = built else {
                Issue.record("a body from 4 to 3 features was built")
                return
            }
            #expect(error.path == "model.layers[1]" && "\(error)".contains("its body takes (4) but gives (3)"), "\(error)")
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test("The shipped residual MLP on digits loads")
    func shipped() throws {
        let config = try ready("digits-residual.yaml")
        #expect(config.model.layers.map(\.kind) == [.dense, .residual, .residual, .dense])
    }
}

@Suite("Batch norm's epsilon has a floor")
struct BatchNormEpsilonTests {
    private func model(epsilon: String) -> String {
        """
        model:
          inputShape: [2, 1, 1]
          layers:
            - {kind: batchNorm, epsilon: \(epsilon)}
            - {kind: flatten}
            - {units: 1}
        data: {kind: synthetic, name: xor}
        """
    }

    @Test("An epsilon that Float holds as 0, or below the floor, is refused at its key; the floor itself is accepted")
    func floor() {
        let expected = "a finite number of at least 1e-12 (epsilon keeps 1/√(variance + epsilon) finite for a channel whose batch variance is 0;"
        #expect(failure(model(epsilon: "1e-50")).hasPrefix("run.yaml:4:34: model.layers[0].epsilon: expected \(expected)"))
        #expect(failure(model(epsilon: "1e-13")).hasSuffix("; found 1e-13"))
        #expect(failure(model(epsilon: "1e-12")) == "no error")
        #expect(Float(1e-50) == 0 && Float(LayerConfig.smallestEpsilon) > 0)
    }

    @Test("A batch split over threads is refused beside batch norm, which needs the whole batch's statistics")
    func batchThreads() {
        #expect(
            failure(model(epsilon: "1e-5") + "\ntraining: {batchThreads: 2}\n")
                == "run.yaml:8:26: training.batchThreads: expected 1, as model.layers[0] (batchNorm) normalizes with the whole batch's statistics, which a batch split over threads would not see; found 2"
        )
        #expect(failure(model(epsilon: "1e-5") + "\ntraining: {batchThreads: 1}\n") == "no error")
    }
}

@Suite("Layer norm and GELU in configs")
struct LayerNormGELUConfigTests {
    private func model(_ layer: String) -> String {
        """
        model:
          layers:
            - {units: 4, activation: identity}
            - \(layer)
            - {units: 1}
        data: {kind: synthetic, name: xor}
        """
    }

    @Test("layerNorm takes epsilon, with batchNorm's floor; gelu takes approximation; neither takes another key")
    func keys() {
        for layer in ["{kind: layerNorm}", "{kind: layerNorm, epsilon: 1e-6}", "{kind: gelu}", "{kind: gelu, approximation: tanh}"] {
            #expect(failure(model(layer)) == "no error", "\(layer)")
        }
        #expect(
            failure(model("{kind: layerNorm, epsilon: 1e-13}")).hasSuffix(
                "model.layers[1].epsilon: expected a finite number of at least 1e-12 (epsilon keeps 1/√(variance + epsilon) finite for a sample or position whose features are all equal; Float holds nothing below 1.4e-45); found 1e-13"
            ))
        #expect(failure(model("{kind: layerNorm, epsilon: 1e-12}")) == "no error")
        #expect(
            failure(model("{kind: gelu, epsilon: 1e-5}")).hasSuffix("model.layers[1].epsilon does not apply to a gelu layer; it takes approximation"))
        #expect(
            failure(model("{kind: layerNorm, approximation: tanh}")).hasSuffix(
                "model.layers[1].approximation does not apply to a layerNorm layer; it takes epsilon"))
        #expect(
            failure(model("{kind: layerNorm, activation: relu}")).hasSuffix(
                "model.layers[1].activation does not apply to a layerNorm layer; it takes epsilon"))
        #expect(
            failure(model("{kind: gelu, approximation: exact}")).hasSuffix("model.layers[1].approximation: expected one of none, tanh; found 'exact'")
        )
    }
}

@Suite("RMSNorm in configs: a layer kind added through its spec alone")
struct RMSNormConfigTests {
    private func model(_ layer: String, data: String = "data: {kind: synthetic, name: xor}") -> String {
        """
        model:
          layers:
            - {units: 4, activation: identity}
            - \(layer)
            - {units: 1}
        \(data)
        optimizer: {kind: sgd, learningRate: 0.1}
        training: {epochs: 3, batchSize: 4, seed: 5, precision: double}
        """
    }

    @Test("rmsNorm takes epsilon alone, with the norms' floor, in a network and in a residual body")
    func keys() {
        for layer in ["{kind: rmsNorm}", "{kind: rmsNorm, epsilon: 1e-6}", "{kind: residual, layers: [{kind: rmsNorm}, {units: 4}]}"] {
            #expect(failure(model(layer)) == "no error", "\(layer)")
        }
        #expect(
            failure(model("{kind: rmsNorm, epsilon: 1e-13}")).hasSuffix(
                "model.layers[1].epsilon: expected a finite number of at least 1e-12 (epsilon keeps 1/√(variance + epsilon) finite for a sample or position whose features are all 0; Float holds nothing below 1.4e-45); found 1e-13"
            ))
        #expect(
            failure(model("{kind: residual, layers: [{kind: rmsNorm, epsilon: 0}]}")).hasSuffix(
                "model.layers[1].layers[0].epsilon: expected a finite number of at least 1e-12 (epsilon keeps 1/√(variance + epsilon) finite for a sample or position whose features are all 0; Float holds nothing below 1.4e-45); found 0"
            ))
        #expect(
            failure(model("{kind: rmsNorm, momentum: 0.1}")).hasSuffix("model.layers[1].momentum does not apply to a rmsNorm layer; it takes epsilon")
        )
        #expect(
            failure(model("{kind: rmsNorm, activation: relu}")).hasSuffix(
                "model.layers[1].activation does not apply to a rmsNorm layer; it takes epsilon"))
    }

    @Test("A saved config's rmsNorm epsilon is checked with the loader's bound (the same spec)")
    func savedConfigRanges() throws {
        var config = try ConfigLoader.parse(model("{kind: rmsNorm, epsilon: 1e-6}"), source: "run.yaml", baseDirectory: nil)
        #expect(throws: Never.self) { try config.checkRanges() }
        config.model.layers[1].epsilon = 1e-20
        #expect(throws: ConfigRangeError.self) { try config.checkRanges() }
    }

    @Test("The run builds an RMSNorm over the dense layer's 4 features, its one weight named as PyTorch names it, and trains")
    func buildsAndTrains() throws {
        let config = try ConfigLoader.parse(model("{kind: rmsNorm, epsilon: 1e-6}"), source: "run.yaml", baseDirectory: nil)
        let run = try RunBuilder.build(config)
        let engine = try #require(run.engine as? NetworkTrainingEngine<Double, SGD<Double>>)
        let norm = try #require(engine.network.layers[1] as? RMSNorm<Double>)
        #expect(norm.inputShape == [4] && norm.epsilon == 1e-6)
        #expect(engine.network.parameterTensors.filter { $0.layer == 1 }.map(\.name) == ["layers.1.weight"])
        // The layer as the config built it computes its definition, y = x/√(mean(x²) + ε), on [1, 2, 3, 4] (weight 1 at first).
        var layer = norm
        var state: [Double] = []
        let weight: [Double] = [1, 1, 1, 1]
        let x = try Tensor<Double>(shape: [1, 4], scalars: [1, 2, 3, 4])
        weight.withUnsafeBufferPointer { w in
            state.withUnsafeMutableBufferPointer { s in layer.forward(x, parameters: w, state: s, mode: .evaluation) }
        }
        let r = 1 / (7.5 + 1e-6).squareRoot()
        for (y, x) in zip(layer.output.scalars, [1.0, 2, 3, 4]) { #expect(abs(y - x * r) < 1e-12) }
        var engineCopy = engine
        while !engineCopy.isFinished { _ = engineCopy.step() }
        #expect(engineCopy.records.count == 3 && engineCopy.records.allSatisfy { $0.trainingLoss.isFinite })
    }
}

@Suite("training.products")
struct ProductsConfigTests {
    @Test("products: bf16 reads; a Double run's bf16 and an unknown choice are refused where they are written")
    func productsKey() throws {
        let bf16 = try ConfigLoader.parse(xorNetwork + "training:\n  products: bf16\n", source: "run.yaml", baseDirectory: nil)
        #expect(bf16.training.products == .bf16)
        #expect(try ConfigLoader.parse(xorNetwork, source: "run.yaml", baseDirectory: nil).training.products == nil)
        let double = failure(xorNetwork + "training:\n  precision: double\n  products: bf16\n")
        #expect(double.hasPrefix("run.yaml:9:14:") && double.contains("precision: float for bf16 products"), "\(double)")
        let half = failure(xorNetwork + "training:\n  products: half\n")
        #expect(half.hasPrefix("run.yaml:9:13:") && half.contains("full") && half.contains("bf16"), "\(half)")
    }
}
