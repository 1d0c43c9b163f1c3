// Metrics over predictions: accuracy by the largest output, and the confusion matrix.

/// Counts of (actual class, predicted class) pairs; the prediction is the largest output.
public struct ConfusionMatrix: Sendable, Equatable, Codable, CustomStringConvertible {
    /// The number of classes.
    public let classCount: Int
    /// `counts[actual][predicted]`.
    public private(set) var counts: [[Int]]

    /// An empty matrix for `classCount` classes.
    public init(classCount: Int) {
        self.classCount = max(classCount, 0)
        counts = Array(repeating: Array(repeating: 0, count: self.classCount), count: self.classCount)
    }

    /// Adds a batch: each row's prediction is its largest output (the first, on ties).
    ///
    ///     // predictions: (batch, classCount)  labels: (batch)
    ///
    /// Labels outside `0..<classCount` are an internal invariant of a dataset, not user input.
    public mutating func add<Scalar: TensorScalar>(predictions: Tensor<Scalar>, labels: some Collection<Int>) {
        precondition(predictions.columns == classCount && predictions.rows == labels.count, "predictions and labels do not fit the matrix")
        for (n, actual) in labels.enumerated() {
            counts[actual][Self.argmax(predictions, row: n)] += 1
        }
    }

    /// How many rows' largest entry is at their label.
    @_specialize(exported: true, where Scalar == Float)
    @_specialize(exported: true, where Scalar == Double)
    @_specialize(where Scalar == Float)
    @_specialize(where Scalar == Double)
    public static func correctCount<Scalar: TensorScalar>(_ predictions: Tensor<Scalar>, labels: [Int]) -> Int {
        var correct = 0
        for (n, label) in labels.enumerated() where argmax(predictions, row: n) == label { correct += 1 }
        return correct
    }

    /// The index of the largest entry of `row` (the first, on ties).
    @_specialize(exported: true, where Scalar == Float)
    @_specialize(exported: true, where Scalar == Double)
    @_specialize(where Scalar == Float)
    @_specialize(where Scalar == Double)
    public static func argmax<Scalar: TensorScalar>(_ predictions: Tensor<Scalar>, row: Int) -> Int {
        let columns = predictions.columns
        var best = 0
        var bestValue = predictions[row * columns]
        for j in 1 ..< max(columns, 1) where predictions[row * columns + j] > bestValue {
            best = j
            bestValue = predictions[row * columns + j]
        }
        return best
    }

    /// Samples counted.
    public var total: Int { counts.reduce(0) { $0 + $1.reduce(0, +) } }
    /// Samples on the diagonal.
    public var correct: Int { (0..<classCount).reduce(0) { $0 + counts[$1][$1] } }
    /// `correct / total`, and 0 before any sample.
    public var accuracy: Double { total == 0 ? 0 : Double(correct) / Double(total) }

    /// Rows are actual classes, columns predicted ones.
    public var description: String { table(classNames: nil) }

    /// The matrix as a table, rows actual and columns predicted, labelled with `classNames` when given.
    public func table(classNames: [String]?) -> String {
        let names = classNames ?? (0..<classCount).map(String.init)
        let width = max(6, (names.map(\.count).max() ?? 0), String(total).count) + 1
        func cell(_ s: String) -> String { String(repeating: " ", count: max(0, width - s.count)) + s }
        var lines = [cell("actual\\") + names.map(cell).joined()]
        for (i, row) in counts.enumerated() {
            lines.append(cell(names[i]) + row.map { cell(String($0)) }.joined())
        }
        return lines.joined(separator: "\n")
    }
}

// MARK: - Summaries for displays

extension Network {
    /// ‖·‖₂ of one parameter tensor's values, summed in Double.
    public func parameterNorm(_ tensor: ParameterTensor) -> Double {
        parameters.withUnsafeBufferPointer { Self.norm(UnsafeBufferPointer(rebasing: $0[tensor.range])) }
    }

    /// ‖·‖₂ of one parameter tensor's gradient from the last backward pass, summed in Double.
    public func gradientNorm(_ tensor: ParameterTensor) -> Double {
        gradients.withUnsafeBufferPointer { Self.norm(UnsafeBufferPointer(rebasing: $0[tensor.range])) }
    }

    @_specialize(exported: true, where Scalar == Float)
    @_specialize(exported: true, where Scalar == Double)
    @_specialize(where Scalar == Float)
    @_specialize(where Scalar == Double)
    static func norm(_ values: UnsafeBufferPointer<Scalar>) -> Double {
        var sum = 0.0
        for v in values { sum += Double(v) * Double(v) }
        return sum.squareRoot()
    }
}

extension Tensor {
    /// The share of entries with `|x| > threshold` (for a tanh layer's output with 0.99: its
    /// saturated units, whose gradient has all but vanished); 0 for an empty tensor.
    @_specialize(exported: true, where Scalar == Float)
    @_specialize(exported: true, where Scalar == Double)
    @_specialize(where Scalar == Float)
    @_specialize(where Scalar == Double)
    public func shareOfMagnitudes(above threshold: Scalar) -> Double {
        guard count > 0 else { return 0 }
        var above = 0
        for x in scalars where abs(x) > threshold { above += 1 }
        return Double(above) / Double(count)
    }

    /// Whether any entry is NaN or infinite.
    @_specialize(exported: true, where Scalar == Float)
    @_specialize(exported: true, where Scalar == Double)
    @_specialize(where Scalar == Float)
    @_specialize(where Scalar == Double)
    public func containsNonFinite() -> Bool {
        scalars.contains { !$0.isFinite }
    }
}
