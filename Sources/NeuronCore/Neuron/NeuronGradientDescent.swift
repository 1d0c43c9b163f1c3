// Gradient descent on one neuron (Docs/Reference.md §3): each step computes the gradients from the current
// parameters, then subtracts a share (the learning rate) of each from its parameter.

extension Neuron {
    /// One gradient-descent step on one sample: `w -= lr * ∂L/∂w`, `b -= lr * ∂L/∂b`.
    ///
    /// The order is Docs/Reference.md §3's: net, output, error, `g = error * (1 - output²)`, `∂L/∂w = g * x`,
    /// then the two updates; in Double this reproduces the reference trajectory bit for bit.
    /// - Returns: the loss before the update.
    /// - Throws: ``NeuronError/inputCount(expected:actual:)`` when `inputs` and `weights` differ in count.
    @inlinable @discardableResult
    public mutating func step(inputs: [Scalar], target: Scalar, learningRate: Scalar) throws(NeuronError) -> Scalar {
        guard inputs.count == weights.count else {
            throw .inputCount(expected: weights.count, actual: inputs.count)
        }
        return stepUnchecked(inputs: inputs, target: target, learningRate: learningRate)
    }

    @inlinable
    mutating func stepUnchecked(inputs: [Scalar], target: Scalar, learningRate: Scalar) -> Scalar {
        let forward = forwardUnchecked(inputs: inputs, target: target)
        let dNet = (1 - forward.output * forward.output) * forward.error
        for i in weights.indices { weights[i] -= learningRate * (inputs[i] * dNet) }
        bias -= learningRate * dNet
        return forward.loss
    }

    /// Trains on one sample for `iterations` steps of gradient descent.
    /// - Parameters:
    ///   - inputs: the sample's inputs, one per weight.
    ///   - target: the value the output should reach.
    ///   - learningRate: the share of each gradient subtracted per step; finite and positive.
    ///   - iterations: the number of steps; zero or more.
    /// - Returns: the loss before each step, in order (`iterations` values).
    /// - Throws: ``NeuronError`` for mismatched counts or a learning rate or iteration count out of range.
    @discardableResult
    public mutating func train(
        inputs: [Scalar], target: Scalar, learningRate: Scalar, iterations: Int
    ) throws(NeuronError) -> [Scalar] {
        guard inputs.count == weights.count else {
            throw .inputCount(expected: weights.count, actual: inputs.count)
        }
        guard learningRate.isFinite, learningRate > 0 else {
            throw .invalidHyperparameter(name: "learning rate", value: "\(learningRate)", allowed: "a finite number greater than 0")
        }
        guard iterations >= 0 else {
            throw .invalidHyperparameter(name: "iterations", value: "\(iterations)", allowed: "0 or more")
        }
        var history: [Scalar] = []
        history.reserveCapacity(iterations)
        for _ in 0..<iterations {
            history.append(stepUnchecked(inputs: inputs, target: target, learningRate: learningRate))
        }
        return history
    }
}
