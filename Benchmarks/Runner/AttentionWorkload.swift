// `attention`: causal self-attention's forward and backward passes on their own, at a small GPT's
// sizes: checked against the naive loops, then timed, allocations counted. No loss and no update:
// the layer's passes alone, with its gradient buffer cleared each step as a network's step clears it.
import AllocationCounter
import ArgumentParser
import NeuronCore

extension Benchmarks {
    /// The sizes timed: batch, time, features, heads.
    static let attentionSizes = [(32, 16, 64, 4), (32, 64, 192, 6)]

    /// Floating-point operations of one forward and backward pass: `2·m·n·k` per product,
    /// counting the full `(time, time)` products BLAS computes (the causal half of them is masked).
    /// Forward `8·B·T·F² + 4·B·T²·F` (qkv, scores, weighted sum, projection), backward twice that.
    static func attentionFlops(batch: Int, time: Int, features: Int) -> Double {
        let (b, t, f) = (Double(batch), Double(time), Double(features))
        return 3 * (8 * b * t * f * f + 4 * b * t * t * f)
    }

    func attention() throws {
        print("Causal self-attention, forward and backward (dx included), float32:")
        var rows = [["batch, time, features, heads", "forward", "forward + backward", "GFLOP/s", "allocs/step", "check"]]
        for (batch, time, features, heads) in Self.attentionSizes {
            var layer = try CausalSelfAttention<Float>(time: time, features: features, heads: heads)
            var parameters = [Float](repeating: 0, count: layer.parameterCount)
            var generator = SeededGenerator(seed: 1)
            // U(±0.1) rather than nanoGPT's N(0, 0.02²): scores of about ±0.2 rather than all but zero, for the check to see.
            for i in parameters.indices { parameters[i] = Float(generator.uniform(-0.1, 0.1)) }
            var gradients = parameters
            var state: [Float] = []
            func random() throws -> Tensor<Float> {
                try Tensor(shape: [batch, time, features], scalars: (0..<batch * time * features).map { _ in Float(generator.uniform(-1, 1)) })
            }
            let x = try random(), dy = try random()
            func forward() {
                parameters.withUnsafeBufferPointer { p in
                    state.withUnsafeMutableBufferPointer { layer.forward(x, parameters: p, state: $0, mode: .training) }
                }
            }
            func backward() {
                parameters.withUnsafeBufferPointer { p in
                    gradients.withUnsafeMutableBufferPointer { g in
                        g.update(repeating: 0)
                        layer.backward(input: x, outputGradient: dy, parameters: p, gradients: g, computeInputGradient: true)
                    }
                }
            }

            // Check: the first two samples against the naive loops, output and dx, relative to their largest entry.
            forward()
            backward()
            let check = try checkAttention(layer, parameters: parameters, x: x, dy: dy, samples: 2)
            guard check <= 1e-5 else { throw ValidationError("attention check failed: fast and naive differ by \(check) (relative)") }

            let blocks = quick ? 5 : 30
            let forwardTime = Timing(measureSteps(blocks: blocks, forward))
            let stepTime = Timing(
                measureSteps(blocks: blocks) {
                    forward()
                    backward()
                })
            allocation_counter_start()
            for _ in 0..<100 {
                forward()
                backward()
            }
            let allocations = allocation_counter_stop()
            let gflops = Self.attentionFlops(batch: batch, time: time, features: features) / stepTime.median / 1e9
            rows.append([
                "\(batch), \(time), \(features), \(heads)", format(forwardTime.median),
                "\(format(stepTime.median)) [\(format(stepTime.p10)) – \(format(stepTime.p90))]", String(format: "%.1f", gflops),
                String(format: "%.2f", Double(allocations) / 100), String(format: "%.1e", check),
            ])
        }
        print(table(rows) + "\n")
    }

    /// The largest gap between the layer's last output and input gradient and the naive loops' on
    /// the first `samples` samples, relative to the largest naive entry of each.
    func checkAttention(_ layer: CausalSelfAttention<Float>, parameters: [Float], x: Tensor<Float>, dy: Tensor<Float>, samples: Int) throws -> Float {
        let (time, features, heads) = (layer.time, layer.features, layer.heads)
        let part = samples * time * features
        let xs = try Tensor<Float>(shape: [samples, time, features], scalars: Array(x.scalars[..<part]))
        let dys = try Tensor<Float>(shape: [samples, time, features], scalars: Array(dy.scalars[..<part]))
        let (a, b, c) = (3 * features * features, 3 * features * features + 3 * features, 4 * features * features + 3 * features)
        let wAttn = try Tensor<Float>(shape: [3 * features, features], scalars: Array(parameters[..<a]))
        let bAttn = Tensor<Float>(vector: Array(parameters[a..<b]))
        let wProj = try Tensor<Float>(shape: [features, features], scalars: Array(parameters[b..<c]))
        let bProj = Tensor<Float>(vector: Array(parameters[c...]))
        let y = Naive.causalSelfAttentionForward(
            xs, attentionWeight: wAttn, attentionBias: bAttn, projectionWeight: wProj, projectionBias: bProj, heads: heads
        ).output
        let dx = Naive.causalSelfAttentionBackward(
            xs, attentionWeight: wAttn, attentionBias: bAttn, projectionWeight: wProj, projectionBias: bProj, heads: heads, outputGradient: dys
        ).input
        func gap(_ fast: ArraySlice<Float>, _ naive: [Float]) -> Float {
            let scale = naive.map(abs).max() ?? 1
            return zip(fast, naive).map { abs($0 - $1) }.max().map { $0 / max(scale, .leastNormalMagnitude) } ?? 0
        }
        return max(gap(layer.output.scalars[..<part], y.scalars), gap(layer.inputGradient.scalars[..<part], dx.scalars))
    }
}
