// W7: one training step of a small convolutional network, checked against the naive loops, then
// timed, its allocations counted, and its time split by layer (forward and backward) so that a
// reader sees where a step goes.
import AllocationCounter
import ArgumentParser
import Foundation
import NeuronCore
import NeuronTraining

/// W7: conv 32 3×3 relu → max pool 2 → conv 64 3×3 relu → max pool 2 → flatten → dense 128 relu
/// → dense 10 softmax, batch 64 of 28×28×1 images, SGD at 0.01, in Float.
struct ConvolutionWorkload {
    let id = "W7"
    let title = "CNN 28×28 conv32-pool-conv64-pool-128-10, batch 64"
    let batch = 64
    let learningRate: Float = 0.01

    /// The layers for images of 28×28×1.
    func layers() throws -> [any Layer<Float>] {
        let conv1 = try Conv2D<Float>(input: [28, 28, 1], filters: 32, kernel: (3, 3), activation: .relu)
        let pool1 = try MaxPool2D<Float>(input: conv1.outputShape, size: (2, 2))
        let conv2 = try Conv2D<Float>(input: pool1.outputShape, filters: 64, kernel: (3, 3), activation: .relu)
        let pool2 = try MaxPool2D<Float>(input: conv2.outputShape, size: (2, 2))
        let flatten = try Flatten<Float>(input: pool2.outputShape)
        return [
            conv1, pool1, conv2, pool2, flatten, try Dense<Float>(flatten.outputShape[0], 128, activation: .relu),
            try Dense<Float>(128, 10, activation: .softmax),
        ]
    }

    /// The network (seed 1) and a batch of uniform pixels with one-hot targets (seed 2), or its first `rows` rows.
    func make(rows: Int? = nil) throws -> (network: Network<Float>, x: Tensor<Float>, t: Tensor<Float>) {
        var network = try Network<Float>(try layers(), loss: .softmaxCrossEntropy)
        network.initialize(seed: 1)
        var generator = SeededGenerator(seed: 2)
        let n = rows ?? batch
        var x = Tensor<Float>(zeros: [n, 784]), t = Tensor<Float>(zeros: [n, 10])
        for i in 0..<x.count { x[i] = Float(generator.uniform(0, 1)) }
        for r in 0..<n { t[r, generator.index(below: 10)] = 1 }
        return (network, x, t)
    }

    /// Floating-point operations in one step: for each convolution and dense layer `2·rows·in·out`
    /// for the forward product, the same for the weight gradient, and again for the input
    /// gradient past the first layer (rows: output pixels × batch for a convolution).
    var flops: Double {
        guard let layers = try? layers() else { return .nan }
        var total = 0.0
        for (i, layer) in layers.enumerated() {
            let product: Double
            if let conv = layer as? Conv2D<Float> {
                product = 2 * Double(batch * conv.window.outputPixels) * Double(conv.window.patchSize) * Double(conv.filters)
            } else if let dense = layer as? Dense<Float> {
                product = 2 * Double(batch) * Double(dense.inputs) * Double(dense.outputs)
            } else {
                continue
            }
            total += (i == 0 ? 2 : 3) * product
        }
        return total
    }

    /// The loss of the first step from the naive loops (every layer written out as plain loops).
    func naiveLoss(rows: Int) throws -> Double {
        let (network, x, t) = try make(rows: rows)
        var y = try x.reshaped(to: [rows, 28, 28, 1])
        for (i, layer) in network.layers.enumerated() {
            let tensors = network.parameterTensors.filter { $0.layer == i }.map { network.parameter($0) }
            if let conv = layer as? Conv2D<Float> {
                y = Naive.conv2dForward(y, weight: tensors[0], bias: tensors[1], window: conv.window, activation: conv.activation).output
            } else if let pool = layer as? MaxPool2D<Float> {
                y = Naive.maxPool2d(y, outputGradient: nil, window: pool.window).output
            } else if layer is Flatten<Float> {
                // Channels first, as the layer reads them: (h, w, c) → (c, h, w).
                let (h, w, c) = (y.shape[1], y.shape[2], y.shape[3])
                var flat = Tensor<Float>(zeros: [rows, c * h * w])
                for n in 0..<rows {
                    for p in 0..<h * w { for ch in 0..<c { flat[n * c * h * w + ch * h * w + p] = y[(n * h * w + p) * c + ch] } }
                }
                y = flat
            } else if let dense = layer as? Dense<Float> {
                y = Naive.denseForward(y, weight: tensors[0], bias: tensors[1], activation: dense.activation).output
            }
        }
        return Double(Naive.loss(.softmaxCrossEntropy, output: Naive.softmax(y), targets: t))
    }

    /// The losses before each of `steps` SGD steps, through the engine.
    func engineLosses(steps: Int, rows: Int? = nil) throws -> [Double] {
        var (network, x, t) = try make(rows: rows)
        var sgd = try SGD<Float>(learningRate: learningRate)
        return try (0..<steps).map { _ in Double(try network.trainStep(x, targets: t, optimizer: &sgd)) }
    }

    /// Per-step seconds and heap allocations per step after the first.
    func time(blocks: Int) throws -> (seconds: [Double], allocationsPerStep: Double) {
        var (network, x, t) = try make()
        var sgd = try SGD<Float>(learningRate: learningRate)
        let seconds = try measureSteps(blocks: blocks, blockTarget: .milliseconds(20)) { try network.trainStep(x, targets: t, optimizer: &sgd) }
        let steps = 20
        allocation_counter_start()
        for _ in 0..<steps { try network.trainStep(x, targets: t, optimizer: &sgd) }
        let allocations = allocation_counter_stop()
        return (seconds, Double(allocations) / Double(steps))
    }

    /// Median seconds of each layer's forward and backward pass within a step.
    func layerTimes(repeats: Int) throws -> [(layer: String, forward: Double, backward: Double)] {
        var (network, x, t) = try make()
        try network.lossAndGradients(x, targets: t)  // sizes every buffer
        var layers = network.layers
        var gradients = network.gradients
        let clock = ContinuousClock()
        var result: [(String, Double, Double)] = []
        var offset = 0
        for i in layers.indices {
            let count = layers[i].parameterCount
            let input = i == 0 ? x : network.layers[i - 1].output
            let dy = i == layers.count - 1 ? network.output : network.layers[i + 1].inputGradient
            var forward: [Double] = [], backward: [Double] = []
            var state: [Float] = []
            for _ in 0..<repeats {
                network.parameters.withUnsafeBufferPointer { p in
                    let slice = UnsafeBufferPointer(rebasing: p[offset..<offset + count])
                    state.withUnsafeMutableBufferPointer { s in
                        forward.append(clock.measure { layers[i].forward(input, parameters: slice, state: s, mode: .training) }.seconds)
                    }
                    gradients.withUnsafeMutableBufferPointer { g in
                        let gslice = UnsafeMutableBufferPointer(rebasing: g[offset..<offset + count])
                        backward.append(
                            clock.measure {
                                layers[i].backward(
                                    input: input, outputGradient: dy, parameters: slice, gradients: gslice, computeInputGradient: i > 0)
                            }.seconds)
                    }
                }
            }
            offset += count
            result.append((layers[i].description, Timing(forward).median, Timing(backward).median))
        }
        return result
    }
}

extension Report {
    /// W7's figures.
    struct Convolution: Encodable {
        var title: String
        var flops: Double
        var checkLoss: Double
        var naiveLoss: Double
        var timing: Timing
        var gflops: Double
        var ceilingPercent: Double?
        var allocationsPerStep: Double
        var layers: [LayerTime]
        struct LayerTime: Encodable { var layer: String, forward: Double, backward: Double }
    }
}

extension Benchmarks {
    /// W7: checked against the naive loops on 4 rows, then timed with its per-layer split.
    func convolution(ceiling: Double?) throws -> Report.Convolution {
        let w = ConvolutionWorkload()
        let engine = try w.engineLosses(steps: 1, rows: 4)[0], naive = try w.naiveLoss(rows: 4)
        guard abs(engine - naive) <= 1e-4 * max(1, abs(naive)) else {
            throw ValidationError("W7 check failed: engine loss \(engine) vs naive \(naive)")
        }
        let (seconds, allocations) = try w.time(blocks: quick ? 5 : 30)
        let timing = Timing(seconds)
        let gflops = w.flops / timing.median / 1e9
        let layers = try w.layerTimes(repeats: quick ? 3 : 15).map {
            Report.Convolution.LayerTime(layer: $0.layer, forward: $0.forward, backward: $0.backward)
        }
        print("W7: \(w.title), float32 (checked: loss \(String(format: "%.6f", engine)) = naive \(String(format: "%.6f", naive)) on 4 rows)")
        print(
            table([
                ["", "median", "p10–p90", "GFLOP/s", "of ceiling", "allocs/step"],
                [
                    "Neuron", format(timing.median), "\(format(timing.p10))–\(format(timing.p90))", String(format: "%.1f", gflops),
                    ceiling.map { String(format: "%.1f%%", gflops / $0 * 100) } ?? "–", String(format: "%.2f", allocations),
                ],
            ]))
        print("  by layer (median forward / backward):")
        print(table(layers.map { [$0.layer, format($0.forward), format($0.backward)] }))
        print()
        return Report.Convolution(
            title: w.title, flops: w.flops, checkLoss: engine, naiveLoss: naive, timing: timing, gflops: gflops,
            ceilingPercent: ceiling.map { gflops / $0 * 100 }, allocationsPerStep: allocations, layers: layers)
    }
}
