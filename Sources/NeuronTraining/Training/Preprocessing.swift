// How a network's inputs were transformed in training. It is part of what a trained network is (a
// network trained on standardized features gives nonsense on raw ones), so it sits with the
// training types, below both the checkpoint that saves it and the run that fits it.
import NeuronCore

/// How features are transformed before they reach the network; saved with every checkpoint so
/// that `evaluate` and `predict` see inputs exactly as training did.
public enum Preprocessing: Sendable, Equatable, Codable {
    /// Features as read.
    case none
    /// Every feature multiplied by `factor` (IDX pixels: 1/255).
    case scale(Double)
    /// Per feature `(x - mean) / standardDeviation`, fitted on the training rows.
    case standardize(mean: [Double], standardDeviation: [Double])

    /// Applies the transformation to features in place.
    /// - Throws: ``DataError/featureCountMismatch(expected:found:)`` when the columns differ.
    public func apply<Scalar: TensorScalar>(to features: inout Tensor<Scalar>) throws(DataError) {
        switch self {
        case .none:
            break
        case let .scale(factor):
            Tensor.scale(by: Scalar(factor), &features)
        case let .standardize(mean, deviation):
            try Standardizer<Scalar>(mean: mean.map { Scalar($0) }, standardDeviation: deviation.map { Scalar($0) }).apply(to: &features)
        }
    }
}
