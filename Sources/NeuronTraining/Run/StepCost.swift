// How long one training step of a config would take, estimated before the first one runs, so that
// a config whose every step takes hours (a block of a hundred thousand positions, a batch of millions) is
// said to be such at once instead of found out by waiting. A step runs to its end before a signal
// is honoured (or until the stop's grace period ends), so the warning matters beyond patience.
import Foundation
import NeuronCore

/// The arithmetic of one training step, from the layers' shapes alone, in two kinds that run at
/// different rates: matrix products with the layers' weights, and causal attention's scores.
public struct StepCost: Sendable {
    /// Floating-point operations (a multiply-add is two) in products with the layers' weights.
    public var products = 0.0
    /// Floating-point operations in attention's scores and their weighted sums.
    public var attention = 0.0
    /// The features and heads of the first attention layer, whose rate ``rates()`` measures.
    public var attentionShape: (features: Int, heads: Int)?

    /// One training step over `batch` samples: the forward pass's operations, three times (the
    /// backward pass computes two products for each of the forward's, PaLM's 6N rule).
    ///
    /// Each layer's weights are used once per output position (`outputs / last output
    /// dimension`: a dense layer's time, a convolution's pixels), two operations each; a token
    /// or position table is read or added, not multiplied, and counts nothing; causal attention adds its scores and
    /// their weighted sum, `2 · time² · features` with the masked half skipped. A container counts
    /// its inner layers.
    ///
    ///     // products(layer) = 2 · parameters · outputs / outputShape.last
    ///     // attention(layer) = 2 · time² · features
    ///     // step = 3 · batch · Σ (products + attention)
    public init<Scalar: TensorScalar>(layers: [any Layer<Scalar>], batch: Int) {
        for layer in layers { add(layer) }
        (products, attention) = (3 * Double(batch) * products, 3 * Double(batch) * attention)
    }

    /// One sample's forward operations through `layer`, added.
    private mutating func add<Scalar: TensorScalar>(_ layer: any Layer<Scalar>) {
        let inner = layer.innerLayers
        for (_, layer) in inner { add(layer) }
        guard inner.isEmpty else { return }
        if layer is any TokenInput || layer is PositionEmbedding<Scalar> { return }  // tables read or added, not multiplied
        let outputs = Double(layer.outputShape.reduce(1, *)), last = Double(max(1, layer.outputShape.last ?? 1))
        products += 2 * Double(layer.parameterCount) * outputs / last
        if let layer = layer as? CausalSelfAttention<Scalar> {
            attention += 2 * Double(layer.time) * Double(layer.time) * Double(layer.features)
            if attentionShape == nil { attentionShape = (layer.features, layer.heads) }
        }
    }

    /// All of a step's operations.
    public var operations: Double { products + attention }

    /// Seconds a step takes at `rates` (operations a second of each kind).
    public func seconds(at rates: (products: Double, attention: Double)) -> Double {
        products / rates.products + (attention > 0 ? attention / rates.attention : 0)
    }

    /// This machine's rates, measured on the run's threads (a few tens of milliseconds): the best
    /// of three 512 × 512 × 512 single-precision products through BLAS, and the best of three
    /// training passes through one attention layer of ``attentionShape`` over 256 positions (the
    /// tiled path a long block takes). A step's own products are smaller and slower, so a time
    /// from these rates is a floor.
    public func rates() -> (products: Double, attention: Double) {
        let n = 512
        let a = try! Tensor<Float>(shape: [n, n], scalars: (0..<n * n).map { Float($0 % 7) - 3 })  // n · n scalars
        var c = Tensor<Float>(zeros: [n, n])
        let products = 2 * Double(n * n * n) / Self.best { try! Tensor.matmul(a, a, into: &c) }  // shapes fixed above
        guard let (features, heads) = attentionShape else { return (products, .infinity) }
        let time = 256
        // Valid sizes: those of a layer already built, at a shorter time.
        var network = try! Network<Float>(
            [CausalSelfAttention<Float>(time: time, features: features, heads: heads, path: .tiled(tile: AttentionPath.defaultTile))],
            loss: .halfSquaredError)
        network.initialize(seed: 1)
        let x = try! Tensor<Float>(shape: [1, time * features], scalars: (0..<time * features).map { Float($0 % 5) / 5 - 0.4 })
        let targets = Tensor<Float>(zeros: [1, time * features])
        let cost = StepCost(layers: network.layers, batch: 1)
        let seconds = Self.best { _ = try! network.lossAndGradients(x, targets: targets) }
        // The pass's own products, at the product rate, are not attention's time.
        return (products, cost.attention / max(1e-9, seconds - cost.products / products))
    }

    /// The fastest of three runs of `body`, in seconds.
    private static func best(_ body: () -> Void) -> Double {
        var best = Double.infinity
        for _ in 0..<3 {
            let start = ContinuousClock.now
            body()
            let elapsed = ContinuousClock.now - start
            best = min(best, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18)
        }
        return max(best, 1e-9)
    }

    /// The steps worth a warning: longer than this, in seconds.
    public static let warningSeconds = 600.0

    /// A warning for a step that would take longer than ``warningSeconds`` at `rates`; nil for a
    /// shorter one. The rates are measured only for a step of more than 10¹¹ operations (at a
    /// rate of 10⁹ a second, the slowest attention seen, under two minutes).
    public func warning(rates: () -> (products: Double, attention: Double)) -> String? {
        guard operations > 1e11 else { return nil }
        let measured = rates(), seconds = seconds(at: measured)
        guard seconds > Self.warningSeconds else { return nil }
        // Two figures below 10 GFLOP/s (a debug build's attention runs at a few tenths), whole ones above.
        let gflops = { (rate: Double) in String(format: rate < 1e10 ? "%.2g" : "%.0f", rate / 1e9) }
        let rate =
            attention > 0
            ? "\(gflops(measured.products)) GFLOP/s of matrix products and \(gflops(measured.attention)) of attention"
            : "\(gflops(measured.products)) GFLOP/s of matrix products"
        return
            "one training step of this config is about \(String(format: "%.1e", operations)) floating-point operations: at this machine's \(rate), at least \(Self.duration(seconds)) a step (a stop signal ends the run after the step in progress, or after the stop's grace period without a new checkpoint); a smaller data.blockSize, training.batchSize or model makes steps shorter"
    }

    /// `14 minutes`, `3.2 hours`, `2.1 days`.
    static func duration(_ seconds: Double) -> String {
        switch seconds {
        case ..<3600: String(format: "%.0f minutes", seconds / 60)
        case ..<(48 * 3600): String(format: "%.1f hours", seconds / 3600)
        default: String(format: "%.1f days", seconds / 86400)
        }
    }
}
