// Timing: blocks of steps long enough that reading the clock costs nothing, after a warm-up;
// results as median and 10th/90th percentiles of the per-step time.
import AllocationCounter
import Foundation
import NeuronCore

#if canImport(Glibc)
import Glibc
#endif

/// Median, 10th and 90th percentile of per-step seconds.
struct Timing: Codable {
    var median: Double
    var p10: Double
    var p90: Double
    var samples: Int

    init(_ seconds: [Double]) {
        let sorted = seconds.sorted()
        func percentile(_ p: Double) -> Double {
            sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int((p * Double(sorted.count - 1)).rounded()))]
        }
        median = percentile(0.5)
        p10 = percentile(0.1)
        p90 = percentile(0.9)
        samples = sorted.count
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}

/// Per-step seconds of `step`, measured in `blocks` blocks of enough steps to last ~`blockTarget`,
/// after `warmup` of untimed running.
func measureSteps(
    blocks: Int, blockTarget: Duration = .microseconds(500), warmup: Duration = .milliseconds(200),
    _ step: () throws -> Void
) rethrows -> [Double] {
    let clock = ContinuousClock()
    var stepsPerBlock = 1
    var warmed = Duration.zero
    while warmed < warmup {  // warm up and calibrate the block size together
        let elapsed = try clock.measure { for _ in 0..<stepsPerBlock { try step() } }
        warmed += elapsed
        if elapsed < blockTarget { stepsPerBlock *= 2 }
    }
    var seconds: [Double] = []
    seconds.reserveCapacity(blocks)
    for _ in 0..<blocks {
        let elapsed = try clock.measure { for _ in 0..<stepsPerBlock { try step() } }
        seconds.append(elapsed.seconds / Double(stepsPerBlock))
    }
    return seconds
}

/// Seconds in the unit that reads best: ns, µs, ms or s.
func format(_ seconds: Double) -> String {
    guard seconds.isFinite else { return "–" }
    if seconds < 0 { return "−" + format(-seconds) }
    switch seconds {
    case ..<1e-6: return String(format: "%.1f ns", seconds * 1e9)
    case ..<1e-3: return String(format: "%.2f µs", seconds * 1e6)
    case ..<1: return String(format: "%.2f ms", seconds * 1e3)
    default: return String(format: "%.2f s", seconds)
    }
}

/// Columns padded to their widest cell.
func table(_ rows: [[String]]) -> String {
    let widths = (0..<(rows.map(\.count).max() ?? 0)).map { j in rows.map { $0.count > j ? $0[j].count : 0 }.max() ?? 0 }
    return rows.map { row in
        "  "
            + row.enumerated().map { j, cell in j == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[j] - cell.count + 2) }
            .joined()
    }.joined(separator: "\n")
}

/// Median seconds of each layer's forward and backward pass within a step of `network` on `x`
/// and `targets` (W7, W8): one step sizes every buffer, then each layer's passes are timed alone,
/// `repeats` times, on the input and output gradient that step left (the last layer's output
/// gradient is the network's output, of the same shape: the values do not change the work).
func layerTimes(_ network: inout Network<Float>, x: Tensor<Float>, targets: Tensor<Float>, repeats: Int) throws -> [Report.LayerTime] {
    try network.lossAndGradients(x, targets: targets)
    var layers = network.layers
    var gradients = network.gradients
    let clock = ContinuousClock()
    var result: [Report.LayerTime] = []
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
                            layers[i].backward(input: input, outputGradient: dy, parameters: slice, gradients: gslice, computeInputGradient: i > 0)
                        }.seconds)
                }
            }
        }
        offset += count
        result.append(Report.LayerTime(layer: layers[i].description, forward: Timing(forward).median, backward: Timing(backward).median))
    }
    return result
}

/// Per-step seconds of `network` stepping on one batch with plain SGD, and its heap allocations
/// per step after the first (W7, W8).
func timeSGDSteps(
    _ network: Network<Float>, x: Tensor<Float>, targets t: Tensor<Float>, learningRate: Float, blocks: Int
) throws -> (seconds: [Double], allocationsPerStep: Double) {
    try timeSteps(network, x: x, targets: t, optimizer: try SGD<Float>(learningRate: learningRate), blocks: blocks)
}

/// Per-step seconds of `network` stepping on one batch with `optimizer`, in blocks of at least
/// `blockTarget`, and its heap allocations per step over `counted` steps after the timed ones (W7–W12).
func timeSteps<O: Optimizer<Float>>(
    _ network: Network<Float>, x: Tensor<Float>, targets t: Tensor<Float>, optimizer: O, blocks: Int,
    blockTarget: Duration = .milliseconds(20), counted steps: Int = 20
) throws -> (seconds: [Double], allocationsPerStep: Double) {
    var network = network
    var optimizer = optimizer
    let seconds = try measureSteps(blocks: blocks, blockTarget: blockTarget) { try network.trainStep(x, targets: t, optimizer: &optimizer) }
    allocation_counter_start()
    for _ in 0..<steps { try network.trainStep(x, targets: t, optimizer: &optimizer) }
    let allocations = allocation_counter_stop()
    return (seconds, Double(allocations) / Double(steps))
}

/// The line under a split step's table giving the step on the whole batch (W7, W8):
/// `  the batch whole on BLAS's 2 threads instead: 545.01 µs (1.61× the split step's time)`.
func wholeBatchLine(_ whole: Timing, split: Timing, threads: Int) -> String {
    "  the batch whole on BLAS's \(threads) threads instead: \(format(whole.median)) "
        + String(format: "(%.2f× the split step's time)", whole.median / split.median)
}

/// A workload whose steps can split their batch over threads (`Network.batchThreads`), as a
/// shipped config does (W7 as F2's, W9–W12 as `Data/words-transformer.yaml`).
protocol BatchSplitting {
    /// The threads each step splits its batch over; 1 computes the batch whole on BLAS's threads.
    var batchThreads: Int { get set }
}

extension BatchSplitting {
    /// This workload with each step's batch split over `threads` threads.
    func split(over threads: Int) -> Self {
        var w = self
        w.batchThreads = threads
        return w
    }

    /// `body` with the process's BLAS threads as a run of this workload sets them
    /// (``withThreads(splitting:_:)``).
    func withRunThreads<T>(_ body: () throws -> T) rethrows -> T {
        try withThreads(splitting: batchThreads, body)
    }

    /// What a title says of the split: `, split over n threads`, or nothing for a whole batch.
    var splitDescription: String { batchThreads > 1 ? ", split over \(batchThreads) threads" : "" }
}

/// The process's resident memory (Linux's `/proc/self/status`): the peak a stretch of work reaches
/// (W9–W12), read the way a user's `top` or `time -v` would see it.
struct PeakMemory: Codable {
    /// Bytes resident when the stretch began (`VmRSS`).
    var before: Int
    /// The most bytes resident during it (`VmHWM`).
    var peak: Int
    /// Whether the peak was reset to `before` when the stretch began (`/proc/self/clear_refs`,
    /// Linux 4.0 on); if not, `peak` is the process's since it started, an upper bound.
    var reset: Bool

    /// `VmRSS` and `VmHWM` in bytes, or nil where `/proc/self/status` does not give them.
    static func read() -> (resident: Int, peak: Int)? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        func kibibytes(_ field: String) -> Int? {
            status.split(separator: "\n").first { $0.hasPrefix(field + ":") }?.split(separator: " ").dropFirst().first.flatMap { Int($0) }
        }
        guard let resident = kibibytes("VmRSS"), let peak = kibibytes("VmHWM") else { return nil }
        return (resident * 1024, peak * 1024)
    }

    /// The peak of `body`, or nil where the process's memory cannot be read.
    static func during<T>(_ body: () throws -> T) rethrows -> (result: T, memory: PeakMemory?) {
        trimMalloc()
        // "5" resets the peak to the current size (proc(5), clear_refs).
        var reset = false
        if let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") {
            reset = (try? handle.write(contentsOf: Data("5".utf8))) != nil
            try? handle.close()
        }
        let start = read()
        let result = try body()
        guard let start, let end = read() else { return (result, nil) }
        return (result, PeakMemory(before: start.resident, peak: end.peak, reset: reset))
    }

    /// Hands the memory that earlier work freed and malloc kept back to the system (glibc's
    /// `malloc_trim(0)`, which Swift's Glibc module does not declare): else `before` counts it and
    /// the stretch reuses it unseen. Nothing where there is no such function.
    static func trimMalloc() {
        #if canImport(Glibc)
        typealias Trim = @convention(c) (Int) -> Int32
        // RTLD_DEFAULT, glibc's null handle: the symbol as the process already links it.
        guard let trim = dlsym(nil, "malloc_trim") else { return }
        _ = unsafeBitCast(trim, to: Trim.self)(0)
        #endif
    }

    /// `412.3 MiB`.
    static func format(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
}

/// `body` with the process's BLAS threads as a run that splits each batch over `batchThreads` sets
/// them, once, at its start (one per product when split: `BLAS.threadCount(blasThreads:batchThreads:)`;
/// two shares each on two OpenBLAS threads spin against each other on two cores); restored after.
func withThreads<T>(splitting batchThreads: Int, _ body: () throws -> T) rethrows -> T {
    let threads = BLAS.threadCount
    BLAS.threadCount = BLAS.threadCount(blasThreads: threads, batchThreads: batchThreads)
    defer { BLAS.threadCount = threads }
    return try body()
}
