// A run's checkpoint as an ONNX file: the network rebuilt from the checkpoint (as `neuron predict`
// does), its preprocessing, feature and class names, written atomically.
import NeuronCore
import NeuronTraining

/// Exports saved runs to ONNX.
public enum ONNXExport {
    /// The ONNX model of a checkpoint, in its precision or, with `float32`, in Float.
    /// - Throws: `CheckpointError` for tensors that do not fit the saved model, ``ONNXExportError``
    ///   for a layer with no ONNX form or an option out of range.
    public static func model(_ checkpoint: LoadedCheckpoint, float32: Bool = false, options: ONNXExportOptions = ONNXExportOptions())
        throws -> [UInt8]
    {
        let state = checkpoint.state
        switch (state.precision, float32) {
        case (.float, _):
            return try model(Prediction<Float>.network(checkpoint), state, options)
        case (.double, true):
            return try model(Prediction<Double>.network(checkpoint).converted(to: Float.self), state, options)
        case (.double, false):
            return try model(Prediction<Double>.network(checkpoint), state, options)
        }
    }

    private static func model<Scalar>(_ network: Network<Scalar>, _ state: CheckpointState, _ options: ONNXExportOptions) throws -> [UInt8] {
        try network.onnxModel(
            preprocessing: state.preprocessing, featureNames: state.featureNames, classNames: state.classNames, vocabulary: state.vocabulary,
            options: options)
    }

    /// Writes the ONNX model of `checkpoint` to `path` in one atomic rename: the file is whole or
    /// absent (an earlier file at `path` stays as it was when anything fails). A `path` that is the
    /// checkpoint itself or another file of its run directory is refused: the export would destroy
    /// the run it was made from.
    /// - Returns: the number of bytes written.
    /// - Throws: as ``model(_:float32:options:)``, and `CheckpointError.writeFailed(path:reason:)`.
    @discardableResult
    public static func write(
        _ checkpoint: LoadedCheckpoint, to path: String, float32: Bool = false, options: ONNXExportOptions = ONNXExportOptions()
    ) throws -> Int {
        try checkpoint.checkNotOwnFile(path)
        let bytes = try model(checkpoint, float32: float32, options: options)
        try AtomicFile.write(bytes, to: path)
        return bytes.count
    }
}
