/// Per-feature mean and standard deviation fitted on training rows only, applied to any set.
///
/// Fitting on the training rows alone keeps validation and test data unseen; the same transform
/// is then applied to every set, so all of them live on the training data's scale.
public struct Standardizer<Scalar: TensorScalar>: Sendable, Equatable, Codable {
    /// The mean of each feature column.
    public var mean: [Scalar]
    /// The population standard deviation of each feature column (1 for a constant column).
    public var standardDeviation: [Scalar]

    /// Fits each column of `features` (samples, featureCount): its mean and population standard
    /// deviation, accumulated in Double. A constant column gets standard deviation 1, so it maps
    /// to 0 rather than NaN; with no rows every mean is 0 and every deviation 1.
    public init(fitting features: Tensor<Scalar>) {
        // features: (rows, columns)  sums, squares, constant: (columns)
        let columns = features.columns
        let rows = columns == 0 ? 0 : features.count / columns
        var sums = [Double](repeating: 0, count: columns)
        var squares = [Double](repeating: 0, count: columns)
        var constant = [Bool](repeating: true, count: columns)
        features.withUnsafeBufferPointer { x in
            for r in 0..<rows {
                for c in 0..<columns { sums[c] += Double(x[r * columns + c]) }
            }
            let n = Double(max(rows, 1))
            for c in 0..<columns { sums[c] /= n }
            // Two passes: squares of deviations from the mean, not E[x²] - mean², which cancels badly.
            for r in 0..<rows {
                for c in 0..<columns {
                    let value = x[r * columns + c]
                    let d = Double(value) - sums[c]
                    squares[c] += d * d
                    if value != x[c] { constant[c] = false }
                }
            }
            for c in 0..<columns { squares[c] = (squares[c] / n).squareRoot() }
        }
        mean = sums.map { Scalar($0) }
        standardDeviation = (0..<columns).map { c in
            let deviation = Scalar(squares[c])
            return constant[c] || !(deviation > 0) ? 1 : deviation  // also catches a deviation that underflows in Float
        }
    }

    /// A standardizer with the given statistics (e.g. loaded from a saved model).
    /// - Throws: ``DataError/invalidArgument(name:value:expected:)`` when the counts differ, a mean
    ///   is not finite, or a deviation is not finite and positive.
    public init(mean: [Scalar], standardDeviation: [Scalar]) throws(DataError) {
        guard mean.count == standardDeviation.count else {
            throw .invalidArgument(
                name: "standard deviations", value: "\(standardDeviation.count) values",
                expected: "one per mean (\(mean.count))")
        }
        if let bad = mean.firstIndex(where: { !$0.isFinite }) {
            throw .invalidArgument(name: "mean[\(bad)]", value: "\(mean[bad])", expected: "a finite number")
        }
        if let bad = standardDeviation.firstIndex(where: { !($0.isFinite && $0 > 0) }) {
            throw .invalidArgument(name: "standardDeviation[\(bad)]", value: "\(standardDeviation[bad])", expected: "a finite number above 0")
        }
        self.mean = mean
        self.standardDeviation = standardDeviation
    }

    /// A saved standardizer, checked like ``init(mean:standardDeviation:)``.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        do {
            try self.init(
                mean: container.decode([Scalar].self, forKey: .mean),
                standardDeviation: container.decode([Scalar].self, forKey: .standardDeviation))
        } catch let error as DataError {
            throw DecodingError.dataCorruptedError(forKey: .standardDeviation, in: container, debugDescription: error.description)
        }
    }

    /// Standardizes `features` (samples, featureCount) in place: x = (x - mean) / standardDeviation.
    /// - Throws: ``DataError/featureCountMismatch(expected:found:)`` when the column count differs from the fit.
    public func apply(to features: inout Tensor<Scalar>) throws(DataError) {
        // features: (rows, columns)  mean, standardDeviation: (columns)
        let columns = mean.count
        guard features.columns == columns else {
            throw .featureCountMismatch(expected: columns, found: features.columns)
        }
        guard columns > 0 else { return }
        let rows = features.count / columns
        mean.withUnsafeBufferPointer { m in
            standardDeviation.withUnsafeBufferPointer { s in
                features.withUnsafeMutableBufferPointer { x in
                    for r in 0..<rows {
                        for c in 0..<columns { x[r * columns + c] = (x[r * columns + c] - m[c]) / s[c] }
                    }
                }
            }
        }
    }

    /// Standardizes the features of `dataset` in place; targets are left as they are.
    /// - Throws: ``DataError/featureCountMismatch(expected:found:)`` when the feature count differs from the fit.
    public func apply(to dataset: inout Dataset<Scalar>) throws(DataError) {
        try apply(to: &dataset.features)
    }
}
