// The whole-network gradient check: every parameter entry (or a seeded sample per tensor) and,
// on request, every input, nudged one at a time in Double; the analytic gradient from backward
// beside the faux one from finite differences, judged as PyTorch's gradcheck judges it.

/// How to check a network's gradients. Defaults are PyTorch gradcheck's, meant for Double:
/// central differences with eps 1e-6, atol 1e-5, rtol 1e-3.
public struct GradientCheck: Sendable, Equatable {
    /// The finite-difference rule; Docs/Reference.md §2's forward difference with tiny 1e-4 stays available.
    public var difference: FiniteDifference<Double>
    /// An entry passes when `|analytic - faux| <= absoluteTolerance + relativeTolerance * |faux|`.
    public var absoluteTolerance: Double
    /// See ``absoluteTolerance``.
    public var relativeTolerance: Double
    /// Check only this many entries per tensor, drawn from ``seed`` (nil: every entry).
    public var samplesPerTensor: Int?
    /// Also check the gradient with respect to the inputs.
    public var checkInputs: Bool
    /// The seed of the sampled entries.
    public var seed: UInt64
    /// How many of the worst entries the report names.
    public var worstCount: Int

    /// A gradient check.
    /// - Throws: ``NeuronError/invalidHyperparameter(name:value:allowed:)`` for a negative
    ///   tolerance, a sample count below 1 or a worst count below 1.
    public init(
        difference: FiniteDifference<Double>? = nil,
        absoluteTolerance: Double = 1e-5, relativeTolerance: Double = 1e-3,
        samplesPerTensor: Int? = nil, checkInputs: Bool = false, seed: UInt64 = 0, worstCount: Int = 5
    ) throws(NeuronError) {
        guard absoluteTolerance >= 0, absoluteTolerance.isFinite else {
            throw .invalidHyperparameter(name: "atol", value: "\(absoluteTolerance)", allowed: "a finite number ≥ 0")
        }
        guard relativeTolerance >= 0, relativeTolerance.isFinite else {
            throw .invalidHyperparameter(name: "rtol", value: "\(relativeTolerance)", allowed: "a finite number ≥ 0")
        }
        if let samplesPerTensor, samplesPerTensor < 1 {
            throw .invalidHyperparameter(name: "samples per tensor", value: "\(samplesPerTensor)", allowed: "at least 1")
        }
        guard worstCount >= 1 else {
            throw .invalidHyperparameter(name: "worst count", value: "\(worstCount)", allowed: "at least 1")
        }
        if let difference { self.difference = difference } else { self.difference = try FiniteDifference(.central, tiny: 1e-6) }
        self.absoluteTolerance = absoluteTolerance
        self.relativeTolerance = relativeTolerance
        self.samplesPerTensor = samplesPerTensor
        self.checkInputs = checkInputs
        self.seed = seed
        self.worstCount = worstCount
    }

    /// Checks `network`'s gradients on one batch. A Float network is checked on a Double copy
    /// (finite differences in Float cannot resolve 1e-5); the network itself is left untouched.
    ///
    ///     // x: (batch, featureCount)  targets: (batch, targetCount)
    ///
    /// - Throws: ``NetworkError/shapeMismatch(_:)`` when the batch does not fit the network,
    ///   ``NetworkError/invalidValue(_:)`` for a token or class index out of range, and
    ///   ``NetworkError/invalidLayer(_:reason:)`` when ``checkInputs`` is set for a network that
    ///   reads token indices (``TokenInput``), which have no gradient to check.
    public func run<Scalar: TensorScalar>(
        on network: Network<Scalar>, inputs x: Tensor<Scalar>, targets: Tensor<Scalar>
    ) throws(NetworkError) -> GradientCheckReport {
        if checkInputs, network.tokenVocabulary != nil {
            throw .invalidLayer(
                "layer 0 \(network.layers[0])",
                reason: "it reads token indices, which have no gradient: check its parameters only (checkInputs false)")
        }
        var net = network.converted(to: Double.self)
        let x = x.converted(to: Double.self), t = targets.converted(to: Double.self)
        // Every nudged loss is the training-mode loss of the same pass backward differentiated:
        // batch statistics, the same dropout masks (the noise step held) and the running
        // statistics as they were before it.
        let noiseStep = net.noiseStep, state = net.state
        try net.lossAndGradients(x, targets: t, inputGradient: checkInputs)
        func trainingLoss(_ x: Tensor<Double>) throws(NetworkError) -> Double {
            net.noiseStep = noiseStep
            net.state = state
            return try net.loss(x, targets: t, mode: .training)
        }
        let analytic = net.gradients
        let analyticInput = net.inputGradient
        var generator = SeededGenerator(seed: seed)

        var results: [GradientCheckReport.TensorResult] = []
        var entries: [GradientCheckReport.Entry] = []
        for tensor in net.parameterTensors {
            let chosen = sample(tensor.count, using: &generator)
            var tensorEntries: [GradientCheckReport.Entry] = []
            for local in chosen {
                let i = tensor.offset + local
                let original = net.parameters[i]
                let faux = try difference.derivative { (delta) throws(NetworkError) -> Double in
                    net.parameters[i] = original + delta
                    return try trainingLoss(x)
                }
                net.parameters[i] = original
                tensorEntries.append(
                    entry(
                        tensor.name, layer: tensor.layer, tensor: tensor.tensor, shape: tensor.shape,
                        index: local, analytic: analytic[i], faux: faux))
            }
            var result = summary(
                tensor.name, layer: tensor.layer, tensor: tensor.tensor, shape: tensor.shape,
                total: tensor.count, entries: tensorEntries)
            result.pytorchOrder = tensor.pytorchOrder
            results.append(result)
            entries += tensorEntries
        }
        if checkInputs {
            var nudged = x
            var inputEntries: [GradientCheckReport.Entry] = []
            for i in sample(x.count, using: &generator) {
                let original = x[i]
                let faux = try difference.derivative { (delta) throws(NetworkError) -> Double in
                    nudged[i] = original + delta
                    return try trainingLoss(nudged)
                }
                nudged[i] = original
                inputEntries.append(
                    entry(
                        "input", layer: nil, tensor: "input", shape: x.shape,
                        index: i, analytic: analyticInput[i], faux: faux))
            }
            results.append(summary("input", layer: nil, tensor: "input", shape: x.shape, total: x.count, entries: inputEntries))
            entries += inputEntries
        }
        let worst = entries.sorted { $0.severity > $1.severity }.prefix(worstCount)
        return GradientCheckReport(
            network: network.description, method: difference.method.rawValue, eps: difference.tiny,
            absoluteTolerance: absoluteTolerance, relativeTolerance: relativeTolerance,
            tensors: results, worst: Array(worst))
    }

    /// Which entries of a tensor of `count` entries to check: all, or a seeded sample in index order.
    private func sample(_ count: Int, using generator: inout SeededGenerator) -> [Int] {
        guard let n = samplesPerTensor, n < count else { return Array(0..<count) }
        var indices = Array(0..<count)
        for k in 0..<n { indices.swapAt(k, k + generator.index(below: count - k)) }  // a partial Fisher–Yates
        return indices.prefix(n).sorted()
    }

    private func entry(
        _ name: String, layer: Int?, tensor: String, shape: [Int], index: Int, analytic: Double, faux: Double
    ) -> GradientCheckReport.Entry {
        let c = GradientComparison(analytic: analytic, faux: faux)
        let allowed = absoluteTolerance + relativeTolerance * abs(faux)
        return GradientCheckReport.Entry(
            name: name, layer: layer, tensor: tensor, index: index, position: Self.position(of: index, in: shape),
            analytic: analytic, faux: faux, absoluteError: c.absoluteError, relativeError: c.relativeError,
            passed: c.absoluteError <= allowed, severity: allowed > 0 ? c.absoluteError / allowed : (c.absoluteError > 0 ? .infinity : 0))
    }

    private func summary(
        _ name: String, layer: Int?, tensor: String, shape: [Int], total: Int, entries: [GradientCheckReport.Entry]
    ) -> GradientCheckReport.TensorResult {
        GradientCheckReport.TensorResult(
            name: name, layer: layer, tensor: tensor, shape: shape, checked: entries.count, total: total,
            maxAbsoluteError: entries.map(\.absoluteError).max() ?? 0,
            maxRelativeError: entries.map(\.relativeError).max() ?? 0,
            failures: entries.filter { !$0.passed }.count)
    }

    /// The row-major multi-index of flat `index` in `shape`, e.g. 5 in (2, 3) is [1, 2].
    static func position(of index: Int, in shape: [Int]) -> [Int] {
        var rest = index
        var position = Array(repeating: 0, count: shape.count)
        for d in shape.indices.reversed() where shape[d] > 0 {
            position[d] = rest % shape[d]
            rest /= shape[d]
        }
        return position
    }
}

/// What a gradient check found: per tensor the worst errors, and the worst entries by name.
public struct GradientCheckReport: Sendable, Equatable, Codable, CustomStringConvertible {
    /// One checked entry.
    public struct Entry: Sendable, Equatable, Codable {
        /// `layers.1.bias` or `input`.
        public var name: String
        /// The layer's index; nil for the input.
        public var layer: Int?
        /// `weight`, `bias` or `input`.
        public var tensor: String
        /// The flat index within the tensor.
        public var index: Int
        /// The same index per dimension.
        public var position: [Int]
        /// From backward.
        public var analytic: Double
        /// From finite differences.
        public var faux: Double
        /// `|analytic - faux|`.
        public var absoluteError: Double
        /// `|analytic - faux| / max(|analytic|, |faux|)`.
        public var relativeError: Double
        /// `absoluteError <= atol + rtol * |faux|`.
        public var passed: Bool
        /// `absoluteError / (atol + rtol * |faux|)`: above 1 fails; the report's order.
        public var severity: Double
    }

    /// One tensor's summary.
    public struct TensorResult: Sendable, Equatable, Codable {
        /// `layers.1.bias` or `input`.
        public var name: String
        /// The layer's index (nil for the input).
        public var layer: Int?
        /// `weight`, `bias` or `input`.
        public var tensor: String
        /// The tensor's shape.
        public var shape: [Int]
        /// The order of its dimensions in PyTorch's module (``ParameterTensor/pytorchOrder``).
        public var pytorchOrder: [Int]? = nil
        /// Entries checked (all, or a sample).
        public var checked: Int
        /// Entries in the tensor.
        public var total: Int
        /// The largest `|analytic - faux|` over the checked entries.
        public var maxAbsoluteError: Double
        /// The largest `|analytic - faux| / max(|analytic|, |faux|)` over the checked entries.
        public var maxRelativeError: Double
        /// Entries outside the tolerance.
        public var failures: Int
        /// Whether every checked entry is within tolerance.
        public var passed: Bool { failures == 0 }
    }

    /// The network checked, e.g. `Network[Dense(2→4, tanh), Dense(4→1, tanh)]`.
    public var network: String
    /// `central` or `forward`.
    public var method: String
    /// The finite-difference step.
    public var eps: Double
    /// The pass rule's `atol`.
    public var absoluteTolerance: Double
    /// The pass rule's `rtol`.
    public var relativeTolerance: Double
    /// Per tensor, in buffer order (then the input, when checked).
    public var tensors: [TensorResult]
    /// The worst entries, most severe first.
    public var worst: [Entry]

    /// Whether every checked entry is within tolerance.
    public var passed: Bool { tensors.allSatisfy(\.passed) }
    /// The largest relative error over every checked entry.
    public var maxRelativeError: Double { tensors.map(\.maxRelativeError).max() ?? 0 }
    /// The largest absolute error over every checked entry.
    public var maxAbsoluteError: Double { tensors.map(\.maxAbsoluteError).max() ?? 0 }
    /// The tensors with at least one entry out of tolerance.
    public var failingTensors: [TensorResult] { tensors.filter { !$0.passed } }

    /// A table per tensor, then the worst entries by name, then PASS or FAIL.
    public var description: String {
        var lines = [
            "Gradient check of \(network): \(method) differences, eps \(eps), pass when |a - n| <= \(absoluteTolerance) + \(relativeTolerance)·|n|"
        ]
        lines += paddedRows(
            [["tensor", "shape", "checked", "max abs error", "max rel error", "result"]]
                + tensors.map { t in
                    [
                        t.name, TensorError.format(t.shape), "\(t.checked)/\(t.total)", "\(t.maxAbsoluteError)", "\(t.maxRelativeError)",
                        t.passed ? "ok" : "FAIL (\(t.failures))",
                    ]
                })
        lines.append("Worst entries:")
        lines += paddedRows(
            [["entry", "analytic", "faux", "abs error", "rel error", ""]]
                + worst.map { e in
                    [
                        "\(e.name)[\(e.position.map(String.init).joined(separator: ", "))]", "\(e.analytic)", "\(e.faux)",
                        "\(e.absoluteError)", "\(e.relativeError)", e.passed ? "ok" : "FAIL",
                    ]
                })
        lines.append(passed ? "PASS" : "FAIL: \(failingTensors.map(\.name).joined(separator: ", "))")
        return lines.joined(separator: "\n")
    }
}

extension Tensor {
    /// The same shape and values in another precision.
    public func converted<Other: TensorScalar>(to: Other.Type) -> Tensor<Other> {
        try! Tensor<Other>(shape: shape, scalars: scalars.map { Other($0) })  // same shape, same count
    }
}
