// The neuron's table at one position of a sequence. A unit of a per-position dense layer, or of an
// RNN, computes a value at every position; at position P it is one neuron: its inputs are the
// layer's input at P (an RNN's `x_P`, then the state before, `h_{P-1}`), its net and output those at
// P. The loss is the network's over the whole sample, so the unit's quantities at P have gradients
// as a lone neuron's do, and a weight's gradient is the sum of one share per position.
//
// Faux gradients nudge one quantity at P alone, which no parameter can do (a weight or bias is the
// same at every position). The nudge enters through a column added to the layer: the layer is run
// by its own kernel with one more input feature `m`, whose weights `c` reach the unit (`c = e_U`),
// so `net_t[U]` moves by `m_t` and nothing else moves. `m_P = tiny·xⱼ` is weight j's nudge at P,
// `m_P = tiny·wⱼ` input j's, `m_P = tiny` the net's and a bias's. The output at P is nudged in the
// layer's output before the rest of the network reads it (an RNN's also as the next step reads it:
// `c = W_hh[:, U]`, `m_{P+1} = tiny`). The rest of the network is its own layers after this one,
// or, for the last layer, the loss head alone (a dropout at rate 0 passes its input through in
// evaluation mode).

extension UnitExplanation {
    /// Explains unit `unit` of the per-position dense layer or RNN `layer` at `position` (nil: the
    /// default, see ``init(network:sample:target:layer:unit:position:difference:)``); `check` has passed.
    init<Scalar: TensorScalar>(
        sequence network: Network<Scalar>, sample: [Scalar], target: [Scalar], layer: Int, unit: Int, position: Int?,
        difference: FiniteDifference<Double>
    ) throws(NetworkError) {
        var n = try network.converted(to: Double.self).evaluationEquivalent()
        guard sample.count == n.featureCount, target.count == n.targetCount else {
            throw .shapeMismatch(
                "the sample has \(sample.count) features and \(target.count) targets but \(network) takes \(n.featureCount) and \(n.targetCount)"
            )
        }
        let x = try! Tensor(shape: [1] + n.inputShape, scalars: sample.map { Double($0) })  // sizes checked above
        let t = try! Tensor(shape: [1, n.targetCount], scalars: target.map { Double($0) })
        // The network's own forward and backward pass on the one sample (tokens and classes checked there).
        loss = try n.lossAndGradients(x, targets: t)

        let rnn = n.layers[layer] as? RNN<Double>, dense = n.layers[layer] as? Dense<Double>
        // Per position: x: (time, inputs)  y: (time, width), width the units (a dense layer's outputs, an RNN's hidden)
        let (time, inputCount, width) = rnn.map { ($0.time, $0.inputs, $0.hidden) } ?? (dense!.time!, dense!.inputs, dense!.outputs)
        let last = n.layers.count - 1
        let p = position ?? Self.defaultPosition(targets: t, loss: n.loss, time: time)
        func offset(_ tensor: String) -> Int { n.parameterTensors.first { $0.layer == layer && $0.tensor == tensor }!.offset }
        // The unit's weights in the flat buffer: a dense weight (inputs, outputs) row-major holds its
        // column; an RNN's weight_ih_l0 (hidden, inputs) and weight_hh_l0 (hidden, hidden) its rows.
        let weightIndices: [Int], biasIndices: [Int]
        if rnn != nil {
            let ih = offset("weight_ih_l0") + unit * inputCount, hh = offset("weight_hh_l0") + unit * width
            weightIndices = (0..<inputCount).map { ih + $0 } + (0..<width).map { hh + $0 }
            biasIndices = [offset("bias_ih_l0") + unit, offset("bias_hh_l0") + unit]
        } else {
            let w = offset("weight")
            weightIndices = (0..<inputCount).map { w + $0 * width + unit }
            biasIndices = [offset("bias") + unit]
        }
        let layerInput = layer == 0 ? x : n.layers[layer - 1].output
        let layerOutput = n.layers[layer].output
        let xP = (0..<inputCount).map { layerInput[p * inputCount + $0] }
        // h_{P-1}: the state before position P, the learned h0 at position 0.
        let previous =
            rnn == nil ? [] : p == 0 ? (0..<width).map { n.parameters[offset("h0") + $0] } : (0..<width).map { layerOutput[(p - 1) * width + $0] }

        (self.layer, self.unit, layerTitle) = (layer, unit, n.layers[layer].description)
        activation = dense?.activation ?? .tanh
        isOutput = layer == last
        self.position = p
        inputs = xP + previous
        weights = weightIndices.map { n.parameters[$0] }
        biases = biasIndices.map { n.parameters[$0] }
        bias = biases.reduce(0, +)
        if rnn != nil {
            weightNames = (0..<inputCount).map { "w_ih[\($0)]" } + (0..<width).map { "w_hh[\($0)]" }
            inputNames = (0..<inputCount).map { "x[\($0)]" } + (0..<width).map { "h[\($0)]" }
            biasNames = ["b_ih", "b_hh"]
        } else {
            weightNames = (0..<inputCount).map { "w[\($0)]" }
            inputNames = (0..<inputCount).map { "x[\($0)]" }
            biasNames = ["bias"]
        }
        var sum = bias
        for (xj, wj) in zip(inputs, weights) { sum += xj * wj }
        net = sum
        output = Naive.activation(activation, net)
        localNet = Naive.activationDerivative(activation, net)
        self.difference = difference

        // Under the sequence loss the target is a class index per position; otherwise one value per output.
        let flat = p * width + unit
        (self.target, targetClass) = (nil, nil)
        if isOutput {
            if n.loss == .sequenceCrossEntropy {
                let c = Int(t[p])
                (targetClass, self.target) = (c, c < 0 ? nil : c == unit ? 1 : 0)
            } else {
                self.target = t[flat]
            }
        }

        // Chain rule: ∂L/∂output from the loss's definition or the next layer's input gradient (its
        // backward pass) at P, and for an RNN also through the next step's nets (the network's da at P+1).
        let fromLayer: Double
        if !isOutput {
            fromLayer = n.layers[layer + 1].inputGradient[flat]
        } else if n.loss == .sequenceCrossEntropy {
            // (p - onehot(t)) / counted at a counted position, 0 at padding; p the network's softmax at P.
            let counted = max(1, (0..<n.targetCount).count(where: { t[$0] >= 0 }))
            fromLayer = targetClass! < 0 ? 0 : (n.output[flat] - self.target!) / Double(counted)
        } else {
            // Half the squared error over a batch of one (a softmax output is a layer over features).
            fromLayer = output - self.target!
        }
        let recurrence = rnn == nil ? 0 : offset("weight_hh_l0")
        if let rnn {
            let da = rnn.cache.preActivationGradient  // (time, hidden)
            var carried = 0.0
            if p + 1 < time { for j in 0..<width { carried += n.parameters[recurrence + j * width + unit] * da[(p + 1) * width + j] } }
            outputGradientFromNextStep = carried
        } else {
            outputGradientFromNextStep = nil
        }
        let outputGradient = fromLayer + (outputGradientFromNextStep ?? 0)
        let netGradient = outputGradient * localNet
        gradients = Gradients(
            output: outputGradient, net: netGradient, bias: netGradient,
            weights: inputs.map { $0 * netGradient }, inputs: weights.map { $0 * netGradient })

        // The network's backward pass: its ∂L/∂net at P (dz, da: (time, width)) and its gradient buffer.
        let dz = rnn?.cache.preActivationGradient[flat] ?? dense!.cache.preActivationGradient[flat]
        backpropagatedAtPosition = PositionShare(net: dz, weights: inputs.map { $0 * dz }, bias: dz)
        backpropagatedWeights = weightIndices.map { n.gradients[$0] }
        backpropagatedBiases = biasIndices.map { n.gradients[$0] }
        backpropagatedBias = backpropagatedBiases[0]

        // Faux: the layer with one more input column, then the rest of the network.
        var rest = try Self.rest(of: n, after: layer)
        let parameters = Array(n.parameters[n.layerRanges[layer]])
        var nudged: any Layer<Double> =
            rnn != nil
            ? try RNN<Double>(time: time, inputs: inputCount + 1, hidden: width)
            : try Dense<Double>(inputCount + 1, width, activation: activation, time: time)
        // The column's weights c reach the units: weight (inputs + 1, outputs) gains a last row; weight_ih_l0 (hidden, inputs + 1) a last column.
        func withColumn(_ c: [Double]) -> [Double] {
            let weights = inputCount * width
            if rnn != nil {
                var augmented: [Double] = []
                for j in 0..<width {
                    augmented += parameters[j * inputCount..<(j + 1) * inputCount]
                    augmented.append(c[j])
                }
                return augmented + parameters[weights...]
            }
            return Array(parameters[..<weights]) + c + parameters[weights...]
        }
        let unitColumn = withColumn((0..<width).map { $0 == unit ? 1 : 0 })
        // h_P as the next step reads it: net_{P+1}[j] moves by m·W_hh[j, U].
        let stateColumn = rnn == nil ? [] : withColumn((0..<width).map { n.parameters[recurrence + $0 * width + unit] })
        func downstream(_ column: [Double], nudge m: [Double], output outputNudge: Double) throws(NetworkError) -> Double {
            var augmented = [Double](repeating: 0, count: time * (inputCount + 1))
            for t in 0..<time {
                for i in 0..<inputCount { augmented[t * (inputCount + 1) + i] = layerInput[t * inputCount + i] }
                augmented[t * (inputCount + 1) + inputCount] = m[t]
            }
            let input = try! Tensor(shape: [1, time, inputCount + 1], scalars: augmented)  // sized above
            var none: [Double] = []
            column.withUnsafeBufferPointer { w in
                none.withUnsafeMutableBufferPointer { s in nudged.forward(input, parameters: w, state: s, mode: .evaluation) }
            }
            var y = nudged.output
            y[flat] += outputNudge
            return try rest.loss(y, targets: t)
        }
        let stay = [Double](repeating: 0, count: time)
        let base = try downstream(unitColumn, nudge: stay, output: 0)
        // The loss with the quantity nudged by tiny·per at position `at` through `column`, and the output at P by tiny when asked.
        func fauxGradient(per: Double, at: Int? = nil, column: [Double]? = nil, output: Bool = false) throws(NetworkError) -> Double {
            try difference.derivative { (delta: Double) throws(NetworkError) -> Double in
                if delta == 0 { return base }
                var m = stay
                let at = at ?? p
                if at < time { m[at] = delta * per }  // an RNN's last state reaches no next step
                return try downstream(column ?? unitColumn, nudge: m, output: output ? delta : 0)
            }
        }
        let fauxNet = try fauxGradient(per: 1)
        let fauxOutput = try rnn == nil ? fauxGradient(per: 0, output: true) : fauxGradient(per: 1, at: p + 1, column: stateColumn, output: true)
        faux = Gradients(
            output: fauxOutput, net: fauxNet, bias: fauxNet,
            weights: try inputs.map { (operand: Double) throws(NetworkError) in try fauxGradient(per: operand) },
            inputs: try weights.map { (w: Double) throws(NetworkError) in try fauxGradient(per: w) })
    }

    /// The default position: the last one whose target the sequence loss counts (a text sample's
    /// last character, whose target is the line's end), else the last position.
    static func defaultPosition(targets t: Tensor<Double>, loss: Loss, time: Int) -> Int {
        guard loss == .sequenceCrossEntropy, let counted = (0..<min(time, t.count)).last(where: { t[$0] >= 0 }) else { return time - 1 }
        return counted
    }

    /// The network after `layer`, with its parameters and state, or, after the last layer, the loss
    /// head alone: a dropout at rate 0, which in evaluation mode passes its input through.
    private static func rest(of n: Network<Double>, after layer: Int) throws(NetworkError) -> Network<Double> {
        guard layer + 1 < n.layers.count else {
            return try Network([try Dropout<Double>(input: n.layers[layer].outputShape, rate: 0)], loss: n.loss)
        }
        var rest = try Network(Array(n.layers[(layer + 1)...]), loss: n.loss)
        rest.parameters = Array(n.parameters[n.layerRanges[layer + 1].lowerBound...])
        rest.state = Array(n.state[n.stateRanges[layer + 1].lowerBound...])
        return rest
    }
}
