// The single tanh neuron of Docs/Reference.md §1: every quantity a learner would write in the table, forward
// and backward side by side. It is the 1-output, tanh case of a dense layer, computed here one
// scalar at a time so that each number can be checked by hand.

/// One tanh neuron with `n` inputs: `output = tanh(Σ xᵢ·wᵢ + b)`, loss `(output - target)² / 2`.
public struct Neuron<Scalar: TensorScalar>: Equatable, Sendable, CustomStringConvertible {
    /// One weight per input.
    public var weights: [Scalar]
    /// The bias added to the weighted sum.
    public var bias: Scalar

    /// A neuron with one weight per input.
    public init(weights: [Scalar], bias: Scalar) {
        self.weights = weights
        self.bias = bias
    }

    /// A single-input neuron, the reference case of Docs/Reference.md §1.
    public init(weight: Scalar, bias: Scalar) {
        self.init(weights: [weight], bias: bias)
    }

    /// The number of inputs.
    public var inputCount: Int { weights.count }

    /// `Neuron(2 inputs, tanh)`.
    public var description: String { "Neuron(\(inputCount) input\(inputCount == 1 ? "" : "s"), tanh)" }

    // MARK: Forward

    /// The forward quantities for one sample, kept because backward needs them.
    public struct Forward: Equatable, Sendable {
        /// The sample's inputs `x`.
        public var inputs: [Scalar]
        /// The target `t`.
        public var target: Scalar
        /// `Σ xᵢ·wᵢ + b`.
        public var net: Scalar
        /// `tanh(net)`.
        public var output: Scalar
        /// `output - t`.
        public var error: Scalar
        /// `error² / 2` (the `/2` makes the derivative the error itself).
        public var loss: Scalar

        @usableFromInline
        init(inputs: [Scalar], target: Scalar, net: Scalar, output: Scalar, error: Scalar, loss: Scalar) {
            (self.inputs, self.target, self.net, self.output, self.error, self.loss) = (inputs, target, net, output, error, loss)
        }
    }

    /// Runs the neuron on one sample.
    ///
    ///     // inputs: (n)  weights: (n)  bias, net, output, error, loss: scalars
    ///
    /// - Throws: ``NeuronError/inputCount(expected:actual:)`` when `inputs` and `weights` differ in count.
    public func forward(inputs: [Scalar], target: Scalar) throws(NeuronError) -> Forward {
        guard inputs.count == weights.count else {
            throw .inputCount(expected: weights.count, actual: inputs.count)
        }
        return forwardUnchecked(inputs: inputs, target: target)
    }

    /// Forward for counts already checked. The order of operations is the reference's
    /// (`x*w + b`, then tanh, then `output - t`, then `error² / 2`), so Double results are exact.
    @inlinable
    func forwardUnchecked(inputs: [Scalar], target: Scalar) -> Forward {
        let net = Self.net(inputs: inputs, weights: weights, bias: bias)
        return Self.downstream(inputs: inputs, target: target, net: net)
    }

    /// `Σ xᵢ·wᵢ + b`, summed left to right, then the bias.
    @inlinable
    static func net(inputs: [Scalar], weights: [Scalar], bias: Scalar) -> Scalar {
        var sum: Scalar = 0
        for i in weights.indices { sum += inputs[i] * weights[i] }
        return sum + bias
    }

    /// Everything from the net onwards.
    @inlinable
    static func downstream(inputs: [Scalar], target: Scalar, net: Scalar) -> Forward {
        let output = Scalar.libmTanh(net)
        return downstream(inputs: inputs, target: target, net: net, output: output)
    }

    /// Everything from the output onwards.
    @inlinable
    static func downstream(inputs: [Scalar], target: Scalar, net: Scalar, output: Scalar) -> Forward {
        let error = output - target
        return Forward(inputs: inputs, target: target, net: net, output: output, error: error, loss: error * error / 2)
    }

    // MARK: Local gradients

    /// How each stage moves the next one (Docs/Reference.md §1's second table).
    public struct LocalGradients: Equatable, Sendable {
        /// ∂net/∂xᵢ = wᵢ.
        public var input: [Scalar]
        /// ∂net/∂wᵢ = xᵢ.
        public var weight: [Scalar]
        /// ∂net/∂b = 1.
        public var bias: Scalar
        /// ∂output/∂net = 1 - output², from the saved output.
        public var net: Scalar
        /// ∂error/∂output = 1.
        public var output: Scalar
        /// ∂loss/∂error = error.
        public var error: Scalar
    }

    /// The local gradients at a forward pass.
    public func localGradients(_ forward: Forward) -> LocalGradients {
        LocalGradients(
            input: weights, weight: forward.inputs, bias: 1,
            net: 1 - forward.output * forward.output, output: 1, error: forward.error)
    }

    // MARK: Backward

    /// The loss's gradient with respect to each quantity (Docs/Reference.md §1's global gradients).
    public struct Gradients: Equatable, Sendable {
        /// ∂L/∂output = error.
        public var output: Scalar
        /// ∂L/∂net = (1 - output²) · error.
        public var net: Scalar
        /// ∂L/∂b = ∂L/∂net.
        public var bias: Scalar
        /// ∂L/∂wᵢ = xᵢ · ∂L/∂net.
        public var weights: [Scalar]
        /// ∂L/∂xᵢ = wᵢ · ∂L/∂net.
        public var inputs: [Scalar]
    }

    /// The chain rule run backwards from the loss, using only what `forward` saved.
    ///
    ///     // forward: one sample's quantities  →  gradients of output, net, bias, weights (n), inputs (n)
    public func backward(_ forward: Forward) -> Gradients {
        let dOutput = forward.error
        let dNet = (1 - forward.output * forward.output) * dOutput
        return Gradients(
            output: dOutput, net: dNet, bias: dNet,
            weights: forward.inputs.map { $0 * dNet },
            inputs: weights.map { $0 * dNet })
    }
}

/// What went wrong when a neuron was given its inputs or hyperparameters.
public enum NeuronError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The number of inputs differs from the number of weights.
    case inputCount(expected: Int, actual: Int)
    /// A hyperparameter outside its allowed range.
    case invalidHyperparameter(name: String, value: String, allowed: String)

    public var description: String {
        switch self {
        case let .inputCount(expected, actual):
            return "the neuron has \(expected) weight\(expected == 1 ? "" : "s") but was given \(actual) input\(actual == 1 ? "" : "s")"
        case let .invalidHyperparameter(name, value, allowed):
            return "\(name) must be \(allowed), got \(value)"
        }
    }
}
