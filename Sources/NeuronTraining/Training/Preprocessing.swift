// How a network's inputs were transformed in training. It is part of what a trained network is (a
// network trained on standardized features gives nonsense on raw ones), so it sits with the
// training types, below both the checkpoint that saves it and the run that fits it.
import NeuronCore

/// How features are transformed before they reach the network; saved with every checkpoint so
/// that `evaluate` and `predict` see inputs exactly as training did.
public enum Preprocessing: Sendable, Equatable {
    /// Features as read.
    case none
    /// Every feature multiplied by `factor` (IDX pixels: 1/255).
    case scale(Double)
    /// Per feature `(x - mean) / standardDeviation`, fitted on the training rows.
    case standardize(mean: [Double], standardDeviation: [Double])

    /// Applies the transformation to features in place.
    /// - Throws: `DataError.featureCountMismatch(expected:found:)` when the columns differ.
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

// MARK: - JSON

/// One key naming the kind: `{"none": {}}`, `{"scale": 0.00392156862745098}`,
/// `{"standardize": {"mean": [...], "standardDeviation": [...]}}`. A scale in Swift's synthesized
/// form of an unlabeled value, `{"scale": {"_0": 0.0039…}}`, decodes too: checkpoints hold it.
extension Preprocessing: Codable {
    private enum Kind: String, CodingKey {
        case none, scale, standardize
    }

    private enum Field: String, CodingKey {
        case mean, standardDeviation
        /// The synthesized name of `scale`'s unlabeled value.
        case unlabeled = "_0"
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: Kind.self)
        guard container.allKeys.count == 1, let kind = container.allKeys.first else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: container.codingPath, debugDescription: "expected exactly one of none, scale, standardize"))
        }
        switch kind {
        case .none:
            self = .none
        case .scale:
            if let factor = try? container.decode(Double.self, forKey: .scale) {
                self = .scale(factor)
            } else {
                self = .scale(try container.nestedContainer(keyedBy: Field.self, forKey: .scale).decode(Double.self, forKey: .unlabeled))
            }
        case .standardize:
            let fields = try container.nestedContainer(keyedBy: Field.self, forKey: .standardize)
            self = .standardize(
                mean: try fields.decode([Double].self, forKey: .mean),
                standardDeviation: try fields.decode([Double].self, forKey: .standardDeviation))
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: Kind.self)
        switch self {
        case .none:
            _ = container.nestedContainer(keyedBy: Field.self, forKey: .none)
        case let .scale(factor):
            try container.encode(factor, forKey: .scale)
        case let .standardize(mean, deviation):
            var fields = container.nestedContainer(keyedBy: Field.self, forKey: .standardize)
            try fields.encode(mean, forKey: .mean)
            try fields.encode(deviation, forKey: .standardDeviation)
        }
    }
}
