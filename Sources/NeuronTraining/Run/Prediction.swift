// Predictions from a checkpoint alone: the network from its tensors, the inputs preprocessed as
// in training, one CSV row out per row in.
import NeuronCore

/// Predicts with a saved network.
public enum Prediction<Scalar: TensorScalar> {
    /// The network saved in `checkpoint` (its architecture from the saved config), after this
    /// machine's BLAS kernels have passed their check: every use of it (explain, sample, export,
    /// predict) runs products.
    /// - Throws: ``CheckpointError`` for a missing tensor or a shape that does not fit;
    ///   `BLAS.KernelMismatch` when the kernels compute wrong products.
    public static func network(_ checkpoint: LoadedCheckpoint) throws -> Network<Scalar> {
        try BLAS.checkKernels()
        // Seed 0: every weight is replaced by the saved one.
        var network: Network<Scalar> = try checkpoint.state.config.desugared.model.network(
            features: checkpoint.state.featureNames.count, vocabulary: checkpoint.state.vocabulary?.count, seed: 0)
        try network.loadParameters(from: checkpoint)
        return network
    }

    /// The predictions for every row of `input` as CSV: `row,class,p_<name>…` for classification,
    /// `row,y0…` otherwise.
    /// - Throws: ``RunError`` naming the first row whose outputs are not finite, and what reading
    ///   `input` or building the network throws.
    public static func csv(_ checkpoint: LoadedCheckpoint, input: String) throws -> String {
        var network = try network(checkpoint)
        var x: Tensor<Scalar> = try CSV.loadFeatures(input, columns: checkpoint.state.featureNames)
        try checkpoint.state.preprocessing.apply(to: &x)
        let y = try network.forward(x)
        // A NaN printed as a probability would read as a prediction.
        if let i = y.scalars.firstIndex(where: { !$0.isFinite }) {
            throw RunError.invalid(
                "\(input): row \(i / y.columns + 1) gives outputs that are not finite (NaN or infinity) with the model of \(checkpoint.file); no prediction was written"
            )
        }
        var lines: [String]
        if let classes = checkpoint.state.classNames {
            lines = ["row,class," + classes.map { field("p_\($0)") }.joined(separator: ",")]
            for n in 0..<y.rows {
                let best = ConfusionMatrix.argmax(y, row: n)
                lines.append("\(n + 1),\(field(classes[best]))," + (0..<y.columns).map { "\(y[n, $0])" }.joined(separator: ","))
            }
        } else {
            lines = ["row," + (0..<y.columns).map { "y\($0)" }.joined(separator: ",")]
            for n in 0..<y.rows { lines.append("\(n + 1)," + (0..<y.columns).map { "\(y[n, $0])" }.joined(separator: ",")) }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `text` as one CSV field (RFC 4180): quoted, its quotes doubled, when it holds a comma, a
    /// quote or a line break, so that a class named `Iris setosa, Fisher` stays one column.
    public static func field(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0.isNewline }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
