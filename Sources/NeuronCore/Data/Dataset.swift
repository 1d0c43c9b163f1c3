/// Samples as rows: features and targets, plus class labels for classification.
///
/// `features: (samples, featureCount)  targets: (samples, outputCount)`. For classification the
/// targets are one-hot rows and `labels[i]` is the column holding row `i`'s 1; for regression the
/// targets are the values to fit and `labels` is nil.
public struct Dataset<Scalar: TensorScalar>: Sendable, Equatable {
    /// The inputs, one sample per row: (samples, featureCount).
    public var features: Tensor<Scalar>
    /// The outputs, one sample per row: (samples, outputCount); one-hot rows for classification.
    public var targets: Tensor<Scalar>
    /// The class index of each sample (classification only).
    public var labels: [Int]?
    /// The name of each class index (classification only).
    public var classNames: [String]?
    /// The name of each feature column.
    public var featureNames: [String]

    /// A dataset from features and targets, checked for consistency.
    /// - Parameters:
    ///   - features: (samples, featureCount).
    ///   - targets: (samples, outputCount).
    ///   - labels: the class index per sample, in `0..<outputCount`; targets must then be exactly
    ///     the one-hot rows of the labels.
    ///   - classNames: one name per target column; only together with `labels`.
    ///   - featureNames: one per feature column; defaults to `x0`, `x1`, ….
    /// - Throws: ``DataError/inconsistentDataset(_:)`` saying what does not fit.
    public init(
        features: Tensor<Scalar>, targets: Tensor<Scalar>, labels: [Int]? = nil,
        classNames: [String]? = nil, featureNames: [String]? = nil
    ) throws(DataError) {
        try Self.checkShapes(features: features, targets: targets, featureNames: featureNames)
        if let classNames, classNames.count != targets.columns {
            throw .inconsistentDataset("\(classNames.count) class names for \(targets.columns) target columns")
        }
        if let labels {
            try Self.checkLabels(labels, rows: features.rows, classCount: targets.columns)
            // One-hot consistency: row i is 1 at labels[i] and 0 elsewhere.
            let columns = targets.columns
            for (row, label) in labels.enumerated() {
                for column in 0..<columns where targets.scalars[row * columns + column] != (column == label ? 1 : 0) {
                    throw .inconsistentDataset(
                        "targets row \(row) is not the one-hot row of label \(label): column \(column) holds \(targets.scalars[row * columns + column])"
                    )
                }
            }
        } else if classNames != nil {
            throw .inconsistentDataset("class names given without labels")
        }
        self.init(unchecked: features, targets: targets, labels: labels, classNames: classNames, featureNames: featureNames)
    }

    /// A classification dataset from class indices: builds the one-hot targets, (samples, classNames.count).
    /// - Throws: ``DataError/inconsistentDataset(_:)`` for a label outside `0..<classNames.count`,
    ///   a label count that differs from the feature rows, or features that are not rank 2.
    public static func classification(
        features: Tensor<Scalar>, labels: [Int], classNames: [String], featureNames: [String]? = nil
    ) throws(DataError) -> Dataset {
        try checkLabels(labels, rows: features.rank == 2 ? features.rows : labels.count, classCount: classNames.count)
        var targets = Tensor<Scalar>(zeros: [labels.count, classNames.count])
        for (row, label) in labels.enumerated() { targets[row, label] = 1 }
        try checkShapes(features: features, targets: targets, featureNames: featureNames)
        return Dataset(unchecked: features, targets: targets, labels: labels, classNames: classNames, featureNames: featureNames)
    }

    /// The fields as given, for callers that built them consistent (subsets, conversions, loaders).
    init(unchecked features: Tensor<Scalar>, targets: Tensor<Scalar>, labels: [Int]?, classNames: [String]?, featureNames: [String]?) {
        self.features = features
        self.targets = targets
        self.labels = labels
        self.classNames = classNames
        self.featureNames = featureNames ?? (0..<features.columns).map { "x\($0)" }
    }

    /// The number of samples.
    public var count: Int { features.rows }
    /// The number of features per sample.
    public var featureCount: Int { features.columns }
    /// The number of target values per sample (the class count for classification).
    public var outputCount: Int { targets.columns }
    /// Whether samples carry class labels.
    public var isClassification: Bool { labels != nil }

    /// The rows at `indices`, in that order; the indices must be valid (callers derive them from `count`).
    public func subset(_ indices: [Int]) -> Dataset {
        Dataset(
            unchecked: Self.gatherRows(features, indices), targets: Self.gatherRows(targets, indices),
            labels: labels.map { all in indices.map { all[$0] } }, classNames: classNames, featureNames: featureNames)
    }

    /// A training and a validation part: the rows are shuffled with `generator`, then the last
    /// `validationFraction` of them (rounded, at least one row when the fraction is above 0)
    /// becomes the validation part.
    /// - Throws: ``DataError/invalidArgument(name:value:expected:)`` for a fraction outside [0, 1)
    ///   or one that leaves no training rows.
    public func split(
        validationFraction: Double, generator: inout SeededGenerator
    ) throws(DataError) -> (training: Dataset, validation: Dataset) {
        guard validationFraction >= 0, validationFraction < 1 else {
            throw .invalidArgument(name: "validation fraction", value: "\(validationFraction)", expected: "a number in [0, 1)")
        }
        let validationCount = validationFraction == 0 ? 0 : max(1, Int((Double(count) * validationFraction).rounded()))
        guard validationCount < count else {
            throw .invalidArgument(
                name: "validation fraction", value: "\(validationFraction)",
                expected: "a fraction that leaves at least one of the \(count) samples for training (it takes \(validationCount))")
        }
        let rows = try Self.splitRows(count: count, validationCount: validationCount, generator: &generator)
        return (subset(rows.training), subset(rows.validation))
    }

    /// Which rows ``split(validationFraction:generator:)`` puts in each part, in the parts' order:
    /// `0..<count` shuffled with `generator`, the last `validationCount` held out. (A benchmark
    /// that hands a peer the rows a run trains on replays the split through this.)
    /// - Throws: ``DataError/invalidArgument(name:value:expected:)`` for a count below 0 or a
    ///   validation count outside `0...count`.
    public static func splitRows(
        count: Int, validationCount: Int, generator: inout SeededGenerator
    ) throws(DataError) -> (training: [Int], validation: [Int]) {
        guard count >= 0 else { throw .invalidArgument(name: "row count", value: "\(count)", expected: "at least 0") }
        guard validationCount >= 0, validationCount <= count else {
            throw .invalidArgument(name: "validation count", value: "\(validationCount)", expected: "between 0 and the \(count) rows")
        }
        var order = Array(0..<count)
        generator.shuffle(&order)
        let trainingCount = count - validationCount
        return (Array(order[..<trainingCount]), Array(order[trainingCount...]))
    }

    /// The same dataset in another scalar type (Float ↔ Double), rounding to nearest.
    public func converted<Other: TensorScalar>(to: Other.Type) -> Dataset<Other> {
        Dataset<Other>(
            unchecked: Self.convert(features), targets: Self.convert(targets),
            labels: labels, classNames: classNames, featureNames: featureNames)
    }

    // MARK: Helpers

    private static func checkShapes(features: Tensor<Scalar>, targets: Tensor<Scalar>, featureNames: [String]?) throws(DataError) {
        guard features.rank == 2 else {
            throw .inconsistentDataset("features must be rank 2 (samples, featureCount), got shape \(TensorError.format(features.shape))")
        }
        guard targets.rank == 2 else {
            throw .inconsistentDataset("targets must be rank 2 (samples, outputCount), got shape \(TensorError.format(targets.shape))")
        }
        guard features.rows == targets.rows else {
            throw .inconsistentDataset("features have \(features.rows) rows but targets have \(targets.rows)")
        }
        if let featureNames, featureNames.count != features.columns {
            throw .inconsistentDataset("\(featureNames.count) feature names for \(features.columns) feature columns")
        }
    }

    private static func checkLabels(_ labels: [Int], rows: Int, classCount: Int) throws(DataError) {
        guard labels.count == rows else {
            throw .inconsistentDataset("\(labels.count) labels for \(rows) samples")
        }
        if let bad = labels.firstIndex(where: { !(0..<classCount).contains($0) }) {
            throw .inconsistentDataset("sample \(bad) has label \(labels[bad]); expected 0..<\(classCount)")
        }
    }

    // x: (rows, columns) → (indices.count, columns), row i copied from x's row indices[i]
    private static func gatherRows(_ x: Tensor<Scalar>, _ indices: [Int]) -> Tensor<Scalar> {
        let columns = x.columns
        var scalars = [Scalar]()
        scalars.reserveCapacity(indices.count * columns)
        for row in indices { scalars.append(contentsOf: x.scalars[row * columns..<(row + 1) * columns]) }
        return Tensor(matrix: scalars, rows: indices.count, columns: columns)
    }

    private static func convert<Other: TensorScalar>(_ x: Tensor<Scalar>) -> Tensor<Other> {
        var y = Tensor<Other>(vector: x.scalars.map { Other($0) })
        y.shape = x.shape
        return y
    }
}

extension Dataset: CustomStringConvertible {
    /// `Dataset(150 samples, 4 features → 3 classes)` or `… → 1 output`.
    public var description: String {
        let outputs = classNames.map { "\($0.count) classes" } ?? "\(outputCount) output\(outputCount == 1 ? "" : "s")"
        return "Dataset(\(count) samples, \(featureCount) feature\(featureCount == 1 ? "" : "s") → \(outputs))"
    }
}

extension Tensor {
    /// A (rows, columns) tensor over `scalars`, whose count the caller has made rows · columns.
    init(matrix scalars: [Scalar], rows: Int, columns: Int) {
        self.init(vector: scalars)
        self.shape = [rows, columns]
    }
}
