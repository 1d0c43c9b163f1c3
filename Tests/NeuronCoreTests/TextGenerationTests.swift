import Foundation
import Testing

@testable import NeuronCore

@Suite("Text generation: a prompt continued token by token, with the layers' caches or by whole passes")
struct TextGenerationTests {
    @Test("runsByPosition: the position-wise layers and attention over a sequence; not recurrent layers, a context window or a layer over vectors")
    func runsByPosition() throws {
        let yes: [any Layer<Double>] = [
            try LayerNorm<Double>(shape: [4, 3]), try RMSNorm<Double>(shape: [4, 3]), try GELU<Double>(shape: [4, 3]),
            try Dropout<Double>(input: [4, 3], rate: 0.5), try Dense<Double>(3, 2, activation: .tanh, time: 4),
            try Residual<Double>([try LayerNorm<Double>(shape: [4, 3]), try CausalSelfAttention<Double>(time: 4, features: 3, heads: 1)]),
        ]
        let no: [any Layer<Double>] = [
            try LayerNorm<Double>(shape: [3]), try Dense<Double>(3, 2), try GRU<Double>(time: 4, inputs: 3, hidden: 2),
            try RNN<Double>(time: 4, inputs: 3, hidden: 2), try ContextWindow<Double>(time: 4, features: 3, size: 2),
            try Residual<Double>([try LayerNorm<Double>(shape: [4, 3]), try GRU<Double>(time: 4, inputs: 3, hidden: 3)]),
        ]
        for layer in yes { #expect(layer.runsByPosition, "\(layer)") }
        for layer in no { #expect(!layer.runsByPosition, "\(layer)") }
    }

    // MARK: Each layer at one position

    @Test(
        "Each layer at positions t, t+1, … from a pass whose later positions held other inputs gives its whole pass's output (and attention's weights)"
    )
    func layerSteps() throws {
        let (time, features) = (6, 4)
        let layers: [any Layer<Double>] = [
            try PositionEmbedding<Double>(time: time, features: features), try LayerNorm<Double>(shape: [time, features]),
            try RMSNorm<Double>(shape: [time, features]), try GELU<Double>(shape: [time, features], approximation: .tanh),
            try Dropout<Double>(input: [time, features], rate: 0.5), try Dense<Double>(features, 5, activation: .tanh, time: time),
            try CausalSelfAttention<Double>(time: time, features: features, heads: 2),
            try Residual<Double>([
                try RMSNorm<Double>(shape: [time, features]), try CausalSelfAttention<Double>(time: time, features: features, heads: 1),
            ]),
        ]
        var g = SeededGenerator(seed: 21)
        for layer in layers {
            let parameters = (0..<layer.parameterCount).map { _ in g.uniform(-1, 1) }
            var state: [Double] = []
            let x = Tensor<Double>.random([1, time, features], using: &g)
            var whole = layer, stepped = layer
            parameters.withUnsafeBufferPointer { p in
                state.withUnsafeMutableBufferPointer { s in
                    whole.forward(x, parameters: p, state: s, mode: .evaluation)
                    // Positions 2… first hold other inputs, then arrive one at a time.
                    var y = x
                    for i in 2 * features..<y.count { y[i] = g.uniform(-3, 3) }
                    stepped.forward(y, parameters: p, state: s, mode: .evaluation)
                    for t in 2..<time {
                        for i in t * features..<(t + 1) * features { y[i] = x[i] }
                        stepped.forward(position: t, y, parameters: p, state: s)
                    }
                }
            }
            expectClose(stepped.output.scalars, whole.output.scalars, tolerance: 1e-13)
            if let a = whole as? CausalSelfAttention<Double>, let b = stepped as? CausalSelfAttention<Double> {
                expectClose(b.attentionWeights.scalars, a.attentionWeights.scalars, tolerance: 1e-14)
            }
        }
    }
}
