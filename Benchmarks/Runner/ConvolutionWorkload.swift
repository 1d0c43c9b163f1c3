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
struct ConvolutionWorkload: BatchSplitting {
    let id = "W7"
    let batch = 64
    let learningRate: Float = 0.01
    /// Split as F2's config (`Benchmarks/fashion-mnist-w7.yaml`) splits it, when asked.
    var batchThreads = 1

    var title: String { "CNN 28×28 conv32-pool-conv64-pool-128-10, batch \(batch)\(splitDescription)" }

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
        network.batchThreads = batchThreads
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

    /// Writes W7's exchange file for the peers (Benchmarks/peers/README.md, "W7"): the batch as
    /// NCHW `x` (one channel, so the same numbers as ours), one-hot `t`, and the parameters under
    /// our names in PyTorch's layouts (as our checkpoints store them), with the learning rate and
    /// the number of check steps.
    func writeExchangeFile(to directory: String, checkSteps: Int) throws -> String {
        let (network, x, t) = try make()
        return try writePeerExchange(
            id, network: network, x: try x.reshaped(to: [batch, 1, 28, 28]), targets: t, learningRate: learningRate, checkSteps: checkSteps,
            to: directory)
    }

    /// Per-step seconds and heap allocations per step after the first.
    func time(blocks: Int) throws -> (seconds: [Double], allocationsPerStep: Double) {
        let (network, x, t) = try make()
        return try withRunThreads { try timeSGDSteps(network, x: x, targets: t, learningRate: learningRate, blocks: blocks) }
    }

    /// The layout question measured on W7's two convolutions: the forward product as channels-last
    /// takes it (one gemm for the batch, `columns (batch·pixels, patch) · w (patch, filters)`, whose
    /// result is already the next layer's NHWC input), against the two ways channels-first can
    /// (one gemm per sample, `w (filters, patch) · columns_n (patch, pixels)`; or one gemm for the
    /// batch, `w · columns (patch, batch·pixels)`, then a pass that moves it to (batch, filters,
    /// pixels)). Median seconds of each.
    func layoutTimes(blocks: Int) throws -> [(layer: String, nhwc: Double, nchwPerSample: Double, nchwBatched: Double)] {
        try layers().compactMap { $0 as? Conv2D<Float> }.map { conv in
            let (p, k, f) = (conv.window.outputPixels, conv.window.patchSize, conv.filters)
            var generator = SeededGenerator(seed: 5)
            let columns = (0..<batch * p * k).map { _ in Float(generator.uniform(-1, 1)) }
            let weight = (0..<k * f).map { _ in Float(generator.uniform(-1, 1)) }
            var product = [Float](repeating: 0, count: batch * p * f), moved = product
            let batch = batch
            func median(_ body: () -> Void) -> Double { Timing(measureSteps(blocks: blocks, blockTarget: .milliseconds(20), body)).median }
            let nhwc = median {
                Float.blasGemm(
                    transposeA: false, transposeB: false, m: batch * p, n: f, k: k, alpha: 1, a: columns, lda: k, b: weight, ldb: f,
                    beta: 0, c: &product, ldc: f)
            }
            let perSample = median {
                columns.withUnsafeBufferPointer { pc in
                    product.withUnsafeMutableBufferPointer { py in
                        for n in 0..<batch {
                            Float.blasGemm(
                                transposeA: false, transposeB: false, m: f, n: p, k: k, alpha: 1, a: weight, lda: k,
                                b: pc.baseAddress! + n * k * p, ldb: p, beta: 0, c: py.baseAddress! + n * f * p, ldc: p)
                        }
                    }
                }
            }
            let batched = median {
                Float.blasGemm(
                    transposeA: false, transposeB: false, m: f, n: batch * p, k: k, alpha: 1, a: weight, lda: k, b: columns,
                    ldb: batch * p, beta: 0, c: &product, ldc: batch * p)
                product.withUnsafeBufferPointer { py in
                    moved.withUnsafeMutableBufferPointer { pm in
                        // (filters, batch, pixels) → (batch, filters, pixels)
                        for filter in 0..<f {
                            for n in 0..<batch {
                                (pm.baseAddress! + (n * f + filter) * p).update(from: py.baseAddress! + (filter * batch + n) * p, count: p)
                            }
                        }
                    }
                }
            }
            return (conv.description, nhwc, perSample, batched)
        }
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
        /// The step with the batch whole on BLAS's threads, when ``timing`` is of a split step.
        var wholeBatchTiming: Timing?
        var gflops: Double
        var ceilingPercent: Double?
        var allocationsPerStep: Double
        var layers: [LayerTime]
        var checkLosses: [Double]
        var peers: [String: PeerTiming] = [:]
        var layouts: [LayoutTime] = []
        struct LayoutTime: Encodable { var layer: String, nhwc: Double, nchwPerSample: Double, nchwBatched: Double }
    }
}

extension Benchmarks {
    /// W7: checked against the naive loops on 4 rows, then timed with its per-layer split; with
    /// `--peers`, PyTorch (eager and compiled) and JAX on the same weights and batch, each checked
    /// to agree on the losses of the first steps before it is timed, in interleaved rounds.
    func convolution(ceiling: Double?) throws -> Report.Convolution {
        // Each step's batch split over the threads, as F2's config does. Whole, the work outside
        // the products (im2col, pooling, the activations, col2im: a third of the step) runs on one
        // thread while OpenBLAS's others wait, and its threads gain little on these products'
        // shapes; split, each thread runs the whole step on its share. The whole batch on BLAS's
        // threads is timed too, for comparison.
        let w = ConvolutionWorkload().split(over: threads)
        let checkSteps = 3
        let engine = try w.engineLosses(steps: 1, rows: 4)[0], naive = try w.naiveLoss(rows: 4)
        guard abs(engine - naive) <= 1e-4 * max(1, abs(naive)) else {
            throw ValidationError("W7 check failed: engine loss \(engine) vs naive \(naive)")
        }
        let checkLosses = try w.engineLosses(steps: checkSteps)
        let specs = PeerSpec.convolution
        // 2e-4: the convolutions sum in other orders than ours, in Float, over three steps.
        var measured = try againstPeers(
            w.id, specs: specs, checkLosses: checkLosses, tolerance: 2e-4, peerSteps: quick ? 10 : 60,
            writeFile: { try w.writeExchangeFile(to: $0, checkSteps: checkSteps) }, time: { try w.time(blocks: quick ? 5 : 30) })
        let timing = Timing(measured.seconds), allocations = measured.allocationsPerStep
        let gflops = w.flops / timing.median / 1e9
        let whole = w.batchThreads > 1 ? Timing(try ConvolutionWorkload().time(blocks: quick ? 5 : 30).seconds) : nil
        // The layers on the whole batch on BLAS's threads (a split step runs them on half batches, side by side).
        let made = try w.make()
        var network = made.network
        network.batchThreads = 1
        let layers = try layerTimes(&network, x: made.x, targets: made.t, repeats: quick ? 3 : 15)
        print("W7: \(w.title), float32 (checked: loss \(String(format: "%.6f", engine)) = naive \(String(format: "%.6f", naive)) on 4 rows)")
        print(
            stepTable(
                timing: timing, allocations: allocations, flops: w.flops, ceiling: ceiling, specs: specs, peers: &measured.peers))
        if let whole { print(wholeBatchLine(whole, split: timing, threads: threads)) }
        print("  by layer (median forward / backward; the whole batch on BLAS's threads, unsplit):")
        print(table(layers.map { [$0.layer, format($0.forward), format($0.backward)] }))
        let layouts = try w.layoutTimes(blocks: quick ? 3 : 15)
        print("  the forward product by layout (median; im2col not included):")
        print(
            table(
                [["", "NHWC: one gemm", "NCHW: a gemm per sample", "NCHW: one gemm + permute"]]
                    + layouts.map { [$0.layer, format($0.nhwc), format($0.nchwPerSample), format($0.nchwBatched)] }))
        print()
        return Report.Convolution(
            title: w.title, flops: w.flops, checkLoss: engine, naiveLoss: naive, timing: timing, wholeBatchTiming: whole, gflops: gflops,
            ceilingPercent: ceiling.map { gflops / $0 * 100 }, allocationsPerStep: allocations, layers: layers,
            checkLosses: checkLosses, peers: measured.peers,
            layouts: layouts.map { .init(layer: $0.layer, nhwc: $0.nhwc, nchwPerSample: $0.nchwPerSample, nchwBatched: $0.nchwBatched) })
    }
}
