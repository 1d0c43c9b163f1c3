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
    public static func correctCount<Scalar: TensorScalar>(_ predictions: Tensor<Scalar>, labels: [Int]) -> Int {
        var correct = 0
        for (n, label) in labels.enumerated() where argmax(predictions, row: n) == label { correct += 1 }
        return correct
    }

    /// The index of the largest entry of `row` (the first, on ties).
    public static func argmax<Scalar: TensorScalar>(_ predictions: Tensor<Scalar>, row: Int) -> Int {
        let columns = predictions.columns
        return predictions.withUnsafeBufferPointer { p in
            Kernels.argmax(UnsafeBufferPointer(rebasing: p[row * columns..<(row + 1) * columns]))
        }
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

/// One layer's health, for displays: how large its weights and their gradients are, and how
/// many of its units are saturated.
public struct LayerStatistics: Sendable, Equatable, Codable {
    /// The layer's index in the network.
    public var index: Int
    /// `Dense(784→256, tanh)`.
    public var title: String
    /// ‖weight‖₂ (0 for a layer without weights).
    public var weightNorm: Double
    /// ‖∂loss/∂weight‖₂ from the last backward pass.
    public var gradientNorm: Double
    /// For a tanh layer, the share of the last output's entries with |y| > 0.99, whose gradient
    /// has all but vanished; nil for other layers or before any forward pass.
    public var saturation: Double?
    /// For a relu layer, the share of the last output's entries that are 0, whose gradient is 0
    /// (units that stay there for every sample are dead); nil for other layers.
    public var deadShare: Double?
    /// For a batch normalization, the mean over its channels of the running mean and of the
    /// running variance; nil for other layers.
    public var runningMean: Double?, runningVariance: Double?

    /// Statistics from their parts.
    public init(
        index: Int, title: String, weightNorm: Double, gradientNorm: Double, saturation: Double?, deadShare: Double? = nil,
        runningMean: Double? = nil, runningVariance: Double? = nil
    ) {
        (self.index, self.title, self.weightNorm, self.gradientNorm, self.saturation) = (index, title, weightNorm, gradientNorm, saturation)
        (self.deadShare, self.runningMean, self.runningVariance) = (deadShare, runningMean, runningVariance)
    }
}

extension Network {
    /// ‖·‖₂ of one parameter tensor's values, summed in Double.
    public func parameterNorm(_ tensor: ParameterTensor) -> Double {
        parameters.withUnsafeBufferPointer { Kernels.sumOfSquares(UnsafeBufferPointer(rebasing: $0[tensor.range])).squareRoot() }
    }

    /// ‖·‖₂ of one parameter tensor's gradient from the last backward pass, summed in Double.
    public func gradientNorm(_ tensor: ParameterTensor) -> Double {
        gradients.withUnsafeBufferPointer { Kernels.sumOfSquares(UnsafeBufferPointer(rebasing: $0[tensor.range])).squareRoot() }
    }

    /// Each layer's ``LayerStatistics``.
    public func layerStatistics() -> [LayerStatistics] {
        layers.enumerated().map { i, layer in
            // A layer's weights: its own (a recurrent layer's `weight_ih_l0` and `weight_hh_l0`), or, in a
            // container, every weight inside it (`body.0.weight`, …).
            let weights = parameterTensors.filter { $0.layer == i && $0.tensor.split(separator: ".").last!.hasPrefix("weight") }
            func norm(_ one: (ParameterTensor) -> Double) -> Double {
                weights.count == 1 ? one(weights[0]) : weights.reduce(0.0) { $0 + one($1) * one($1) }.squareRoot()
            }
            let activation = (layer as? any ActivatedLayer)?.activation
            let hasOutput = layer.output.count > 0
            // A batch normalization's running statistics: its state tensors, averaged over channels.
            func channelMean(_ name: String) -> Double? {
                guard let tensor = stateTensors.first(where: { $0.layer == i && $0.tensor == name }), tensor.count > 0 else { return nil }
                return state[tensor.range].reduce(0.0) { $0 + Double($1) } / Double(tensor.count)
            }
            return LayerStatistics(
                index: i, title: layer.description,
                weightNorm: norm(parameterNorm), gradientNorm: norm(gradientNorm),
                saturation: activation == .tanh && hasOutput ? layer.output.shareOfMagnitudes(above: 0.99) : nil,
                deadShare: activation == .relu && hasOutput ? 1 - layer.output.shareOfMagnitudes(above: 0) : nil,
                runningMean: channelMean("running_mean"), runningVariance: channelMean("running_var"))
        }
    }

    /// Where a NaN or infinity first shows: the first layer whose output holds one
    /// (`layers.1 output`), else the first parameter tensor, else `loss`.
    public func divergenceLocation() -> String {
        for (i, layer) in layers.enumerated() where layer.output.containsNonFinite() {
            return "layers.\(i) output"
        }
        for tensor in parameterTensors where !parameterNorm(tensor).isFinite {
            return tensor.name
        }
        return "loss"
    }
}

extension Tensor {
    /// The share of entries with `|x| > threshold`; 0 for an empty tensor. Past 65,536 entries it
    /// is estimated from 64 runs of 1,024 spread evenly over the tensor (across the batch): the
    /// statistic rides on every snapshot, 20 a second, and counting a conv layer's whole output
    /// each time cost 4% of a CNN's training.
    public func shareOfMagnitudes(above threshold: Scalar) -> Double {
        guard count > 0 else { return 0 }
        let runs = 64, run = 1_024
        return withUnsafeBufferPointer { x in
            guard x.count > runs * run else { return Double(Kernels.countMagnitudes(x, above: threshold)) / Double(x.count) }
            var above = 0
            for k in 0..<runs {
                let start = k * (x.count - run) / (runs - 1)
                above += Kernels.countMagnitudes(UnsafeBufferPointer(rebasing: x[start..<start + run]), above: threshold)
            }
            return Double(above) / Double(runs * run)
        }
    }

    /// Whether any entry is NaN or infinite.
    public func containsNonFinite() -> Bool {
        withUnsafeBufferPointer { Kernels.containsNonFinite($0) }
    }
}
