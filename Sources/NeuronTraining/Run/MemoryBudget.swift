// What a run will hold in memory, estimated from its config before anything large is allocated,
// and compared with the machine's physical memory: a run that cannot fit is refused in
// milliseconds with both figures and the key to change, instead of growing until the kernel or
// the allocator ends it. Every product saturates at Int.max, so a size past counting reads as
// "too large" rather than trapping.
import Foundation
import NeuronCore

/// A run's estimated memory, by part.
struct MemoryBudget {
    /// Parameters, their gradients and the optimizer's buffers (Adam 2, SGD with momentum 1).
    var parameters = 0
    /// Each layer's output and gradient buffers at the batch size (the larger of training's and evaluation's).
    var activations = 0
    /// What layers keep beside their outputs at the batch size (``Layer/cacheCount``): attention's
    /// weights, a convolution's unfolded input, the layers inside residual blocks.
    var caches = 0
    /// The dataset's features and targets, with their split copies.
    var data = 0

    var total: Int { parameters.adding(activations).adding(caches).adding(data) }

    /// The machine's physical memory in bytes.
    static var physicalMemory: Int { PhysicalMemory.bytes }

    /// `count` samples of `features` and `targets`: each row held twice (as read, then split off
    /// into training and validation rows), and three `Int` indices per row (the split's shuffled
    /// order, the subsets' indices, the epoch order).
    static func data(count: Int, features: Int, targets: Int, scalarBytes: Int) -> Int {
        count.times(features.adding(targets).times(scalarBytes).times(2).adding(3 * MemoryLayout<Int>.size))
    }

    /// The network's part for `features` inputs, its layers, batches of `batchSize` and the optimizer.
    mutating func addNetwork<Scalar: TensorScalar>(
        _ layers: [any Layer<Scalar>], features: Int, batchSize: Int, optimizer: OptimizerConfig, scalarBytes: Int
    ) {
        let optimizerBuffers = optimizer.kind == .adam ? 2 : (optimizer.momentum > 0 ? 1 : 0)
        var count = 0, units = features, caches = 0
        for layer in layers {
            count = count.adding(layer.parameterCount)
            units = units.adding(layer.outputShape.reduce(1) { $0.times($1) })
            // What grows faster than the output: a convolution's unfolded input, attention's
            // heads × time² weights, the layers inside a residual block.
            caches = caches.adding(layer.cacheCount)
        }
        parameters = count.times(2 + optimizerBuffers).times(scalarBytes)
        // Output, pre-activation, input gradient and output gradient per layer, batch by batch.
        activations = batchSize.times(units.times(4)).times(scalarBytes)
        self.caches = batchSize.times(caches).times(scalarBytes)
    }

    /// `12.3 GB`, `840 MB`, `15 KB`: a size for a message.
    static func text(_ bytes: Int) -> String {
        guard bytes < Int.max else { return "more than 9.2 EB" }
        let units = ["bytes", "KB", "MB", "GB", "TB", "PB", "EB"]
        var value = Double(bytes), unit = 0
        while value >= 1000, unit < units.count - 1 { (value, unit) = (value / 1000, unit + 1) }
        return unit == 0 ? "\(bytes) bytes" : String(format: "%.1f", value) + " " + units[unit]
    }
}
