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
//
// A GRU unit is not one neuron but three gates and a state (`GRUUnitExplanation`, at the end): its
// gates' pre-activations are nudged through the added input column as an RNN's net is, and its
// state, whose next step multiplies it by gates no column reaches, by running the layer in two
// parts: positions 0…P, the state at P nudged, then P+1… from that state as their `h0`.

extension UnitExplanation {
    /// Explains unit `unit` of the per-position dense layer or RNN `layer` at `position` (nil: the
    /// default, see ``init(network:sample:target:layer:unit:position:difference:)``); `check` has passed.
    init<Scalar: TensorScalar>(
        sequence network: Network<Scalar>, sample: [Scalar], target: [Scalar], layer: Int, unit: Int, position: Int?,
        difference: FiniteDifference<Double>
    ) throws(NetworkError) {
        var (n, x, t) = try sequencePass(network, sample: sample, target: target)
        loss = try finiteLoss(try n.lossAndGradients(x, targets: t))

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
    fileprivate static func rest(of n: Network<Double>, after layer: Int) throws(NetworkError) -> Network<Double> {
        guard layer + 1 < n.layers.count else {
            return try Network([try Dropout<Double>(input: n.layers[layer].outputShape, rate: 0)], loss: n.loss)
        }
        var rest = try Network(Array(n.layers[(layer + 1)...]), loss: n.loss)
        rest.parameters = Array(n.parameters[n.layerRanges[layer + 1].lowerBound...])
        rest.state = Array(n.state[n.stateRanges[layer + 1].lowerBound...])
        return rest
    }
}

// MARK: - A GRU unit

/// One unit of a GRU (PyTorch's `nn.GRU`, ``GRU``) explained at one position of one sample: its
/// three gates' sums, pre-activations and values, its state, the local derivatives that join them,
/// the global gradients of the loss by the chain rule, faux gradients by finite differences through
/// the network's own forward pass, and the network's own backward pass beside them.
///
/// At position P unit U computes, from the layer's input `x = x_P` and the state before,
/// `h_prev = h_{P-1}` (the learned `h0` at P = 0), with its own row U of each gate's weights:
///
///     r = σ(a_r),  a_r = W_ir·x + b_ir + W_hr·h_prev + b_hr        (reset)
///     z = σ(a_z),  a_z = W_iz·x + b_iz + W_hz·h_prev + b_hz        (update)
///     n = tanh(a_n),  a_n = W_in·x + b_in + r·(W_hn·h_prev + b_hn)  (candidate)
///     h = (1 - z)·n + z·h_prev[U]
///
/// Every gradient is ∂L/∂(the quantity at P), L the network's loss on the sample over all its
/// positions; a weight's or bias's row is position P's share of its gradient (the gradient buffer
/// sums every position's), as for an RNN unit (``UnitExplanation``).
public struct GRUUnitExplanation: Sendable, Equatable {
    /// One gate of the unit at the position.
    public struct Gate: Sendable, Equatable, Encodable {
        /// `r` (reset), `z` (update) or `n` (candidate).
        public var name: String
        /// The unit's row of the gate's input weights (`W_ir[U, :]` in `weight_ih_l0`) and of its
        /// hidden weights (`W_hr[U, :]` in `weight_hh_l0`).
        public var inputWeights: [Double], hiddenWeights: [Double]
        /// The gate's input-side and hidden-side bias for the unit (`b_ir[U]`, `b_hr[U]`).
        public var inputBias: Double, hiddenBias: Double
        /// The input side `W_i·x + b_i` and the hidden side `W_h·h_prev + b_h`.
        public var inputSum: Double, hiddenSum: Double
        /// `inputSum + hiddenSum` for r and z; `inputSum + r·hiddenSum` for n.
        public var preActivation: Double
        /// σ(preActivation) for r and z, tanh(preActivation) for n.
        public var value: Double
        /// ∂value/∂preActivation from the value: `value·(1 - value)` (σ), `1 - value²` (tanh).
        public var local: Double
    }

    /// One row of the gradient table: a quantity at the position, its gradient by the chain rule
    /// and by finite differences, and the network's own backward pass where it has the quantity.
    public struct Row: Sendable, Equatable {
        /// `h`, `r`, `a_r`, `b_ir`, `W_ir[i]`, `W_hr[k]`, `x[i]`, `h_prev[k]`, …
        public var quantity: String
        /// The quantity's value at the position.
        public var value: Double
        /// ∂L/∂quantity by the chain rule.
        public var gradient: Double
        /// ∂L/∂quantity by finite differences.
        public var faux: Double
        /// The network's backward pass at the position: its gate gradient for a pre-activation, its
        /// share of a weight's or bias's gradient; nil where it keeps nothing of the quantity.
        public var networkAtPosition: Double?
        /// The network's gradient buffer for a weight or bias: the sum of every position's share.
        public var networkSum: Double?

        /// The chain rule's gradient beside the faux one.
        public var comparison: GradientComparison<Double> { .init(analytic: gradient, faux: faux) }
    }

    /// The layer's index in the network, and the unit's in the layer.
    public var layer: Int, unit: Int
    /// `GRU(64→64, time 16)`.
    public var layerTitle: String
    /// The position explained.
    public var position: Int
    /// Whether the unit is one of the network's outputs.
    public var isOutput: Bool
    /// `x`: the layer's input at the position.
    public var inputs: [Double]
    /// `h_prev`: the state before the position (`h0` at position 0).
    public var previousState: [Double]
    /// The gates r, z, n, in PyTorch's order.
    public var gates: [Gate]
    /// `h`: the unit's state at the position, `(1 - z)·n + z·h_prev[U]`, the layer's output there.
    public var state: Double
    /// The network's loss on the sample.
    public var loss: Double
    /// ∂L/∂h from the next layer (or the loss) at the position, and through the positions after it
    /// (backward through time from the next step's gates); ``Row/gradient`` of `h` is their sum.
    public var stateGradientFromLayer: Double, stateGradientFromNextStep: Double
    /// The gradient table, in its order: `h`; per gate (r, z, n) its value and pre-activation; per
    /// gate its biases and weights; the inputs `x[i]` and `h_prev[k]` through this unit alone.
    public var rows: [Row]
    /// The rule behind the faux gradients.
    public var difference: FiniteDifference<Double>

    /// The mode every pass runs in: evaluation, as evaluate and predict use a trained model.
    public var mode: LayerMode { .evaluation }

    /// Checks that layer `layer` of `network` is a GRU with unit `unit` and, when given, position
    /// `position`, before any data is read.
    /// - Throws: ``NetworkError/invalidLayer(_:reason:)`` naming the layers, units or positions there are.
    public static func check<Scalar: TensorScalar>(
        layer: Int, unit: Int, position: Int? = nil, of network: Network<Scalar>
    ) throws(NetworkError) {
        guard network.layers.indices.contains(layer) else {
            throw .invalidLayer("layer \(layer)", reason: "\(network) has layers 0 to \(network.layers.count - 1)")
        }
        let name = "layer \(layer) \(network.layers[layer])"
        guard let gru = network.layers[layer] as? GRU<Scalar> else { throw .invalidLayer(name, reason: "it is not a GRU") }
        guard (0..<gru.hidden).contains(unit) else {
            throw .invalidLayer(name, reason: "unit \(unit) is out of range; it has units 0 to \(gru.hidden - 1)")
        }
        if let position, !(0..<gru.time).contains(position) {
            throw .invalidLayer(name, reason: "position \(position) is out of range; it has positions 0 to \(gru.time - 1)")
        }
    }

    /// Explains unit `unit` of the GRU `layer` of `network` on one sample at `position`.
    ///
    /// The chain rule runs from ∂L/∂h at P: the next layer's backward pass there (or the loss's
    /// definition, for an output layer), plus what the positions after P send back, taken by the
    /// naive definition of the GRU's backward pass (``Naive/gruBackward(_:weightIH:weightHH:biasIH:biasHH:initialState:outputGradient:)``)
    /// over positions P+1… with `h_P` as their initial state. The faux gradients nudge one quantity
    /// at P alone: a pre-activation through an input column added to the layer (``UnitExplanation``'s
    /// device), the state by running the layer in two parts, the second from the nudged state.
    /// - Parameters:
    ///   - network: the network the unit belongs to.
    ///   - sample: one sample's features, as the network takes them (token indices for a text network).
    ///   - target: the sample's target row (a class index per position for ``Loss/sequenceCrossEntropy``).
    ///   - layer: the GRU's index, counted from 0.
    ///   - unit: the unit, counted from 0.
    ///   - position: the position, counted from 0; nil for the last position whose target the loss
    ///     counts (the line's last character), else the last position.
    ///   - difference: the finite-difference rule of the faux gradients.
    /// - Throws: ``NetworkError`` when the layer is not a GRU, the unit or position is out of range,
    ///   or the sample or target does not fit the network.
    public init<Scalar: TensorScalar>(
        network: Network<Scalar>, sample: [Scalar], target: [Scalar], layer: Int, unit: Int, position: Int? = nil,
        difference: FiniteDifference<Double> = .reference
    ) throws(NetworkError) {
        try Self.check(layer: layer, unit: unit, position: position, of: network)
        var (n, x, t) = try sequencePass(network, sample: sample, target: target)
        loss = try finiteLoss(try n.lossAndGradients(x, targets: t))

        let gru = n.layers[layer] as! GRU<Double>  // checked above; the equivalent keeps every GRU in place
        // x: (time, inputs)  h: (time, hidden)  W_ih: (3·hidden, inputs)  W_hh: (3·hidden, hidden)  b_ih, b_hh: (3·hidden)  h0: (hidden)
        let (time, inputCount, width) = (gru.time, gru.inputs, gru.hidden)
        let p = position ?? UnitExplanation.defaultPosition(targets: t, loss: n.loss, time: time)
        let parameters = Array(n.parameters[n.layerRanges[layer]])
        let start = n.layerRanges[layer].lowerBound
        // Offsets in the layer's slice, as `nn.GRU` lays it out: row g·hidden + U is unit U of gate g.
        let (ih, hh) = (0, 3 * width * inputCount)
        let (bih, bhh) = (hh + 3 * width * width, hh + 3 * width * width + 3 * width)
        let h0 = bhh + 3 * width
        let layerInput = layer == 0 ? x : n.layers[layer - 1].output
        let layerOutput = gru.output
        let xP = (0..<inputCount).map { layerInput[p * inputCount + $0] }
        let previous = (0..<width).map { p == 0 ? parameters[h0 + $0] : layerOutput[(p - 1) * width + $0] }
        let last = layer == n.layers.count - 1
        (self.layer, self.unit, layerTitle, self.position, isOutput) = (layer, unit, gru.description, p, last)
        (inputs, previousState, self.difference) = (xP, previous, difference)

        // Forward, as the definition states it, in Double.
        var gates: [Gate] = []
        for (g, name) in ["r", "z", "n"].enumerated() {
            let row = g * width + unit
            let wi = Array(parameters[ih + row * inputCount..<ih + (row + 1) * inputCount])
            let wh = Array(parameters[hh + row * width..<hh + (row + 1) * width])
            var inputSum = parameters[bih + row], hiddenSum = parameters[bhh + row]
            for i in 0..<inputCount { inputSum += wi[i] * xP[i] }
            for k in 0..<width { hiddenSum += wh[k] * previous[k] }
            let a = g < 2 ? inputSum + hiddenSum : inputSum + gates[0].value * hiddenSum
            let value = Naive.activation(g < 2 ? .sigmoid : .tanh, a)
            gates.append(
                Gate(
                    name: name, inputWeights: wi, hiddenWeights: wh, inputBias: parameters[bih + row], hiddenBias: parameters[bhh + row],
                    inputSum: inputSum, hiddenSum: hiddenSum, preActivation: a, value: value,
                    local: g < 2 ? value * (1 - value) : 1 - value * value))
        }
        self.gates = gates
        let (r, z, candidate) = (gates[0].value, gates[1].value, gates[2].value)
        state = (1 - z) * candidate + z * previous[unit]

        // ∂L/∂y at every position from the next layer's backward pass, or from the loss's definition.
        func fromLayer(_ flat: Int) -> Double {
            if !last { return n.layers[layer + 1].inputGradient[flat] }
            if n.loss == .sequenceCrossEntropy {
                // (softmax - onehot(t)) / counted at a counted position, 0 at padding.
                let wanted = Int(t[flat / width]), counted = max(1, (0..<n.targetCount).count(where: { t[$0] >= 0 }))
                return wanted < 0 ? 0 : (n.output[flat] - (wanted == flat % width ? 1 : 0)) / Double(counted)
            }
            return layerOutput[flat] - t[flat]  // half the squared error over a batch of one
        }
        stateGradientFromLayer = fromLayer(p * width + unit)
        // Through the positions after P: the definition's backward pass over them, from h_P, gives ∂L/∂h_P as its h0's gradient.
        if p + 1 < time {
            let after = time - p - 1
            func tensor(_ shape: [Int], _ values: some Collection<Double>) -> Tensor<Double> { try! Tensor(shape: shape, scalars: Array(values)) }
            let carried = Naive.gruBackward(
                tensor([1, after * inputCount], (0..<after * inputCount).map { layerInput[(p + 1) * inputCount + $0] }),
                weightIH: tensor([3 * width, inputCount], parameters[ih..<hh]), weightHH: tensor([3 * width, width], parameters[hh..<bih]),
                biasIH: tensor([3 * width], parameters[bih..<bhh]), biasHH: tensor([3 * width], parameters[bhh..<h0]),
                initialState: tensor([width], (0..<width).map { layerOutput[p * width + $0] }),
                outputGradient: tensor([1, after * width], (0..<after * width).map { fromLayer((p + 1) * width + $0) }))
            stateGradientFromNextStep = carried.initialState[unit]
        } else {
            stateGradientFromNextStep = 0
        }

        // The chain rule back from h to each gate's pre-activation: da on the input side, dha on
        // the hidden side (they differ only for n, whose hidden side r scales).
        let dh = stateGradientFromLayer + stateGradientFromNextStep
        let dn = dh * (1 - z), dz = dh * (previous[unit] - candidate)
        let dan = dn * gates[2].local, dr = dan * gates[2].hiddenSum
        let da = [dr * gates[0].local, dz * gates[1].local, dan]
        let dha = [da[0], da[1], dan * r]

        // The network's backward pass: its gate gradients at P (batch·time, 3·hidden) and its gradient buffer.
        let ia = (0..<3).map { gru.cache.gateGradient[p * 3 * width + $0 * width + unit] }
        let ha = (0..<3).map { gru.cache.hiddenGateGradient[p * 3 * width + $0 * width + unit] }
        func buffer(_ offset: Int) -> Double { n.gradients[start + offset] }

        // Faux: positions 0…P through the layer with a column added, the state at P nudged, then P+1… from it.
        var rest = try UnitExplanation.rest(of: n, after: layer)
        var head = try GRU<Double>(time: p + 1, inputs: inputCount + 1, hidden: width)
        var tail = p + 1 < time ? try GRU<Double>(time: time - p - 1, inputs: inputCount, hidden: width) : nil
        /// The loss with the column `c` (3·hidden: what reaches each gate's row) fed `m` at P, and the
        /// state at P moved by `s`.
        func downstream(_ c: [Double], _ m: Double, state s: Double) throws(NetworkError) -> Double {
            // weight_ih_l0 (3·hidden, inputs + 1): each row gains c's entry as its last column.
            var augmented: [Double] = []
            for row in 0..<3 * width {
                augmented += parameters[ih + row * inputCount..<ih + (row + 1) * inputCount]
                augmented.append(c[row])
            }
            augmented += parameters[hh...]
            var input = [Double](repeating: 0, count: (p + 1) * (inputCount + 1))
            for q in 0...p {
                for i in 0..<inputCount { input[q * (inputCount + 1) + i] = layerInput[q * inputCount + i] }
            }
            input[p * (inputCount + 1) + inputCount] = m
            var y = [Double](repeating: 0, count: time * width)
            var none: [Double] = []
            augmented.withUnsafeBufferPointer { w in
                none.withUnsafeMutableBufferPointer { st in
                    head.forward(try! Tensor(shape: [1, p + 1, inputCount + 1], scalars: input), parameters: w, state: st, mode: .evaluation)
                }
            }
            for j in 0..<(p + 1) * width { y[j] = head.output[j] }
            y[p * width + unit] += s
            if tail != nil {
                let suffix = Array(parameters[..<h0]) + y[p * width..<(p + 1) * width]
                let input = try! Tensor(
                    shape: [1, time - p - 1, inputCount], scalars: Array(layerInput.scalars[(p + 1) * inputCount..<time * inputCount]))
                suffix.withUnsafeBufferPointer { w in
                    none.withUnsafeMutableBufferPointer { st in tail!.forward(input, parameters: w, state: st, mode: .evaluation) }
                }
                for j in 0..<(time - p - 1) * width { y[(p + 1) * width + j] = tail!.output[j] }
            }
            return try rest.loss(try! Tensor(shape: [1, time * width], scalars: y), targets: t)
        }
        let noColumn = [Double](repeating: 0, count: 3 * width)
        let base = try downstream(noColumn, 0, state: 0)
        /// The column reaching unit U's row of each gate with `coefficients` (r, z, n).
        func column(_ coefficients: [Double]) -> [Double] {
            var c = noColumn
            for g in 0..<3 { c[g * width + unit] = coefficients[g] }
            return c
        }
        func gate(_ g: Int, _ coefficient: Double) -> [Double] { column((0..<3).map { $0 == g ? coefficient : 0 }) }
        // The loss's derivative with the column fed tiny at P, and the state at P moved by tiny·s. A
        // coefficient is taken where nothing is nudged (r for n's hidden side, z for h_prev[U]'s direct
        // path); what the nudge changes in it moves the loss by O(tiny²).
        func faux(_ c: [Double], state s: Double = 0) throws(NetworkError) -> Double {
            try difference.derivative { (delta: Double) throws(NetworkError) -> Double in
                delta == 0 ? base : try downstream(c, delta, state: delta * s)
            }
        }

        var rows = [Row(quantity: "h", value: state, gradient: dh, faux: try faux(noColumn, state: 1))]
        // Each gate's value moves h (z and n) or a_n (r) alone: the state nudged by its ∂h/∂value, or a_n's row fed h_n.
        let valueFaux = [
            try faux(gate(2, gates[2].hiddenSum)), try faux(noColumn, state: previous[unit] - candidate), try faux(noColumn, state: 1 - z),
        ]
        // A pre-activation and its input-side bias move it alike: one nudge serves both rows.
        let preActivationFaux = try (0..<3).map { (g: Int) throws(NetworkError) in try faux(gate(g, 1)) }
        for g in 0..<3 {
            rows.append(Row(quantity: gates[g].name, value: gates[g].value, gradient: [dr, dz, dn][g], faux: valueFaux[g]))
            rows.append(
                Row(
                    quantity: "a_\(gates[g].name)", value: gates[g].preActivation, gradient: da[g], faux: preActivationFaux[g],
                    networkAtPosition: ia[g]))
        }
        for g in 0..<3 {
            let name = gates[g].name, row = g * width + unit
            // n's hidden side enters a_n times r: its bias and weights move a_n by r per unit.
            let scale = g == 2 ? r : 1
            rows.append(
                Row(
                    quantity: "b_i\(name)", value: gates[g].inputBias, gradient: da[g], faux: preActivationFaux[g], networkAtPosition: ia[g],
                    networkSum: buffer(bih + row)))
            rows.append(
                Row(
                    quantity: "b_h\(name)", value: gates[g].hiddenBias, gradient: dha[g], faux: try faux(gate(g, scale)),
                    networkAtPosition: ha[g], networkSum: buffer(bhh + row)))
            for i in 0..<inputCount {
                rows.append(
                    Row(
                        quantity: "W_i\(name)[\(i)]", value: gates[g].inputWeights[i], gradient: xP[i] * da[g], faux: try faux(gate(g, xP[i])),
                        networkAtPosition: xP[i] * ia[g], networkSum: buffer(ih + row * inputCount + i)))
            }
            for k in 0..<width {
                rows.append(
                    Row(
                        quantity: "W_h\(name)[\(k)]", value: gates[g].hiddenWeights[k], gradient: previous[k] * dha[g],
                        faux: try faux(gate(g, scale * previous[k])), networkAtPosition: previous[k] * ha[g],
                        networkSum: buffer(hh + row * width + k)))
            }
        }
        // An input through this unit alone: x[i] reaches each gate's row by its weight; h_prev[k]
        // likewise on the hidden side, and h_prev[U] also reaches h directly, times z.
        for i in 0..<inputCount {
            let w = gates.map { $0.inputWeights[i] }
            rows.append(Row(quantity: "x[\(i)]", value: xP[i], gradient: (0..<3).map { w[$0] * da[$0] }.reduce(0, +), faux: try faux(column(w))))
        }
        for k in 0..<width {
            let w = [gates[0].hiddenWeights[k], gates[1].hiddenWeights[k], r * gates[2].hiddenWeights[k]]
            let direct = k == unit ? z : 0
            rows.append(
                Row(
                    quantity: "h_prev[\(k)]", value: previous[k], gradient: (0..<3).map { w[$0] * da[$0] }.reduce(0, +) + direct * dh,
                    faux: try faux(column(w), state: direct)))
        }
        self.rows = rows
    }

    /// Each chain-rule gradient beside its faux one, in the table's order.
    public var comparisons: [(quantity: String, comparison: GradientComparison<Double>)] { rows.map { ($0.quantity, $0.comparison) } }
}

extension GRUUnitExplanation {
    /// The table a learner would draw, as plain text with aligned columns: the gates' forward
    /// quantities, the local derivatives that join them, and one row per quantity with its
    /// gradient by the chain rule, its faux gradient and the network's backward pass.
    public var table: String {
        let p = position, u = unit
        let (r, z, n) = (gates[0], gates[1], gates[2])
        var lines = ["Unit \(u) of layer \(layer) \(layerTitle) at position \(p)\(isOutput ? " (an output unit)" : "")"]
        lines.append("In evaluation mode, as evaluate and predict run it: dropout keeps every input, batch norm uses its running statistics.")
        lines.append(
            "At position \(p) the unit is PyTorch's nn.GRU cell over the layer's input there, x[i], and the state before it, h_prev[k] = \(p == 0 ? "h0[k], the learned initial state" : "h_\(p - 1)[k]"): three gates, each with its own rows of weight_ih_l0 and weight_hh_l0 and its two biases, then the state h."
        )
        lines.append(
            "∂loss/∂quantity is ∂L/∂(the quantity at position \(p)), L the network's loss on the sample over all its positions; a weight's or bias's row is position \(p)'s share of its gradient."
        )
        lines.append(
            "Faux gradients nudge the quantity at position \(p) alone and run the network's forward pass on from there (a nudge of h reaches the next layer and the next step)."
        )
        lines.append("")
        lines.append("Forward")
        var forward = [["gate", "input side", "hidden side", "pre-activation", "value"]]
        for (g, gate) in gates.enumerated() {
            let name = gate.name
            forward.append([
                ["r (reset)", "z (update)", "n (candidate)"][g], "W_i\(name)·x + b_i\(name) = \(gate.inputSum)",
                "W_h\(name)·h_prev + b_h\(name) = \(gate.hiddenSum)",
                "a_\(name) = input + \(g < 2 ? "" : "r·")hidden = \(gate.preActivation)", "\(g < 2 ? "σ" : "tanh")(a_\(name)) = \(gate.value)",
            ])
        }
        lines += paddedRows(forward)
        lines += paddedRows([
            ["h", "(1 - z)·n + z·h_prev[\(u)]", "\(state)"],
            ["loss", "the network's, on this sample (all positions)", "\(loss)"],
        ])
        lines.append("")
        lines.append("Local gradients")
        lines += paddedRows([
            ["∂h/∂n", "1 - z", "\(1 - z.value)"],
            ["∂h/∂z", "h_prev[\(u)] - n", "\(previousState[u] - n.value)"],
            ["∂h/∂h_prev[\(u)]", "z (directly)", "\(z.value)"],
            ["∂n/∂a_n", "1 - n²", "\(n.local)"],
            ["∂a_n/∂r", "W_hn·h_prev + b_hn", "\(n.hiddenSum)"],
            ["∂r/∂a_r", "r·(1 - r)", "\(r.local)"],
            ["∂z/∂a_z", "z·(1 - z)", "\(z.local)"],
            ["weights", "∂a/∂W_i·[i] = x[i], ∂a/∂W_h·[k] = h_prev[k] (times r for n's)", "(the x and h_prev rows below)"],
            ["biases", "∂a/∂b_i· = 1, ∂a/∂b_h· = 1 (r for n's)", ""],
        ])
        lines.append("")
        lines.append(
            "∂L/∂h = \(stateGradientFromLayer + stateGradientFromNextStep): what the next layer at this position sends back, \(stateGradientFromLayer), plus \(stateGradientFromNextStep) through the next step (backward through positions \(p + 1) on)"
        )
        lines.append("")
        lines.append("Global gradients (chain rule from the loss), faux gradients (\(difference)), the network's backward pass")
        var table = [["quantity", "value", "∂loss/∂quantity", "faux", "abs error", "rel error", "network at \(p)", "network Σ positions"]]
        for row in rows {
            let c = row.comparison
            table.append(
                [row.quantity, "\(row.value)", "\(row.gradient)", "\(row.faux)", "\(c.absoluteError)", "\(c.relativeError)"]
                    + [row.networkAtPosition, row.networkSum].map { $0.map { "\($0)" } ?? "" })
        }
        lines += paddedRows(table)
        return lines.joined(separator: "\n")
    }
}

extension GRUUnitExplanation: Encodable {
    private enum Key: String, CodingKey {
        case layer, unit, title, position, isOutput, inputs, previousState, gates, state, loss, mode, local, gradients
        case stateGradient, fromLayer, fromNextStep, difference, method, tiny
        case quantity, value, gradient, faux, absoluteError, relativeError, networkAtPosition, networkSum
        case stateByCandidate, stateByUpdate, stateByPrevious, candidateByReset
    }

    /// Keys as `neuron explain --json` for a GRU unit: `layer`, `unit`, `title`, `position`,
    /// `isOutput`, `inputs`, `previousState`, `gates` (each `name`, `inputWeights`, `hiddenWeights`,
    /// `inputBias`, `hiddenBias`, `inputSum`, `hiddenSum`, `preActivation`, `value`, `local`),
    /// `state`, `loss`, `mode` (`evaluation`), `local` (`stateByCandidate` 1 - z, `stateByUpdate`
    /// h_prev[U] - n, `stateByPrevious` z, `candidateByReset` W_hn·h_prev + b_hn), `stateGradient`
    /// (`fromLayer`, `fromNextStep`), `gradients` (one object per row: `quantity`, `value`,
    /// `gradient`, `faux`, `absoluteError`, `relativeError`, and `networkAtPosition`, `networkSum`
    /// where the network has them), `difference` (`method`, `tiny`).
    public func encode(to encoder: Encoder) throws {
        var root = encoder.container(keyedBy: Key.self)
        try root.encode(layer, forKey: .layer)
        try root.encode(unit, forKey: .unit)
        try root.encode(layerTitle, forKey: .title)
        try root.encode(position, forKey: .position)
        try root.encode(isOutput, forKey: .isOutput)
        try root.encode(inputs, forKey: .inputs)
        try root.encode(previousState, forKey: .previousState)
        try root.encode(gates, forKey: .gates)
        try root.encode(state, forKey: .state)
        try root.encode(loss, forKey: .loss)
        try root.encode("\(mode)", forKey: .mode)
        var local = root.nestedContainer(keyedBy: Key.self, forKey: .local)
        try local.encode(1 - gates[1].value, forKey: .stateByCandidate)
        try local.encode(previousState[unit] - gates[2].value, forKey: .stateByUpdate)
        try local.encode(gates[1].value, forKey: .stateByPrevious)
        try local.encode(gates[2].hiddenSum, forKey: .candidateByReset)
        var stateGradient = root.nestedContainer(keyedBy: Key.self, forKey: .stateGradient)
        try stateGradient.encode(stateGradientFromLayer, forKey: .fromLayer)
        try stateGradient.encode(stateGradientFromNextStep, forKey: .fromNextStep)
        var gradients = root.nestedUnkeyedContainer(forKey: .gradients)
        for row in rows {
            var object = gradients.nestedContainer(keyedBy: Key.self)
            try object.encode(row.quantity, forKey: .quantity)
            try object.encode(row.value, forKey: .value)
            try object.encode(row.gradient, forKey: .gradient)
            try object.encode(row.faux, forKey: .faux)
            try object.encode(row.comparison.absoluteError, forKey: .absoluteError)
            try object.encode(row.comparison.relativeError, forKey: .relativeError)
            try object.encodeIfPresent(row.networkAtPosition, forKey: .networkAtPosition)
            try object.encodeIfPresent(row.networkSum, forKey: .networkSum)
        }
        var differenceContainer = root.nestedContainer(keyedBy: Key.self, forKey: .difference)
        try differenceContainer.encode(difference.method, forKey: .method)
        try differenceContainer.encode(difference.tiny, forKey: .tiny)
    }
}

/// What a sequence unit's table starts from: the network in Double as evaluation runs it (dropout
/// off, batch norm's running statistics), and the sample and its targets as one-row tensors; the
/// caller's `lossAndGradients` on them is the network's own forward and backward pass (tokens and
/// classes checked there).
/// - Throws: ``NetworkError/shapeMismatch(_:)`` when the sample or targets do not fit the network.
func sequencePass<Scalar: TensorScalar>(
    _ network: Network<Scalar>, sample: [Scalar], target: [Scalar]
) throws(NetworkError) -> (network: Network<Double>, x: Tensor<Double>, t: Tensor<Double>) {
    let n = try network.converted(to: Double.self).evaluationEquivalent()
    guard sample.count == n.featureCount, target.count == n.targetCount else {
        throw .shapeMismatch(
            "the sample has \(sample.count) features and \(target.count) targets but \(network) takes \(n.featureCount) and \(n.targetCount)"
        )
    }
    let x = try! Tensor(shape: [1] + n.inputShape, scalars: sample.map { Double($0) })  // sizes checked above
    let t = try! Tensor(shape: [1, n.targetCount], scalars: target.map { Double($0) })
    return (n, x, t)
}
