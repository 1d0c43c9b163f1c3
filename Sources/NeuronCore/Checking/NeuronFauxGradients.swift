// Faux gradients of the single neuron (Docs/Reference.md §2): nudge one of output, net, bias, a weight or an
// input, recompute everything downstream of the nudge, and difference the losses.

extension Neuron {
    /// A quantity of the neuron that can be nudged.
    public enum Quantity: Hashable, Sendable, CustomStringConvertible {
        case output, net, bias
        case weight(Int)
        case input(Int)

        /// `output`, `net`, `bias`, `weight[0]`, `input[1]`.
        public var description: String {
            switch self {
            case .output: "output"
            case .net: "net"
            case .bias: "bias"
            case let .weight(i): "weight[\(i)]"
            case let .input(i): "input[\(i)]"
            }
        }
    }

    /// The loss with one quantity moved by `delta`, everything downstream of it recomputed and
    /// everything upstream left as it was.
    ///
    /// Counts are unchecked; callers pass inputs whose count matches `weights`.
    public func loss(inputs: [Scalar], target: Scalar, nudging quantity: Quantity, by delta: Scalar) -> Scalar {
        switch quantity {
        case .output:
            let net = Self.net(inputs: inputs, weights: weights, bias: bias)
            return Self.downstream(inputs: inputs, target: target, net: net, output: Scalar.libmTanh(net) + delta).loss
        case .net:
            let net = Self.net(inputs: inputs, weights: weights, bias: bias)
            return Self.downstream(inputs: inputs, target: target, net: net + delta).loss
        case .bias:
            let net = Self.net(inputs: inputs, weights: weights, bias: bias + delta)
            return Self.downstream(inputs: inputs, target: target, net: net).loss
        case let .weight(i):
            var nudged = weights
            nudged[i] += delta
            let net = Self.net(inputs: inputs, weights: nudged, bias: bias)
            return Self.downstream(inputs: inputs, target: target, net: net).loss
        case let .input(i):
            var nudged = inputs
            nudged[i] += delta
            let net = Self.net(inputs: nudged, weights: weights, bias: bias)
            return Self.downstream(inputs: nudged, target: target, net: net).loss
        }
    }

    /// The faux gradients of every quantity, in the same shape as the analytic ``Gradients``.
    /// - Throws: ``NeuronError/inputCount(expected:actual:)`` when `inputs` and `weights` differ in count.
    public func fauxGradients(
        inputs: [Scalar], target: Scalar, difference: FiniteDifference<Scalar> = .reference
    ) throws(NeuronError) -> Gradients {
        guard inputs.count == weights.count else {
            throw .inputCount(expected: weights.count, actual: inputs.count)
        }
        func faux(_ quantity: Quantity) -> Scalar {
            difference.derivative { loss(inputs: inputs, target: target, nudging: quantity, by: $0) }
        }
        return Gradients(
            output: faux(.output), net: faux(.net), bias: faux(.bias),
            weights: weights.indices.map { faux(.weight($0)) },
            inputs: inputs.indices.map { faux(.input($0)) })
    }
}

extension Neuron.Gradients {
    /// The gradients quantity by quantity, in the reference table's order:
    /// output, net, bias, each weight, each input.
    public var entries: [(quantity: Neuron.Quantity, value: Scalar)] {
        [(.output, output), (.net, net), (.bias, bias)]
            + weights.enumerated().map { (.weight($0.offset), $0.element) }
            + inputs.enumerated().map { (.input($0.offset), $0.element) }
    }

    /// Each analytic gradient beside its faux counterpart (`self` analytic, `faux` from finite differences).
    public func compared(with faux: Neuron.Gradients) -> [(quantity: Neuron.Quantity, comparison: GradientComparison<Scalar>)] {
        zip(entries, faux.entries).map { analytic, faux in
            (analytic.quantity, GradientComparison(analytic: analytic.value, faux: faux.value))
        }
    }
}
