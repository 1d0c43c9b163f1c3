// The neuron's table (Docs/Reference.md §1–2) for any unit of a dense layer in a network: the unit
// is a neuron whose inputs are the layer's inputs for one sample, whose weights are its column of
// the layer's weight matrix, and whose output gradient flows back from the network's loss. Computed
// in Double whatever the network's precision, so that the faux gradients mean what they say. A unit
// of a layer over a sequence is the same neuron at one position (`SequenceUnitExplanation.swift`).

/// One unit of a dense layer explained on one sample: forward quantities, local gradients, the
/// global gradients from the loss by the chain rule, faux gradients by finite differences, and
/// the network's own backward pass beside them. A unit of a per-position dense layer or of an RNN
/// is explained at one position of the sample (``position``); see
/// ``init(network:sample:target:layer:unit:position:difference:)``.
///
/// The faux gradients nudge one quantity and recompute everything downstream through the
/// network's own forward pass: a weight or the bias is nudged in the parameters; the net like the
/// bias (`net = Σ xⱼ·wⱼ + b`); an input xⱼ as this unit sees it (its net moves by `tiny·wⱼ`); the
/// output as the next dense layer sees it (each of its nets moves by `tiny·wᵤₖ`) or, for an output
/// unit under half the squared error, as the loss sees it (the target moved by `-tiny`).
public struct UnitExplanation: Sendable, Equatable {
    /// ∂loss/∂quantity for each quantity of the unit, from one method.
    public struct Gradients: Sendable, Equatable {
        /// ∂L/∂output; nil where it cannot be taken alone (a softmax output depends on every logit).
        public var output: Double?
        /// ∂L/∂net.
        public var net: Double
        /// ∂L/∂b.
        public var bias: Double
        /// ∂L/∂wⱼ, one per input.
        public var weights: [Double]
        /// ∂L/∂xⱼ through this unit alone (the input's whole gradient sums this over the layer's units).
        public var inputs: [Double]
    }

    /// The network's own backward pass at one position: its ∂L/∂net there (a dense layer's `dz`, an
    /// RNN's `da`) and that times each weight's operand there, the share of each parameter's
    /// gradient this position adds (the gradient buffer sums the shares of every position).
    public struct PositionShare: Sendable, Equatable {
        /// ∂L/∂net at the position.
        public var net: Double
        /// Each weight's share: its operand at the position times ``net``.
        public var weights: [Double]
        /// Each bias term's share: ``net``.
        public var bias: Double
    }

    /// The layer's index in the network, and the unit's in the layer.
    public var layer: Int, unit: Int
    /// `Dense(784→256, tanh)`.
    public var layerTitle: String
    /// The layer's activation (an RNN's tanh).
    public var activation: Activation
    /// Whether the unit is one of the network's outputs.
    public var isOutput: Bool
    /// xⱼ: the layer's inputs for the sample (at the position; an RNN's `x_P` then `h_{P-1}`).
    public var inputs: [Double]
    /// wⱼ: the unit's column of the layer's weights (an RNN's row of `weight_ih_l0` then of `weight_hh_l0`).
    public var weights: [Double]
    /// b (an RNN's `b_ih + b_hh`).
    public var bias: Double
    /// The unit's target, for an output unit.
    public var target: Double?
    /// `Σ xⱼ·wⱼ + b` (a softmax layer's logit).
    public var net: Double
    /// `f(net)` (for a softmax layer, the unit's probability).
    public var output: Double
    /// The network's loss on the sample.
    public var loss: Double
    /// ∂output/∂net from the activation's definition at `net` (softmax: the diagonal term `p(1 - p)`).
    public var localNet: Double
    /// The position explained, for a layer over a sequence (a per-position dense layer, an RNN);
    /// nil for a layer over features.
    public var position: Int?
    /// The rows' names, one per weight and input: `w[j]` and `x[j]`; an RNN's `w_ih[j]` then
    /// `w_hh[k]`, and `x[j]` then `h[k]` (the state before the position, `h_{P-1}[k]`).
    public var weightNames: [String], inputNames: [String]
    /// The bias's terms and their names: `[b]` named `bias`; an RNN's `[b_ih, b_hh]`, whose sum is ``bias``.
    public var biases: [Double], biasNames: [String]
    /// The network's gradient buffer's entry for each bias term (``backpropagatedBias`` is the first's).
    public var backpropagatedBiases: [Double]
    /// Under ``Loss/sequenceCrossEntropy``, an output unit's class index to predict at the position
    /// (the unit's ``target`` is 1 when it is this unit, else 0); negative for padding, which the
    /// loss does not count (no target, and every gradient there is 0).
    public var targetClass: Int?
    /// An RNN's share of ∂L/∂output that comes through the next step, `Σⱼ W_hh[j, U]·∂L/∂net_{P+1}[j]`
    /// (0 at the last position); the rest comes from the next layer (or the loss) at the position.
    public var outputGradientFromNextStep: Double?
    /// At a position: the network's own backward pass there (the share of its gradient buffer this position adds).
    public var backpropagatedAtPosition: PositionShare?
    /// By the chain rule: ∂L/∂output from the next layer (or the loss), times the local gradients.
    public var gradients: Gradients
    /// By finite differences through the network's forward pass.
    public var faux: Gradients
    /// The network's own backward pass: its gradient buffer's entries for this unit's weights and
    /// bias (over a sequence, the sum over every position: see ``backpropagatedAtPosition``).
    public var backpropagatedWeights: [Double], backpropagatedBias: Double
    /// The rule behind ``faux``.
    public var difference: FiniteDifference<Double>

    /// Checks that `network` has a layer `layer` whose unit `unit` can be explained (a dense layer,
    /// over features or per position, or an RNN), and that `position`, when given, is one of the
    /// layer's positions, before any data is read.
    /// - Throws: ``NetworkError/invalidLayer(_:reason:)`` naming the layers, units or positions
    ///   there are, or why the layer's units cannot be explained (a GRU's, which
    ///   ``GRUUnitExplanation`` explains, an embedding's, a position embedding's, a context window's).
    public static func check<Scalar: TensorScalar>(
        layer: Int, unit: Int, position: Int? = nil, of network: Network<Scalar>
    ) throws(NetworkError) {
        guard network.layers.indices.contains(layer) else {
            throw .invalidLayer("layer \(layer)", reason: "\(network) has layers 0 to \(network.layers.count - 1)")
        }
        let candidate = network.layers[layer]
        let name = "layer \(layer) \(candidate)"
        let units: Int
        switch candidate.explainableUnits {
        case .units(let count, _): units = count
        case .none(let reason): throw .invalidLayer(name, reason: reason)
        }
        guard (0..<units).contains(unit) else {
            throw .invalidLayer(name, reason: "unit \(unit) is out of range; it has units 0 to \(units - 1)")
        }
        if let position {
            guard let time = positions(of: candidate) else {
                throw .invalidLayer(
                    name, reason: "position \(position): a layer over features has no positions (only a per-position dense layer or an RNN has)")
            }
            guard (0..<time).contains(position) else {
                throw .invalidLayer(name, reason: "position \(position) is out of range; it has positions 0 to \(time - 1)")
            }
        }
    }

    /// The units of `layer` that can be explained: a dense layer's outputs (over features or per
    /// position), an RNN's hidden units; nil for any other layer.
    public static func units<Scalar: TensorScalar>(of layer: any Layer<Scalar>) -> Int? {
        guard case .units(let count, _) = layer.explainableUnits else { return nil }
        return count
    }

    /// The positions a unit of `layer` is explained at: a per-position dense layer's or an RNN's
    /// time; nil for a layer over features (and for a layer whose units cannot be explained).
    public static func positions<Scalar: TensorScalar>(of layer: any Layer<Scalar>) -> Int? {
        guard case .units(_, let positions) = layer.explainableUnits else { return nil }
        return positions
    }

    /// Explains unit `unit` of layer `layer` of `network` on one sample, at one of its positions for
    /// a layer over a sequence.
    ///
    /// At a position P (a per-position dense layer, an RNN) the unit is the neuron that computes its
    /// value there: its inputs are the layer's input at P (for an RNN, `x_P` then the state before,
    /// `h_{P-1}`, `h0` at P = 0), its net and output those at P, and every global gradient is
    /// ∂L/∂(quantity at P), L the network's loss on the sample over all its positions. A weight's or
    /// bias's row is position P's share of its gradient, `operand_P · ∂L/∂net_P`: the network's
    /// gradient buffer sums the shares of every position, and both are shown. The faux gradients
    /// nudge the quantity at P alone through the network's forward pass.
    /// - Parameters:
    ///   - network: the network the unit belongs to.
    ///   - sample: one sample's features, as the network takes them (preprocessed; token indices for a text network).
    ///   - target: the sample's target row (one-hot for classification; a class index per position for
    ///     ``Loss/sequenceCrossEntropy``).
    ///   - layer: the layer, counted from 0: dense (over features or per position) or RNN.
    ///   - unit: the unit of that layer, counted from 0.
    ///   - position: for a layer over a sequence, the position, counted from 0; nil for its default,
    ///     the last position whose target the loss counts (under the sequence loss: where the line's
    ///     last character is read and its end is to be predicted), or the last position when none is
    ///     counted or the loss is not the sequence loss. It must be nil for a layer over features.
    ///   - difference: the finite-difference rule of the faux gradients.
    /// - Throws: ``NetworkError`` when the layer's units cannot be explained, the unit, layer or
    ///   position is out of range, or the sample or target does not fit the network.
    public init<Scalar: TensorScalar>(
        network: Network<Scalar>, sample: [Scalar], target: [Scalar], layer: Int, unit: Int, position: Int? = nil,
        difference: FiniteDifference<Double> = .reference
    ) throws(NetworkError) {
        try Self.check(layer: layer, unit: unit, position: position, of: network)
        if Self.positions(of: network.layers[layer]) != nil {
            self = try Self(
                sequence: network, sample: sample, target: target, layer: layer, unit: unit, position: position, difference: difference)
            return
        }
        // Evaluation mode throughout: the pass a trained model is used in (evaluate, predict).
        var n = try network.converted(to: Double.self).evaluationEquivalent()
        let dense = n.layers[layer] as! Dense<Double>  // checked above; the equivalent keeps each dense layer in place
        guard sample.count == n.featureCount, target.count == n.outputCount else {
            throw .shapeMismatch(
                "the sample has \(sample.count) features and \(target.count) targets but \(network) takes \(n.featureCount) and gives \(n.outputCount)"
            )
        }
        let last = n.layers.count - 1
        let x = try! Tensor(shape: [1] + n.inputShape, scalars: sample.map { Double($0) })  // sizes checked above
        let t = try! Tensor(shape: [1, n.outputCount], scalars: target.map { Double($0) })
        // The network's own forward and backward pass on the one sample.
        loss = try finiteLoss(try n.lossAndGradients(x, targets: t))

        let units = dense.outputs
        let weightOffset = n.parameterTensors.first { $0.layer == layer && $0.tensor == "weight" }!.offset
        let biasIndex = n.parameterTensors.first { $0.layer == layer && $0.tensor == "bias" }!.offset + unit
        // w: (inputs, outputs) row-major: the unit's column is every `units`-th entry from `unit`.
        let weightIndices = (0..<dense.inputs).map { weightOffset + $0 * units + unit }
        let layerInput = layer == 0 ? x : n.layers[layer - 1].output
        (self.layer, self.unit, layerTitle, activation) = (layer, unit, dense.description, dense.activation)
        isOutput = layer == last
        inputs = Array(layerInput.scalars.prefix(dense.inputs))
        weights = weightIndices.map { n.parameters[$0] }
        bias = n.parameters[biasIndex]
        self.target = isOutput ? t[0, unit] : nil
        var sum = bias
        for (xj, wj) in zip(inputs, weights) { sum += xj * wj }
        net = sum
        let softmax = dense.activation == .softmax
        output = softmax ? n.output[0, unit] : Naive.activation(dense.activation, net)
        localNet = softmax ? output * (1 - output) : Naive.activationDerivative(dense.activation, net)
        (backpropagatedWeights, backpropagatedBias) = (weightIndices.map { n.gradients[$0] }, n.gradients[biasIndex])
        self.difference = difference
        (self.position, targetClass, outputGradientFromNextStep, backpropagatedAtPosition) = (nil, nil, nil, nil)
        weightNames = weights.indices.map { "w[\($0)]" }
        inputNames = inputs.indices.map { "x[\($0)]" }
        (biases, biasNames, backpropagatedBiases) = ([bias], ["bias"], [backpropagatedBias])

        // Chain rule: ∂L/∂output comes from the next layer's input gradient (its backward pass) or the loss.
        let outputGradient: Double?
        let netGradient: Double
        if softmax {
            // Fused with cross-entropy: ∂L/∂z = p - t over a batch of one.
            (outputGradient, netGradient) = (nil, output - t[0, unit])
        } else {
            let g = isOutput ? output - t[0, unit] : n.layers[layer + 1].inputGradient[0, unit]
            (outputGradient, netGradient) = (g, g * localNet)
        }
        gradients = Gradients(
            output: outputGradient, net: netGradient, bias: netGradient,
            weights: inputs.map { $0 * netGradient }, inputs: weights.map { $0 * netGradient })

        // Faux: nudge, recompute the loss through the network's forward pass, restore exactly.
        let base = try n.loss(x, targets: t)
        func fauxGradient(_ nudges: [(index: Int, per: Double)], targetNudge: Int? = nil) throws(NetworkError) -> Double {
            try difference.derivative { (delta: Double) throws(NetworkError) -> Double in
                if delta == 0 { return base }
                let saved = nudges.map { n.parameters[$0.index] }
                for (index, per) in nudges { n.parameters[index] += delta * per }
                var moved = t
                if let targetNudge { moved[0, targetNudge] -= delta }
                defer { for (k, nudge) in nudges.enumerated() { n.parameters[nudge.index] = saved[k] } }
                return try n.loss(x, targets: moved)
            }
        }
        var fauxOutput: Double?
        if layer < last, let next = n.layers[layer + 1] as? Dense<Double> {
            // The output as the next layer sees it: each of its nets moves by tiny·wᵤₖ, as its bias would.
            let nextWeight = n.parameterTensors.first { $0.layer == layer + 1 && $0.tensor == "weight" }!.offset
            let nextBias = n.parameterTensors.first { $0.layer == layer + 1 && $0.tensor == "bias" }!.offset
            let nudges = (0..<next.outputs).map { k in (index: nextBias + k, per: n.parameters[nextWeight + unit * next.outputs + k]) }
            fauxOutput = try fauxGradient(nudges)
        } else if isOutput, !softmax, n.loss == .halfSquaredError {
            // (y + tiny - t)² = (y - (t - tiny))²: the loss sees the output moved when the target moves back.
            fauxOutput = try fauxGradient([], targetNudge: unit)
        }
        let fauxNet = try fauxGradient([(biasIndex, 1)])
        faux = Gradients(
            output: fauxOutput, net: fauxNet, bias: fauxNet,
            weights: try weightIndices.map { (i: Int) throws(NetworkError) in try fauxGradient([(i, 1)]) },
            inputs: try weights.map { (w: Double) throws(NetworkError) in try fauxGradient([(biasIndex, w)]) })
    }

    /// The mode every pass of the explanation runs in: evaluation (dropout keeps every input,
    /// batch norm normalizes with its running statistics), as evaluate and predict use a trained model.
    public var mode: LayerMode { .evaluation }

    /// Each chain-rule gradient beside its faux one, in the table's order: output (when both
    /// exist), net, each bias term (`bias`; an RNN's `b_ih`, `b_hh`), each weight, each input,
    /// named as ``weightNames`` and ``inputNames`` name them.
    public var comparisons: [(quantity: String, comparison: GradientComparison<Double>)] {
        var rows: [(String, GradientComparison<Double>)] = []
        if let analytic = gradients.output, let fake = faux.output { rows.append(("output", .init(analytic: analytic, faux: fake))) }
        rows.append(("net", .init(analytic: gradients.net, faux: faux.net)))
        for name in biasNames { rows.append((name, .init(analytic: gradients.bias, faux: faux.bias))) }
        for j in weights.indices { rows.append((weightNames[j], .init(analytic: gradients.weights[j], faux: faux.weights[j]))) }
        for j in inputs.indices { rows.append((inputNames[j], .init(analytic: gradients.inputs[j], faux: faux.inputs[j]))) }
        return rows
    }
}

// MARK: - JSON

extension UnitExplanation: Encodable {
    private enum Key: String, CodingKey {
        case layer, unit, title, activation, isOutput, inputs, weights, bias, target, net, output, loss
        case local, gradients, faux, backpropagated, absoluteError, relativeError, difference
        case input, weight, method, tiny, mode
        case position, names, biases, targetClass, outputFromNextStep, atPosition
    }

    /// Keys as `neuron explain --json` (always arrays for weights and inputs): `layer`, `unit`,
    /// `title`, `activation`, `isOutput`, `inputs`, `weights`, `bias`, `biases` (each bias term),
    /// `names` (`weight`, `input`, `bias`: the rows' names), `target`, `net`, `output`, `loss`,
    /// `mode` (`evaluation`), `local` (`net`, `bias`, `weight`, `input`), `gradients` and `faux`
    /// (`output`, `net`, `bias`, `weight`, `input`; `gradients.outputFromNextStep` for an RNN),
    /// `backpropagated` (`weight`, `bias`, `biases`: the gradient buffer, over a sequence summed
    /// over positions; `atPosition` with `net`, `weight`, `bias`: the position's share),
    /// `difference`; at a position, `position` and, under the sequence loss for an output unit, `targetClass`.
    public func encode(to encoder: Encoder) throws {
        var root = encoder.container(keyedBy: Key.self)
        try root.encode(layer, forKey: .layer)
        try root.encode(unit, forKey: .unit)
        try root.encode(layerTitle, forKey: .title)
        try root.encodeIfPresent(position, forKey: .position)
        try root.encode(activation, forKey: .activation)
        try root.encode(isOutput, forKey: .isOutput)
        try root.encode(inputs, forKey: .inputs)
        try root.encode(weights, forKey: .weights)
        try root.encode(bias, forKey: .bias)
        try root.encode(biases, forKey: .biases)
        var names = root.nestedContainer(keyedBy: Key.self, forKey: .names)
        try names.encode(weightNames, forKey: .weight)
        try names.encode(inputNames, forKey: .input)
        try names.encode(biasNames, forKey: .bias)
        try root.encodeIfPresent(target, forKey: .target)
        try root.encodeIfPresent(targetClass, forKey: .targetClass)
        try root.encode(net, forKey: .net)
        try root.encode(output, forKey: .output)
        try root.encode(loss, forKey: .loss)
        try root.encode("\(mode)", forKey: .mode)
        var local = root.nestedContainer(keyedBy: Key.self, forKey: .local)
        try local.encode(localNet, forKey: .net)
        try local.encode(1.0, forKey: .bias)
        try local.encode(inputs, forKey: .weight)
        try local.encode(weights, forKey: .input)
        for (key, g) in [(Key.gradients, gradients), (.faux, faux)] {
            var container = root.nestedContainer(keyedBy: Key.self, forKey: key)
            try container.encodeIfPresent(g.output, forKey: .output)
            try container.encode(g.net, forKey: .net)
            try container.encode(g.bias, forKey: .bias)
            try container.encode(g.weights, forKey: .weight)
            try container.encode(g.inputs, forKey: .input)
            if key == .gradients { try container.encodeIfPresent(outputGradientFromNextStep, forKey: .outputFromNextStep) }
        }
        var network = root.nestedContainer(keyedBy: Key.self, forKey: .backpropagated)
        try network.encode(backpropagatedWeights, forKey: .weight)
        try network.encode(backpropagatedBias, forKey: .bias)
        try network.encode(backpropagatedBiases, forKey: .biases)
        if let share = backpropagatedAtPosition {
            var atPosition = network.nestedContainer(keyedBy: Key.self, forKey: .atPosition)
            try atPosition.encode(share.net, forKey: .net)
            try atPosition.encode(share.weights, forKey: .weight)
            try atPosition.encode(share.bias, forKey: .bias)
        }
        var differenceContainer = root.nestedContainer(keyedBy: Key.self, forKey: .difference)
        try differenceContainer.encode(difference.method, forKey: .method)
        try differenceContainer.encode(difference.tiny, forKey: .tiny)
    }
}

// MARK: - Text table

extension UnitExplanation {
    /// The table a learner would draw, as plain text with aligned columns: one row per weight and
    /// input. At a position it says what the position's numbers are, and the network's backward
    /// pass has two columns: the position's share and the gradient buffer's sum over positions.
    public var table: String {
        let f = activation
        let formula =
            switch f {
            case .tanh: "1 - output²"
            case .sigmoid: "output·(1 - output)"
            case .relu: "1 if net > 0, else 0"
            case .identity: "1"
            case .softmax: "p·(1 - p) (diagonal term)"
            }
        let recurrent = biases.count == 2
        var lines = [
            "Unit \(unit) of layer \(layer) \(layerTitle)\(position.map { " at position \($0)" } ?? "")\(isOutput ? " (an output unit)" : "")"
        ]
        lines.append("In evaluation mode, as evaluate and predict run it: dropout keeps every input, batch norm uses its running statistics.")
        if let position {
            lines.append(
                "At position \(position): the inputs are the layer's input there\(recurrent ? " and the state before it, h[k] = h_\(position - 1)[k] (h0 at position 0)" : ""), net and output the unit's there."
            )
            lines.append(
                "∂loss/∂quantity is ∂L/∂(the quantity at position \(position)), L the network's loss on the sample over all its positions; a weight's or bias's row is position \(position)'s share, operand·∂L/∂net, of its gradient."
            )
            lines.append(
                "Faux gradients nudge the quantity at position \(position) alone and run the network's forward pass on from there\(recurrent ? " (an output nudge reaches the next layer and the next step)" : "")."
            )
            if targetClass.map({ $0 < 0 }) == true {
                lines.append("Position \(position) is padding: the loss does not count it, so every gradient of the unit's output there is 0.")
            }
        }
        lines.append("")
        lines.append("Forward")
        let sum = recurrent ? "Σ w_ih[j]·x[j] + b_ih + Σ w_hh[k]·h[k] + b_hh" : "Σ xⱼ·wⱼ + b"
        var forward = [
            ["net", sum, "\(net)"],
            ["output", f == .softmax ? "softmax(net)ᵤ" : "\(f)(net)", "\(output)"],
        ]
        if let target {
            forward.append(["target", targetClass.map { "1 if the class at this position (\($0)) is this unit, else 0" } ?? "", "\(target)"])
        }
        forward.append(["loss", position == nil ? "the network's, on this sample" : "the network's, on this sample (all positions)", "\(loss)"])
        lines += paddedRows(forward)
        lines.append("")
        lines.append("Local gradients")
        lines += paddedRows([
            ["net", "∂output/∂net = \(formula)", "\(localNet)"],
            ["bias", "∂net/∂b = 1", "1.0"],
            ["weights", "∂net/∂wⱼ = xⱼ", "(the x column below)"],
            ["inputs", "∂net/∂xⱼ = wⱼ", "(the w column below)"],
        ])
        if let fromNextStep = outputGradientFromNextStep, let total = gradients.output {
            lines.append("")
            lines.append(
                "∂L/∂output = \(total): what the next layer at this position sends back, plus \(fromNextStep) through the next step (Σⱼ W_hh[j,\(unit)]·∂L/∂net[j] at position \(position.map { "\($0 + 1)" } ?? "P+1"))"
            )
        }
        lines.append("")
        lines.append("Global gradients (chain rule from the loss), faux gradients (\(difference)), the network's backward pass")
        let share = backpropagatedAtPosition
        var header = ["quantity", "value", "∂loss/∂quantity", "faux", "abs error", "rel error"]
        header += share == nil ? ["network"] : ["network at \(position!)", "network Σ positions"]
        var table = [header]
        let byName = Dictionary(comparisons.map { ($0.quantity, $0.comparison) }, uniquingKeysWith: { a, _ in a })
        func row(_ name: String, value: Double, atPosition: Double?, network: Double?) {
            if let c = byName[name] {
                let columns = share == nil ? [network] : [atPosition, network]
                table.append(
                    [name, "\(value)", "\(c.analytic)", "\(c.faux)", "\(c.absoluteError)", "\(c.relativeError)"]
                        + columns.map { $0.map { "\($0)" } ?? "" })
            }
        }
        if gradients.output == nil || faux.output == nil {
            table.append(
                ["output", "\(output)", gradients.output.map { "\($0)" } ?? "-", faux.output.map { "\($0)" } ?? "-", "", ""]
                    + Array(repeating: "", count: header.count - 6))
        } else {
            row("output", value: output, atPosition: nil, network: nil)
        }
        row("net", value: net, atPosition: share?.net, network: nil)
        for k in biases.indices { row(biasNames[k], value: biases[k], atPosition: share?.bias, network: backpropagatedBiases[k]) }
        for j in weights.indices { row(weightNames[j], value: weights[j], atPosition: share?.weights[j], network: backpropagatedWeights[j]) }
        for j in inputs.indices { row(inputNames[j], value: inputs[j], atPosition: nil, network: nil) }
        lines += paddedRows(table)
        return lines.joined(separator: "\n")
    }
}

// MARK: - Evaluation mode as a training pass

extension Network where Scalar == Double {
    /// A network whose training pass computes this network's evaluation pass, so that a backward
    /// pass (which follows a training pass) differentiates what evaluation computes: each layer
    /// replaced by its ``Layer/evaluationForm(parameters:state:)`` where it has one (a dropout at
    /// rate 0, a batch norm as the affine map its running statistics make). Every other layer,
    /// and every layer's index, stays as it is.
    /// - Throws: ``NetworkError`` for a layer whose evaluation has no such form.
    func evaluationEquivalent() throws(NetworkError) -> Network<Double> {
        var replaced: [any Layer<Double>] = [], forms: [Int: [Double]] = [:]
        for (i, layer) in layers.enumerated() {
            let form = try parameters.withUnsafeBufferPointer { p throws(NetworkError) in
                try state.withUnsafeBufferPointer { s throws(NetworkError) in
                    try layer.evaluationForm(
                        parameters: UnsafeBufferPointer(rebasing: p[layerRanges[i]]), state: UnsafeBufferPointer(rebasing: s[stateRanges[i]]))
                }
            }
            replaced.append(form?.layer ?? layer)
            forms[i] = form?.parameters
        }
        guard !forms.isEmpty else { return self }
        var equivalent = try Network(replaced, loss: loss)
        for (i, range) in equivalent.layerRanges.enumerated() {
            equivalent.parameters.replaceSubrange(range, with: forms[i] ?? Array(parameters[layerRanges[i]]))
        }
        return equivalent
    }
}

/// `loss`, when it is finite: an explanation's every number comes from the network's pass on the
/// sample, so weights that give non-finite scores would fill the table with NaN.
/// - Throws: ``NetworkError/invalidValue(_:)`` saying so.
func finiteLoss(_ loss: Double) throws(NetworkError) -> Double {
    guard loss.isFinite else {
        throw .invalidValue(
            "the network's loss on the sample is \(loss), not a finite number: its weights give non-finite scores, and every number of the table would be too"
        )
    }
    return loss
}
