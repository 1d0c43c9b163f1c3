// The table a learner would draw for one neuron: forward quantities, local gradients, global
// gradients, faux gradients and how far apart they are; optionally after training it first.

/// Everything about one neuron on one sample, computed once, ready to print as a table or JSON.
public struct NeuronExplanation<Scalar: TensorScalar>: Sendable {
    /// How the neuron was trained before being explained.
    public struct Training: Sendable {
        /// Gradient-descent steps taken.
        public var iterations: Int
        /// The learning rate of every step.
        public var learningRate: Scalar
        /// The neuron before training.
        public var initial: Neuron<Scalar>
        /// The loss before training.
        public var initialLoss: Scalar
    }

    /// The neuron explained (the trained one, when ``training`` is set).
    public var neuron: Neuron<Scalar>
    /// Its forward pass on the sample.
    public var forward: Neuron<Scalar>.Forward
    /// Its local gradients.
    public var local: Neuron<Scalar>.LocalGradients
    /// Its gradients by the chain rule.
    public var gradients: Neuron<Scalar>.Gradients
    /// Its gradients by finite differences.
    public var faux: Neuron<Scalar>.Gradients
    /// The finite-difference rule behind ``faux``.
    public var difference: FiniteDifference<Scalar>
    /// How the neuron was trained first, if it was.
    public var training: Training?

    /// Explains `neuron` on one sample, after training it first when `learningRate` and `iterations` are given.
    /// - Throws: ``NeuronError`` for mismatched input and weight counts or a hyperparameter out of range.
    public init(
        neuron: Neuron<Scalar>, inputs: [Scalar], target: Scalar,
        difference: FiniteDifference<Scalar> = .reference,
        train: (learningRate: Scalar, iterations: Int)? = nil
    ) throws(NeuronError) {
        var neuron = neuron
        if let train {
            let initialLoss = try neuron.forward(inputs: inputs, target: target).loss
            let initial = neuron
            try neuron.train(inputs: inputs, target: target, learningRate: train.learningRate, iterations: train.iterations)
            training = Training(iterations: train.iterations, learningRate: train.learningRate, initial: initial, initialLoss: initialLoss)
        } else {
            training = nil
        }
        self.neuron = neuron
        self.difference = difference
        forward = try neuron.forward(inputs: inputs, target: target)
        local = neuron.localGradients(forward)
        gradients = neuron.backward(forward)
        faux = try neuron.fauxGradients(inputs: inputs, target: target, difference: difference)
    }

    /// The absolute tolerance of ``agrees``: what the rule itself gets wrong on a loss whose
    /// derivatives are about 1, its truncation (forward `tiny`, central `tiny²`, five-point `tiny⁴`)
    /// plus rounding (`ε / tiny`). At a minimum (a trained neuron) every true gradient is about 0
    /// and a forward difference's faux gradient is its own truncation, `tiny·L''/2`: a relative error
    /// near 1 that means nothing, which this floor absorbs.
    public var absoluteTolerance: Scalar {
        let tiny = difference.tiny
        let truncation: Scalar
        switch difference.method {
        case .forward: truncation = tiny
        case .central: truncation = tiny * tiny
        case .fivePoint: truncation = tiny * tiny * tiny * tiny
        }
        return truncation + Scalar.ulpOfOne / tiny
    }

    /// The relative tolerance of ``agrees``: PyTorch gradcheck's 1e-3.
    public static var relativeTolerance: Scalar { Scalar(1e-3) }

    /// Whether each analytic gradient agrees with its faux one, as gradcheck judges it:
    /// `|analytic - faux| <= absoluteTolerance + relativeTolerance·|faux|`; in ``comparisons``' order.
    public var agrees: [Bool] {
        comparisons.map { $0.comparison.agrees(absoluteTolerance: absoluteTolerance, relativeTolerance: Self.relativeTolerance) }
    }

    /// Each analytic gradient beside its faux one, in the table's order.
    public var comparisons: [(quantity: Neuron<Scalar>.Quantity, comparison: GradientComparison<Scalar>)] {
        gradients.compared(with: faux)
    }
}

// MARK: - JSON

extension NeuronExplanation: Encodable {
    private enum Key: String, CodingKey {
        case neuron, net, output, error, loss, local, gradients, faux, difference
        case absoluteError, relativeError, iterations, learningRate, initial, trained
        case input, weight, bias, target, method, tiny
        case agrees, tolerance, absolute, relative
    }

    /// The keys of Docs/Reference.md §1–2 and of `neuron explain --json`: `net`, `output`, `error`, `loss`,
    /// `local`, `gradients`, `faux` (and `absoluteError`, `relativeError` and the verdict `agrees` with
    /// the same keys, judged with `tolerance`'s `absolute` and `relative`);
    /// after training also `iterations`, `learningRate`, `initial` and `trained`. Weights and
    /// inputs are numbers for a single-input neuron and arrays for n inputs.
    public func encode(to encoder: Encoder) throws {
        var root = encoder.container(keyedBy: Key.self)
        var sample = root.nestedContainer(keyedBy: Key.self, forKey: .neuron)
        try encodeVector(forward.inputs, .input, in: &sample)
        try encodeVector(neuron.weights, .weight, in: &sample)
        try sample.encode(neuron.bias, forKey: .bias)
        try sample.encode(forward.target, forKey: .target)

        try root.encode(forward.net, forKey: .net)
        try root.encode(forward.output, forKey: .output)
        try root.encode(forward.error, forKey: .error)
        try root.encode(forward.loss, forKey: .loss)

        var localContainer = root.nestedContainer(keyedBy: Key.self, forKey: .local)
        try encodeVector(local.input, .input, in: &localContainer)
        try encodeVector(local.weight, .weight, in: &localContainer)
        try localContainer.encode(local.bias, forKey: .bias)
        try localContainer.encode(local.net, forKey: .net)

        let comparisons = self.comparisons.map(\.comparison)
        try encodeGradients(gradients, forKey: .gradients, in: &root)
        try encodeGradients(faux, forKey: .faux, in: &root)
        try encodeGradients(gradients.mapped(comparisons.map(\.absoluteError)), forKey: .absoluteError, in: &root)
        try encodeGradients(gradients.mapped(comparisons.map(\.relativeError)), forKey: .relativeError, in: &root)
        let verdicts = agrees
        var agreesContainer = root.nestedContainer(keyedBy: Key.self, forKey: .agrees)
        try agreesContainer.encode(verdicts[0], forKey: .output)
        try agreesContainer.encode(verdicts[1], forKey: .net)
        try agreesContainer.encode(verdicts[2], forKey: .bias)
        let n = neuron.inputCount
        let (weightVerdicts, inputVerdicts) = (Array(verdicts[3..<3 + n]), Array(verdicts[(3 + n)...]))
        if n == 1 {
            try agreesContainer.encode(weightVerdicts[0], forKey: .weight)
            try agreesContainer.encode(inputVerdicts[0], forKey: .input)
        } else {
            try agreesContainer.encode(weightVerdicts, forKey: .weight)
            try agreesContainer.encode(inputVerdicts, forKey: .input)
        }
        var toleranceContainer = root.nestedContainer(keyedBy: Key.self, forKey: .tolerance)
        try toleranceContainer.encode(absoluteTolerance, forKey: .absolute)
        try toleranceContainer.encode(Self.relativeTolerance, forKey: .relative)

        var differenceContainer = root.nestedContainer(keyedBy: Key.self, forKey: .difference)
        try differenceContainer.encode(difference.method, forKey: .method)
        try differenceContainer.encode(difference.tiny, forKey: .tiny)

        if let training {
            try root.encode(training.iterations, forKey: .iterations)
            try root.encode(training.learningRate, forKey: .learningRate)
            var initial = root.nestedContainer(keyedBy: Key.self, forKey: .initial)
            try encodeVector(training.initial.weights, .weight, in: &initial)
            try initial.encode(training.initial.bias, forKey: .bias)
            try initial.encode(training.initialLoss, forKey: .loss)
            var trained = root.nestedContainer(keyedBy: Key.self, forKey: .trained)
            try encodeVector(neuron.weights, .weight, in: &trained)
            try trained.encode(neuron.bias, forKey: .bias)
            try trained.encode(forward.output, forKey: .output)
            try trained.encode(forward.loss, forKey: .loss)
        }
    }

    private func encodeGradients(_ g: Neuron<Scalar>.Gradients, forKey key: Key, in root: inout KeyedEncodingContainer<Key>) throws {
        var container = root.nestedContainer(keyedBy: Key.self, forKey: key)
        try container.encode(g.output, forKey: .output)
        try container.encode(g.net, forKey: .net)
        try container.encode(g.bias, forKey: .bias)
        try encodeVector(g.weights, .weight, in: &container)
        try encodeVector(g.inputs, .input, in: &container)
    }

    /// A number for a single-input neuron, an array for n inputs.
    private func encodeVector(_ values: [Scalar], _ key: Key, in container: inout KeyedEncodingContainer<Key>) throws {
        if values.count == 1 { try container.encode(values[0], forKey: key) } else { try container.encode(values, forKey: key) }
    }
}

private extension Neuron.Gradients {
    /// The same layout filled from values in ``entries`` order.
    func mapped(_ values: [Scalar]) -> Neuron.Gradients {
        let n = weights.count
        return Neuron.Gradients(
            output: values[0], net: values[1], bias: values[2],
            weights: Array(values[3..<3 + n]), inputs: Array(values[(3 + n)...]))
    }
}

// MARK: - Text table

extension NeuronExplanation {
    /// The table a learner would draw, as plain text with aligned columns.
    public var table: String {
        let n = neuron.inputCount
        let x = n == 1 ? "x" : "xᵢ", w = n == 1 ? "w" : "wᵢ"
        var lines: [String] = []
        if let training {
            lines.append("Trained by gradient descent: \(training.iterations) iterations at learning rate \(training.learningRate)")
            lines += paddedRows([
                ["", "before", "after"],
                ["weight", Self.list(training.initial.weights), Self.list(neuron.weights)],
                ["bias", "\(training.initial.bias)", "\(neuron.bias)"],
                ["loss", "\(training.initialLoss)", "\(forward.loss)"],
            ])
            lines.append("")
        }
        lines.append(
            "\(neuron)   inputs \(Self.list(forward.inputs))   weights \(Self.list(neuron.weights))   bias \(neuron.bias)   target \(forward.target)")
        lines.append("")
        lines.append("Forward")
        lines += paddedRows([
            ["net", n == 1 ? "x·w + b" : "Σ xᵢ·wᵢ + b", "\(forward.net)"],
            ["output", "tanh(net)", "\(forward.output)"],
            ["error", "output - target", "\(forward.error)"],
            ["loss", "error² / 2", "\(forward.loss)"],
        ])
        lines.append("")
        lines.append("Local gradients")
        lines += paddedRows([
            ["input", "∂net/∂\(x) = \(w)", Self.list(local.input)],
            ["weight", "∂net/∂\(w) = \(x)", Self.list(local.weight)],
            ["bias", "∂net/∂b = 1", "\(local.bias)"],
            ["net", "∂output/∂net = 1 - output²", "\(local.net)"],
            ["output", "∂error/∂output = 1; ∂loss/∂error = error", "\(local.output); \(local.error)"],
        ])
        lines.append("")
        lines.append("Global gradients (chain rule) and faux gradients (\(difference))")
        var table = [["quantity", "∂loss/∂quantity", "faux", "abs error", "rel error", "agrees"]]
        for ((quantity, c), agrees) in zip(comparisons, agrees) {
            table.append(["\(quantity)", "\(c.analytic)", "\(c.faux)", "\(c.absoluteError)", "\(c.relativeError)", agrees ? "yes" : "NO"])
        }
        lines += paddedRows(table)
        lines.append("")
        lines.append("rel error is |∂ - faux| / max(|∂|, |faux|). Where every gradient is about 0 (a trained neuron) the faux")
        lines.append("gradient is the difference's own error, tiny·L''/2 for a forward one, and rel error is near 1 without")
        lines.append("meaning anything. agrees: |∂ - faux| <= atol + rtol·|faux| (gradcheck's rule), with rtol \(Self.relativeTolerance) and")
        lines.append("atol \(absoluteTolerance): the rule's own error at this tiny (truncation plus rounding ε/tiny).")
        return lines.joined(separator: "\n")
    }

    private static func list(_ values: [Scalar]) -> String {
        values.count == 1 ? "\(values[0])" : "[" + values.map { "\($0)" }.joined(separator: ", ") + "]"
    }
}
