import ArgumentParser
import Foundation
import NeuronExport
import NeuronTraining

/// `neuron export RUN model.onnx`: the trained network as one ONNX file.
struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Export a trained network to ONNX, its preprocessing included.",
        discussion: """
            The model takes raw features (input `features`, one row per sample, in the order of the \
            metadata `neuron.feature_names`) and returns class probabilities (`probabilities`, columns in \
            the order of `neuron.class_names`) or values (`values`), as `neuron predict` prints them. \
            Dropout is left out; batch normalization uses its running statistics. A text model takes \
            token indices (input `tokens`, batch × time, time up to the block) and returns the next \
            token's `logits` and `probabilities` at every position; its vocabulary, boundary token and \
            block are in the metadata (`neuron.vocabulary`, `neuron.boundary_token`, `neuron.block_size`); a model of a \
            tokenizer's tokens carries the tokenizer instead (`neuron.tokenizer`, Hugging Face's tokenizer.json when \
            `neuron.tokenizer_format` is `huggingface`).
            """
    )

    @Argument(help: "The run directory or its checkpoint file.")
    var checkpoint: String

    @Argument(help: "The ONNX file to write (replaced atomically: whole or not at all).")
    var output: String

    @Option(help: "The ONNX operator set (\(ONNXExportOptions.supportedOpsets.lowerBound) to \(ONNXExportOptions.supportedOpsets.upperBound)).")
    var opset: Int = ONNXExportOptions.defaultOpset

    @Option(help: "The batch dimension: 'dynamic' (any number of rows) or a fixed number of rows.")
    var batch: String = "dynamic"

    @Flag(help: "Export a double-precision run in float32.")
    var float32 = false

    func validate() throws {
        guard ONNXExportOptions.supportedOpsets.contains(opset) else { throw ValidationError(ONNXExportError.unsupportedOpset(opset).description) }
        _ = try batchOption()
    }

    func batchOption() throws -> ONNXExportOptions.Batch {
        if batch == "dynamic" { return .dynamic }
        guard let size = Int(batch), size >= 1 else {
            throw ValidationError("--batch must be 'dynamic' or a number of rows of at least 1, got '\(batch)'")
        }
        return .fixed(size)
    }

    func run() throws {
        let saved = try Checkpoint.read(checkpoint)
        let options = ONNXExportOptions(opset: opset, batch: try batchOption())
        let size = try ONNXExport.write(saved, to: output, float32: float32, options: options)
        let precision = float32 || saved.state.precision == .float ? "float32" : "float64"
        print("\(output): \(saved.state.network), \(precision), opset \(opset), \(size) bytes")
    }
}
