@testable import NeuronCore

/// One layer run on its own: forward on `x`, then backward of `dy`, with freshly laid-out
/// parameter, gradient and state buffers, as a network would hand them over.
struct LayerRun<Scalar: TensorScalar> {
    var output: Tensor<Scalar>
    var gradients: [Scalar]
    var inputGradient: Tensor<Scalar>
    var state: [Scalar]
}

func runLayer<L: Layer>(
    _ layer: inout L, x: Tensor<L.Scalar>, parameters: [L.Scalar], state: [L.Scalar]? = nil, dy: Tensor<L.Scalar>?,
    mode: LayerMode = .training
) -> LayerRun<L.Scalar> {
    var state = state ?? Array(repeating: 0, count: layer.stateCount)
    var gradients = Array(repeating: L.Scalar(0), count: parameters.count)
    parameters.withUnsafeBufferPointer { p in
        state.withUnsafeMutableBufferPointer { s in layer.forward(x, parameters: p, state: s, mode: mode) }
    }
    let output = layer.output
    if let dy {
        parameters.withUnsafeBufferPointer { p in
            gradients.withUnsafeMutableBufferPointer { g in
                layer.backward(input: x, outputGradient: dy, parameters: p, gradients: g, computeInputGradient: true)
            }
        }
    }
    return LayerRun(output: output, gradients: gradients, inputGradient: dy == nil ? output : layer.inputGradient, state: state)
}

/// `count` uniform numbers in [-1, 1).
func randomScalars<Scalar: TensorScalar>(_ count: Int, using generator: inout SeededGenerator) -> [Scalar] {
    (0..<count).map { _ in Scalar(generator.uniform(-1, 1)) }
}
