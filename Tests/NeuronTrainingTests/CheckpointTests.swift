import Foundation
import NeuronCore
import Testing

@testable import NeuronTraining

/// A checkpoint built by hand: two tensors and a state at `step`.
private func handmade(step: Int) throws -> Checkpoint {
    let weight = try Tensor<Float>(shape: [2, 3], scalars: [1, 2, 3, 4, 5, 6])
    let records = [EpochRecord(epoch: 1, step: step, trainingLoss: 0.25, trainingAccuracy: 0.5, validationLoss: nil, validationAccuracy: nil)]
    return Checkpoint(
        tensors: [SafeTensors.entry("layers.0.weight", weight), SafeTensors.entry("layers.0.bias", Tensor<Float>(vector: [0.5, -0.5, 0]))],
        state: CheckpointState(
            config: try xorConfig(), network: "Network[Dense(2→3, tanh)]", precision: .float, epoch: 1, step: step, seed: 7,
            position: nil, optimizerKind: .sgd, optimizerStep: step, preprocessing: .scale(0.5), classNames: nil,
            featureNames: ["a", "b"], records: records))
}

@Suite("Checkpoint: two files written atomically, read back whole or not at all")
struct CheckpointTests {
    @Test("Write then read gives the same state and tensors, from the directory or either file")
    func roundTrip() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let checkpoint = try handmade(step: 12)
        try checkpoint.write(to: directory.path)
        // Atomic writes leave no temporary file behind.
        #expect(try directory.names() == ["checkpoint.json", "checkpoint.safetensors"])
        for path in [directory.path, directory.file("checkpoint.safetensors"), directory.file("checkpoint.json")] {
            let loaded = try Checkpoint.read(path)
            #expect(loaded.path == directory.path)
            #expect(loaded.state == checkpoint.state)
            #expect(Set(loaded.tensors.keys) == ["layers.0.weight", "layers.0.bias"])
            #expect(checkpoint.tensors.allSatisfy { loaded.tensors[$0.name] == $0 })
        }
        // The safetensors header repeats what a reader without the JSON file needs.
        let (_, metadata) = try SafeTensors.read(directory.file("checkpoint.safetensors"))
        #expect(metadata == ["format": "neuron-1", "network": "Network[Dense(2→3, tanh)]", "step": "12", "epoch": "1", "precision": "float"])
    }

    @Test("A pair torn by a crash between the two writes is refused, naming both steps")
    func tornPair() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        try handmade(step: 12).write(to: directory.path)
        // The next checkpoint got as far as its tensors: checkpoint.json is still step 12's.
        let next = try handmade(step: 13)
        try SafeTensors.write(next.tensors, metadata: ["step": "13"], to: directory.file("checkpoint.safetensors"))
        #expect(throws: CheckpointError.tornPair(directory: directory.path, stateStep: 12, tensorsStep: "13")) {
            try Checkpoint.read(directory.path)
        }
        let message = CheckpointError.tornPair(directory: directory.path, stateStep: 12, tensorsStep: "13").description
        #expect(message.hasPrefix(directory.path + ": checkpoint.json is from step 12 but checkpoint.safetensors from step 13"))
        // A header without the step cannot be matched either.
        try SafeTensors.write(next.tensors, to: directory.file("checkpoint.safetensors"))
        #expect(throws: CheckpointError.tornPair(directory: directory.path, stateStep: 12, tensorsStep: "?")) {
            try Checkpoint.read(directory.path)
        }
    }

    @Test("Non-finite numbers in the records (an infinite validation loss) are saved and read back")
    func nonFiniteRecords() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        var checkpoint = try handmade(step: 12)
        checkpoint.state.records[0].validationLoss = .infinity
        try checkpoint.write(to: directory.path)
        #expect(try Checkpoint.read(directory.path).state == checkpoint.state)
        #expect(try String(contentsOfFile: directory.file("checkpoint.json"), encoding: .utf8).contains(#""validationLoss" : "Infinity""#))
    }

    @Test("A missing or undecodable checkpoint.json names that file")
    func badStateFile() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        try handmade(step: 3).write(to: directory.path)
        _ = try directory.write(Array("{\"format\": 1}".utf8), "checkpoint.json")
        #expect {
            try Checkpoint.read(directory.path)
        } throws: { error in
            guard case let .corrupt(path, reason) = error as? CheckpointError else { return false }
            return path == directory.file("checkpoint.json") && reason.hasPrefix("not a checkpoint state")
        }
        try FileManager.default.removeItem(atPath: directory.file("checkpoint.json"))
        #expect(throws: CheckpointError.fileNotFound(path: directory.file("checkpoint.json"))) {
            try Checkpoint.read(directory.path)
        }
    }

    @Test("A loaded tensor comes in the asked type and shape, or a message says what is wrong")
    func loadedTensor() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        try handmade(step: 1).write(to: directory.path)
        let loaded = try Checkpoint.read(directory.path)
        #expect(try loaded.tensor("layers.0.weight", as: Float.self, shape: [2, 3]) == [1, 2, 3, 4, 5, 6])
        #expect(throws: CheckpointError.shapeMismatch(path: directory.path, name: "layers.0.weight", found: [2, 3], expected: [3, 2])) {
            try loaded.tensor("layers.0.weight", as: Float.self, shape: [3, 2])
        }
        #expect(throws: CheckpointError.missingTensor(path: directory.path, name: "layers.1.weight")) {
            try loaded.tensor("layers.1.weight", as: Float.self, shape: [3, 1])
        }
        #expect(try loaded.tensor("layers.0.bias", as: Double.self, shape: [3]) == [0.5, -0.5, 0])  // F32 → Double is exact
    }
}
