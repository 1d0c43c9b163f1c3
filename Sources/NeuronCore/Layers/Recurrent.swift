// What the recurrent layers (`RNN`, `GRU`) share: the layout of their parameter slice, which is
// PyTorch's, the checks of their sizes, and PyTorch's initialization.

/// Where each tensor of a recurrent layer's parameter slice starts, in PyTorch's order (`nn.RNN`,
/// `nn.GRU`, one layer): `weight_ih_l0 (gates·hidden, inputs)`, `weight_hh_l0 (gates·hidden,
/// hidden)`, `bias_ih_l0`, `bias_hh_l0 (gates·hidden)`, then the initial state `h0 (hidden)`.
struct RecurrentParameters {
    let weightIH = 0, weightHH: Int, biasIH: Int, biasHH: Int, initialState: Int, count: Int
    let hidden: Int

    init(gates: Int, inputs: Int, hidden: Int) {
        self.hidden = hidden
        let width = gates * hidden
        weightHH = width * inputs
        biasIH = weightHH + width * hidden
        biasHH = biasIH + width
        initialState = biasHH + width
        count = initialState + hidden
    }

    /// Refuses sizes below 1, and parameter or feature counts past `Int`.
    static func check(_ kind: String, gates: Int, time: Int, inputs: Int, hidden: Int) throws(NetworkError) {
        let name = "\(kind)(\(inputs)→\(hidden), time \(time))"
        guard time >= 1, inputs >= 1, hidden >= 1 else {
            throw .invalidLayer(name, reason: "time, inputs and hidden must be at least 1")
        }
        // gates·hidden·(inputs + hidden + 2) + hidden parameters
        let (width, o1) = gates.multipliedReportingOverflow(by: hidden)
        let (columns, o2) = inputs.addingReportingOverflow(hidden + 2)
        let (weights, o3) = width.multipliedReportingOverflow(by: columns)
        let (_, o4) = weights.addingReportingOverflow(hidden)
        guard !(o1 || o2 || o3 || o4) else {
            throw .invalidLayer(
                name, reason: "its \(gates) × \(hidden) × (\(inputs) + \(hidden) + 2) + \(hidden) parameters are more than can be counted")
        }
        guard !time.multipliedReportingOverflow(by: max(inputs, hidden)).overflow else {
            throw .invalidLayer(name, reason: "a sample's \(time) × \(max(inputs, hidden)) features are more than can be counted")
        }
    }

    /// PyTorch's initialization: every weight and bias `U(±1/√hidden)`, drawn in buffer order;
    /// the initial state zero.
    func initialize<Scalar: TensorScalar>(_ parameters: UnsafeMutableBufferPointer<Scalar>, using generator: inout SeededGenerator) {
        let limit = 1 / Double(hidden).squareRoot()
        for i in 0..<initialState { parameters[i] = Scalar(generator.uniform(-limit, limit)) }
        for i in initialState..<count { parameters[i] = 0 }
    }
}

extension Naive {
    /// What the naive backward passes of ``RNN`` and ``GRU`` give: each parameter's gradient, in
    /// the layer's buffer order, and the input's.
    public struct RecurrentGradients<Scalar: TensorScalar> {
        /// `weight_ih_l0`'s, `(gates·hidden, inputs)`.
        public var weightIH: Tensor<Scalar>
        /// `weight_hh_l0`'s, `(gates·hidden, hidden)`.
        public var weightHH: Tensor<Scalar>
        /// `bias_ih_l0`'s, `(gates·hidden)`.
        public var biasIH: Tensor<Scalar>
        /// `bias_hh_l0`'s, `(gates·hidden)`.
        public var biasHH: Tensor<Scalar>
        /// `h0`'s, `(hidden)`.
        public var initialState: Tensor<Scalar>
        /// The input's, `(batch, time·inputs)`.
        public var input: Tensor<Scalar>
    }
}
