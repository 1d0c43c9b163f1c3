// Predictions from a checkpoint alone: the network from its tensors, the inputs preprocessed as
// in training, one CSV row out per row in.
import NeuronCore

/// Predicts with a saved network.
public enum Prediction<Scalar: TensorScalar> {
    /// The network saved in `checkpoint` (its architecture from the saved config).
    /// - Throws: ``CheckpointError`` for a missing tensor or a shape that does not fit.
    public static func network(_ checkpoint: LoadedCheckpoint) throws -> Network<Scalar> {
        let model = checkpoint.state.config.model
        let layers: [(units: Int, activation: Activation)] = model.neuron != nil ? [(1, .tanh)] : model.layers.map { ($0.units, $0.activation) }
        var network = try Network<Scalar>(inputSize: checkpoint.state.featureNames.count, layers: layers, loss: model.effectiveLoss, seed: 0)
        for t in network.parameterTensors {
            network.parameters.replaceSubrange(t.range, with: try RunBuilder.tensor(t.name, of: checkpoint, as: Scalar.self, shape: t.shape))
        }
        return network
    }

    /// The predictions for every row of `input` as CSV: `row,class,p_<name>…` for classification,
    /// `row,y0…` otherwise.
    public static func csv(_ checkpoint: LoadedCheckpoint, input: String) throws -> String {
        var network = try network(checkpoint)
        var x: Tensor<Scalar> = try CSV.loadFeatures(input, columns: checkpoint.state.featureNames)
        try checkpoint.state.preprocessing.apply(to: &x)
        let y = try network.forward(x)
        var lines: [String]
        if let classes = checkpoint.state.classNames {
            lines = ["row,class," + classes.map { "p_\($0)" }.joined(separator: ",")]
            for n in 0 ..< y.rows {
                let best = ConfusionMatrix.argmax(y, row: n)
                lines.append("\(n + 1),\(classes[best])," + (0 ..< y.columns).map { "\(y[n, $0])" }.joined(separator: ","))
            }
        } else {
            lines = ["row," + (0 ..< y.columns).map { "y\($0)" }.joined(separator: ",")]
            for n in 0 ..< y.rows { lines.append("\(n + 1)," + (0 ..< y.columns).map { "\(y[n, $0])" }.joined(separator: ",")) }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
