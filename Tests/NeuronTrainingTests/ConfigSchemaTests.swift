import Foundation
import NeuronCore
import Testing

@testable import NeuronTraining

/// The stored properties of `value`, in declaration order.
private func properties(_ value: Any) -> [String] { Mirror(reflecting: value).children.compactMap(\.label) }

private func keys<Key: CodingKey & CaseIterable>(_: Key.Type) -> [String] { Key.allCases.map(\.stringValue) }

/// The keys of a mapping shape, and which are required.
private func mapping(_ shape: ConfigShape) -> (keys: [String], required: Set<String>)? {
    guard case let .mapping(fields, required) = shape else { return nil }
    return (fields.map(\.key), required)
}

@Suite("Config schema: derived from the config types, written once")
struct ConfigSchemaTests {
    @Test("Each section's keys are exactly its stored properties, in declaration order")
    func keysAreProperties() {
        let data = DataConfig(kind: .csv)
        // `origin` records where the keys were written; it is no key itself.
        #expect(properties(RunConfig(model: ModelConfig(), data: data)) == keys(RunConfig.CodingKeys.self) + ["origin"])
        // `startingParameters` is what desugaring the neuron leaves (its weight and bias); no key either.
        #expect(properties(ModelConfig()) == keys(ModelConfig.CodingKeys.self) + ["startingParameters"])
        // A layer's keys are its kind, then its settings' properties (which their own Codable encodes).
        #expect(properties(LayerConfig(units: 1)) == ["kind", "settings"])
        #expect(["kind"] + properties(LayerConfig.Settings()) == keys(LayerConfig.CodingKeys.self))
        #expect(properties(NeuronConfig()) == keys(NeuronConfig.CodingKeys.self))
        #expect(properties(data) == keys(DataConfig.CodingKeys.self))
        #expect(properties(OptimizerConfig()) == keys(OptimizerConfig.CodingKeys.self))
        #expect(properties(ScheduleConfig()) == keys(ScheduleConfig.CodingKeys.self))
        #expect(properties(TrainingConfig()) == keys(TrainingConfig.CodingKeys.self))
        #expect(properties(OutputConfig()) == keys(OutputConfig.CodingKeys.self))
    }

    @Test("Shapes follow the properties' types; required keys are the ones without a default")
    func shapes() throws {
        let root = try #require(mapping(RunConfig.shape))
        #expect(root.keys == ["model", "data", "optimizer", "training", "output"] && root.required == ["model", "data"])
        #expect(try #require(mapping(DataConfig.shape)).required == ["kind"])
        #expect(try #require(mapping(LayerConfig.shape)).required.isEmpty)  // units: for dense layers, checked by the loader
        #expect(try #require(mapping(OptimizerConfig.shape)).required.isEmpty)
        #expect(RunConfig.shape.expectation == "a mapping (keys model, data, optimizer, training, output)")
        #expect(
            [LayerConfig].shape.expectation
                == "a list, each item a mapping (keys kind, units, features, heads, activation, filters, kernel, stride, padding, pad, size, global, rate, momentum, epsilon, approximation, layers)"
        )
        #expect([String]?.shape.expectation == "a list, each item a string")
        #expect(UInt64.shape.expectation == "a whole number from 0 to 18446744073709551615")
    }

    @Test("A choice's names are its enum's cases, in declaration order")
    func choices() {
        func names(_ shape: ConfigShape) -> [String]? {
            guard case let .choice(names) = shape else { return nil }
            return names
        }
        #expect(names(Activation.shape) == ["tanh", "sigmoid", "relu", "identity", "softmax"])
        #expect(names(Loss?.shape) == Loss.allCases.map(\.rawValue))
        #expect(names(DataConfig.Kind.shape) == ["csv", "idx", "synthetic", "sample", "text"])
        #expect(names(CSV.Task.shape) == ["classification", "regression"])
        #expect(names(DataConfig.SyntheticName.shape) == ["xor", "sine"])
        #expect(names(DataConfig.Normalization.shape) == ["standardize", "scale", "none"])
        #expect(names(OptimizerConfig.Kind.shape) == ["sgd", "adam"])
        #expect(names(ScheduleConfig.Kind.shape) == ["constant", "step", "cosine"])
        #expect(names(TrainingConfig.Precision.shape) == ["float", "double"])
        #expect(names(GELUApproximation.shape) == ["none", "tanh"])
    }

    @Test("Each kind's keys, as Docs/Config.md's tables list them")
    func kindKeys() {
        #expect(
            DataConfig.Kind.csv.keys.map(\.stringValue) == [
                "path", "labelColumn", "task", "featureColumns", "testPath", "normalization", "validationSplit", "limit",
            ])
        #expect(DataConfig.Kind.sample.keys.map(\.stringValue) == ["input", "target"])
        #expect(OptimizerConfig.Kind.sgd.keys.map(\.stringValue) == ["learningRate", "momentum", "nesterov", "weightDecay", "decay", "schedule"])
        #expect(ScheduleConfig.Kind.cosine.keys.map(\.stringValue) == ["minimumFactor", "warmupSteps"])
        #expect(ScheduleConfig.Kind.step.keys.map(\.stringValue) == ["every", "factor"])
        #expect(LayerConfig.Kind.layerNorm.keys.map(\.stringValue) == ["epsilon"])
        #expect(LayerConfig.Kind.gelu.keys.map(\.stringValue) == ["approximation"])
        // No kind takes `kind` again.
        #expect(DataConfig.Kind.allCases.allSatisfy { !$0.keys.contains(.kind) })
        #expect(OptimizerConfig.Kind.allCases.allSatisfy { !$0.keys.contains(.kind) })
        #expect(ScheduleConfig.Kind.allCases.allSatisfy { !$0.keys.contains(.kind) })
    }

    @Test("A section decodes from its defaults: a key absent or null keeps its default")
    func defaults() throws {
        let optimizer = try JSONDecoder().decode(OptimizerConfig.self, from: Data(#"{"kind": "adam", "learningRate": null, "beta1": 0.8}"#.utf8))
        var expected = OptimizerConfig()
        (expected.kind, expected.beta1) = (.adam, 0.8)
        #expect(optimizer == expected)
        #expect(try JSONDecoder().decode(TrainingConfig.self, from: Data("{}".utf8)) == TrainingConfig())
        #expect(try JSONDecoder().decode(LayerConfig.self, from: Data(#"{"units": 3}"#.utf8)) == LayerConfig(units: 3, activation: .tanh))
        var conv = LayerConfig(kind: .conv2d)
        (conv.filters, conv.kernel) = (8, 3)
        #expect(
            try JSONDecoder().decode(LayerConfig.self, from: Data(#"{"kind": "conv2d", "filters": 8, "kernel": 3, "stride": null}"#.utf8)) == conv)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(LayerConfig.self, from: Data(#"{"kind": "conv3d"}"#.utf8)) }
    }
}
