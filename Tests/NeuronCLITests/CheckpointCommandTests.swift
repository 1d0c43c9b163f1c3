import Foundation
import Testing

/// A checkpoint file's header (as JSON) and where its data starts.
func checkpointHeader(_ file: String) throws -> (header: [String: Any], dataStart: Int, bytes: Data) {
    let data = try Data(contentsOf: URL(fileURLWithPath: file))
    let length = Int(data.prefix(8).enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) })
    let header = try #require(try JSONSerialization.jsonObject(with: data.subdata(in: 8..<8 + length)) as? [String: Any])
    return (header, 8 + length, data)
}

@Suite("neuron evaluate, predict and train --resume on an edited checkpoint")
struct CheckpointCommandTests {
    @Test("NaN weights: evaluate, predict and resume exit 2 naming the file and the tensor, instead of reporting loss nan")
    func nanWeights() throws {
        let out = try scratchDirectory("nan") + "/run"
        let trained = try runNeuron(["train", dataDirectory + "/iris.yaml", "--output", out, "--epochs", "2", "--quiet"])
        #expect(trained.status == 0, "\(trained.stderr)")
        let file = out + "/checkpoint.safetensors"
        let (header, dataStart, saved) = try checkpointHeader(file)
        var bytes = saved
        // The first element of layers.1.weight becomes a NaN (iris trains in Float: 4 bytes).
        let offsets = try #require((header["layers.1.weight"] as? [String: Any])?["data_offsets"] as? [Int])
        bytes.replaceSubrange(dataStart + offsets[0]..<dataStart + offsets[0] + 4, with: [0x00, 0x00, 0xC0, 0x7F])
        try bytes.write(to: URL(fileURLWithPath: file))
        for arguments in [
            ["evaluate", out], ["predict", out, dataDirectory + "/iris.csv"], ["train", dataDirectory + "/iris.yaml", "--resume", out],
        ] {
            let run = try runNeuron(arguments)
            #expect(run.status == 2, "\(arguments[0]): \(run.stdout)")
            #expect(run.stderr.contains("\(file): layers.1.weight: element 0 is not finite"), "\(arguments[0]): \(run.stderr)")
            #expect(!run.stdout.contains("nan"), "\(arguments[0])")
        }
    }

    @Test("An all-zero generator state is refused on resume at once, naming the field, instead of spinning forever")
    func zeroGenerator() throws {
        let out = try scratchDirectory("zero") + "/run"
        #expect(try runNeuron(["train", dataDirectory + "/xor.yaml", "--output", out, "--epochs", "3", "--quiet"]).status == 0)
        let file = out + "/checkpoint.safetensors"
        let (header, dataStart, bytes) = try checkpointHeader(file)
        var metadata = try #require(header["__metadata__"] as? [String: String])
        var state = try #require(try JSONSerialization.jsonObject(with: Data(metadata["neuron.state"]!.utf8)) as? [String: Any])
        var position = try #require(state["position"] as? [String: Any])
        position["generator"] = ["state": [0, 0, 0, 0]]
        state["position"] = position
        metadata["neuron.state"] = String(decoding: try JSONSerialization.data(withJSONObject: state), as: UTF8.self)
        var edited = header
        edited["__metadata__"] = metadata
        var text = Array(try JSONSerialization.data(withJSONObject: edited))
        text += Array(repeating: UInt8(ascii: " "), count: (8 - text.count % 8) % 8)
        var rewritten = Data((0..<8).map { UInt8(truncatingIfNeeded: UInt64(text.count) >> (8 * UInt64($0))) })
        rewritten.append(contentsOf: text)
        rewritten.append(bytes.subdata(in: dataStart..<bytes.count))
        try rewritten.write(to: URL(fileURLWithPath: file))
        let resumed = try runNeuron(["train", dataDirectory + "/xor.yaml", "--resume", out, "--epochs", "6", "--quiet"])
        #expect(resumed.status == 2)
        #expect(resumed.stderr.contains("\(file): position.generator.state:"), "\(resumed.stderr)")
    }
}
