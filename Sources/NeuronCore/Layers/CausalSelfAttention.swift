// Causal multi-head self-attention, a GPT's core: every position asks (a query) each position up to
// itself (their keys) how much of its value to take, through a softmax over scaled dot products,
// in `heads` independent subspaces whose answers are joined and projected back. It is the one layer
// that mixes positions; the causal mask keeps each position from seeing later ones. Its parameters
// are nanoGPT's `CausalSelfAttention` module's: `c_attn` (the query, key and value projections
// fused in one nn.Linear) and `c_proj`, in nn.Linear's `(out, in)` layout, so that a checkpoint maps
// to torch with no permutation. Each pass is one call to its kernel (`Kernels/AttentionKernels.swift`),
// on one of two paths: the full `(time, time)` weights, or tiles up to the diagonal with an online
// softmax (FlashAttention's), which keeps only each query's log-sum-exp; the layer takes the one
// measured faster at its block (`AttentionPath.measured(time:)`) unless told.

/// Causal multi-head self-attention over a sequence, e.g. `CausalSelfAttention(64, 4 heads, time 16)`:
///
///     [q | k | v] = x·W_attnᵀ + b_attn     per head h, on its size = features/heads columns of q, k, v:
///     att_h = softmax(q_h·k_hᵀ/√size + mask)     mask: -∞ above the diagonal (position t sees 0...t)
///     y = [att_0·v_0 | … | att_{heads-1}·v_{heads-1}]·W_projᵀ + b_proj
///
/// A sample is `(time, features)` in and out, row-major; a batch's output is `(batch, time,
/// features)`. Its parameter slice holds, as nanoGPT names and nn.Linear lays them out (weights
/// `(out, in)`, so ``Layer/pytorchOrder(of:)`` is nil for every tensor): `c_attn.weight (3·features,
/// features)` (rows: the query's features, then the key's, then the value's; head `h` their rows
/// `h·size ..< (h + 1)·size`), `c_attn.bias (3·features)`, `c_proj.weight (features, features)`,
/// `c_proj.bias (features)`. The attention weights of the last forward pass stay readable,
/// ``attentionWeights`` (kept by the full path, recomputed on the tiled path when read).
public struct CausalSelfAttention<Scalar: TensorScalar>: Layer {
    /// Positions per sample.
    public let time: Int
    /// Features per position, going in and coming out.
    public let features: Int
    /// Attention heads; each attends over `features / heads` of the features.
    public let heads: Int

    /// How the heads are computed: ``AttentionPath/measured(time:)`` unless told.
    public let path: AttentionPath

    /// Features per head: `features / heads`.
    public var headSize: Int { features / heads }

    /// What forward keeps for backward, and backward's own buffers; sized when a batch shape is
    /// first seen, then reused.
    public struct Cache: Sendable {
        /// `y`, `(batch, time, features)`.
        public var output = Tensor<Scalar>(zeros: [0, 0, 0])
        /// Every position's `[q | k | v] = x·W_attnᵀ + b_attn`, `(batch·time, 3·features)`: the operands of every head's products.
        public var qkv = Tensor<Scalar>(zeros: [0, 0])
        /// The full path's attention weights, `(batch, heads, time, time)`: row `t` of a head is
        /// the softmax over keys `0...t`, zero after; backward's softmax derivative comes from them alone.
        public var attention = Tensor<Scalar>(zeros: [0, 0, 0, 0])
        /// The tiled path's `log Σ_{j≤t} e^(s_tj)` of every query, `(batch, heads, time)`: with `q`
        /// and `k`, any weight `e^(s_tj - lse_t)` again.
        public var logSumExp = Tensor<Scalar>(zeros: [0, 0, 0])
        /// The heads' weighted sums side by side, `(batch·time, features)`: `c_proj`'s input, `dW_proj`'s operand.
        public var attended = Tensor<Scalar>(zeros: [0, 0])
        /// `da = dy·W_proj`, the gradient of ``attended``, `(batch·time, features)`.
        public var attendedGradient = Tensor<Scalar>(zeros: [0, 0])
        /// The full path's gradient of one head's weights, then of its scores, `(time, time)`: the
        /// heads run one after another.
        public var scoreGradient = Tensor<Scalar>(zeros: [0, 0])
        /// The tiled path's workspace: one pair of tiles' scores and their gradient, the query
        /// tile's running maxima and sums, one head's softmax row sums (`AttentionTiles`).
        public var tiles = Tensor<Scalar>(zeros: [0])
        /// `[dq | dk | dv]`, `(batch·time, 3·features)`.
        public var qkvGradient = Tensor<Scalar>(zeros: [0, 0])
        /// `dx`, like `x`, only when asked for.
        public var inputGradient = Tensor<Scalar>(zeros: [0, 0, 0])
    }

    /// The layer's caches.
    public private(set) var cache = Cache()

    /// Causal self-attention over `time` positions of `features`, in `heads` heads.
    /// - Parameters:
    ///   - time: positions per sample.
    ///   - features: features per position, in and out; a multiple of `heads`.
    ///   - heads: attention heads, each over `features / heads` features.
    ///   - path: how the heads are computed; nil: ``AttentionPath/measured(time:)``, the faster at `time`.
    /// - Throws: ``NetworkError/invalidLayer(_:reason:)`` unless every size is at least 1,
    ///   `features` is a multiple of `heads`, a tile is at least 1, and its `4·features² +
    ///   4·features` parameters and a batch's attention weights per sample, `heads·time²`, can be
    ///   held (the tiled path keeps none, but ``attentionWeights`` computes them when read).
    public init(time: Int, features: Int, heads: Int, path: AttentionPath? = nil) throws(NetworkError) {
        let name = "CausalSelfAttention(\(features), \(heads) heads, time \(time))"
        guard time >= 1, features >= 1, heads >= 1 else {
            throw .invalidLayer(name, reason: "time, features and heads must be at least 1, got \(time), \(features) and \(heads)")
        }
        guard features % heads == 0 else {
            throw .invalidLayer(
                name, reason: "features (\(features)) must be a multiple of heads (\(heads)): each head takes features / heads of them")
        }
        guard let square = heldCount([features, features]), heldCount([4, square]) != nil,
            heldCount([time, 3 * features]) != nil, heldCount([heads, time, time]) != nil
        else {
            throw .invalidLayer(name, reason: "its parameters or a sample's attention weights are more than can be held")
        }
        if case .tiled(let tile) = path, tile < 1 { throw .invalidLayer(name, reason: "a tile must be at least 1 row, got \(tile)") }
        self.time = time
        self.features = features
        self.heads = heads
        self.path = path ?? .measured(time: time)
    }

    /// `CausalSelfAttention(64, 4 heads, time 16)`.
    public var description: String { "CausalSelfAttention(\(features), \(heads) head\(heads == 1 ? "" : "s"), time \(time))" }

    public var inputShape: [Int] { [time, features] }
    public var outputShape: [Int] { [time, features] }

    public var parameterShapes: [(name: String, shape: [Int])] {
        [
            ("c_attn.weight", [3 * features, features]), ("c_attn.bias", [3 * features]),
            ("c_proj.weight", [features, features]), ("c_proj.bias", [features]),
        ]
    }

    /// The query-key-value and output projections' weights, products' matrices; not their biases.
    public func isDecayed(_ tensor: String) -> Bool { tensor == "c_attn.weight" || tensor == "c_proj.weight" }

    public func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        try! CausalSelfAttention<Other>(time: time, features: features, heads: heads, path: path)  // sizes were checked when self was built
    }

    public var output: Tensor<Scalar> { cache.output }
    public var inputGradient: Tensor<Scalar> { cache.inputGradient }
    /// Both paths keep `[q | k | v]` and its gradient (`3·time·features` each), the heads' sums and
    /// their gradient (`time·features` each). The full path's weights, `heads × time²`, grow with the
    /// square of the block, and its score gradient (`time²`, one head at a time, counted per sample
    /// for simplicity); the tiled path keeps `heads·time` log-sum-exps and its tiles (counted per
    /// sample likewise): linear in the block.
    public var cacheCount: Int {
        let both = time.times(features).times(8)
        switch path {
        case .full: return time.times(time).times(heads + 1).adding(both)
        case .tiled(let tile): return heads.times(time).adding(AttentionTiles(tile: tile, time: time).count).adding(both)
        }
    }

    /// The last forward pass's attention weights, `(batch, heads, time, time)`: entry `[b, h, t, j]`
    /// is how much position `t` of sample `b` takes of position `j`'s value in head `h`; each row
    /// sums to 1 and is zero for `j > t`. The full path kept them; the tiled path recomputes them
    /// from `[q | k | v]` and the log-sum-exps on each read (allocating them: for reading, such as
    /// attention maps, not in a training step).
    public var attentionWeights: Tensor<Scalar> {
        switch path {
        case .full: cache.attention
        case .tiled: Kernels.attentionWeights(qkv: cache.qkv, logSumExp: cache.logSumExp, time: time, features: features, heads: heads)
        }
    }

    /// nanoGPT's: every weight from N(0, 0.02²), every bias zero. (nanoGPT also narrows `c_proj.weight`
    /// to N(0, (0.02/√(2·layers))²) for a stack of `layers` blocks, a depth this layer does not know.)
    public func initialize(
        parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        using generator: inout SeededGenerator
    ) {
        let at = AttentionParameters(features: features)
        for i in at.attentionWeight..<at.attentionBias { parameters[i] = Scalar(0.02 * generator.normal()) }
        for i in at.attentionBias..<at.projectionWeight { parameters[i] = 0 }
        for i in at.projectionWeight..<at.projectionBias { parameters[i] = Scalar(0.02 * generator.normal()) }
        for i in at.projectionBias..<at.count { parameters[i] = 0 }
    }

    // MARK: Forward

    /// Runs the layer on a batch, keeping the projections, the attention weights (full path) or
    /// the log-sum-exps (tiled path) and the heads' sums that backward needs.
    public mutating func forward(
        _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        mode: LayerMode
    ) {
        // x, y, attended: (batch, time, features)  qkv: (batch, time, 3·features)
        // full: attention (batch, heads, time, time)  tiled: logSumExp (batch, heads, time)
        Kernels.attentionForward(
            x, parameters: parameters, time: time, features: features, heads: heads, path: path,
            qkv: &cache.qkv, attention: &cache.attention, logSumExp: &cache.logSumExp, tiles: &cache.tiles,
            attended: &cache.attended, into: &cache.output)
    }

    /// A position attends to the keys and values of the positions up to it, which the caches keep.
    public var runsByPosition: Bool { true }

    /// Position `position` alone, for a batch of one: its query, key and value, its query over the
    /// keys of positions `0...position` (the earlier ones kept in ``Cache/qkv`` by the passes
    /// before: the key/value cache), the projection of its heads' sums. Row `position` of every
    /// cache is written as the whole pass writes it.
    public mutating func forward(
        position t: Int, _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>
    ) {
        // x, y, attended: (1, time, features), their row t  qkv: (time, 3·features), rows 0...t  attention: (1, heads, time, time), row t
        Kernels.attentionForward(
            position: t, x, parameters: parameters, time: time, features: features, heads: heads,
            qkv: &cache.qkv, attention: &cache.attention, scratch: &cache.tiles, attended: &cache.attended, into: &cache.output)
    }

    // MARK: Backward

    /// Adds every parameter's gradient into `gradients`, and `dx` when asked: every product a
    /// gemm, the softmax's derivative row by row from the saved weights (full path) or from each
    /// tile's weights recomputed (tiled path).
    public mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>,
        computeInputGradient: Bool
    ) {
        // x, dx, dy, attendedGradient: (batch, time, features)  qkvGradient: (batch, time, 3·features)
        // full: scoreGradient (time, time)  tiled: tiles
        Kernels.attentionBackward(
            input: x, outputGradient: dy, qkv: cache.qkv, attention: cache.attention, logSumExp: cache.logSumExp,
            attended: cache.attended, parameters: parameters, gradients: gradients, time: time, features: features, heads: heads,
            path: path, attendedGradient: &cache.attendedGradient, scoreGradient: &cache.scoreGradient, tiles: &cache.tiles,
            qkvGradient: &cache.qkvGradient, computeInputGradient: computeInputGradient, inputGradient: &cache.inputGradient)
    }
}

extension Naive {
    /// What ``Naive/causalSelfAttentionForward(_:attentionWeight:attentionBias:projectionWeight:projectionBias:heads:)``
    /// computes: the output and the attention weights.
    public struct CausalSelfAttentionForward<Scalar: TensorScalar> {
        /// `y`, `(batch, time, features)`.
        public var output: Tensor<Scalar>
        /// The attention weights, `(batch, heads, time, time)`, zero above each head's diagonal.
        public var attention: Tensor<Scalar>
    }

    /// What the naive backward pass of ``CausalSelfAttention`` gives: each parameter's gradient,
    /// in the layer's buffer order, and the input's.
    public struct CausalSelfAttentionGradients<Scalar: TensorScalar> {
        /// `c_attn.weight`'s, `(3·features, features)`.
        public var attentionWeight: Tensor<Scalar>
        /// `c_attn.bias`'s, `(3·features)`.
        public var attentionBias: Tensor<Scalar>
        /// `c_proj.weight`'s, `(features, features)`.
        public var projectionWeight: Tensor<Scalar>
        /// `c_proj.bias`'s, `(features)`.
        public var projectionBias: Tensor<Scalar>
        /// The input's, `(batch, time, features)`.
        public var input: Tensor<Scalar>
    }

    /// The definition of ``CausalSelfAttention``'s forward pass, one sample, head, query position,
    /// key position and feature at a time, with the textbook softmax `e^s / Σ e^s` (no shift) over
    /// the keys up to the query.
    ///
    ///     // x: (batch, time, features)  W_attn: (3·features, features)  b_attn: (3·features)
    ///     // W_proj: (features, features)  b_proj: (features)  →  y: (batch, time, features), attention: (batch, heads, time, time)
    public static func causalSelfAttentionForward<Scalar>(
        _ x: Tensor<Scalar>, attentionWeight: Tensor<Scalar>, attentionBias: Tensor<Scalar>,
        projectionWeight: Tensor<Scalar>, projectionBias: Tensor<Scalar>, heads: Int
    ) -> CausalSelfAttentionForward<Scalar> {
        let s = AttentionSteps(
            x, attentionWeight: attentionWeight, attentionBias: attentionBias, projectionWeight: projectionWeight,
            projectionBias: projectionBias, heads: heads)
        return CausalSelfAttentionForward(output: s.output, attention: s.attention)
    }

    /// The definition of ``CausalSelfAttention``'s backward pass, each product's adjoint as a sum
    /// over its terms, and the softmax's through its Jacobian `∂att_j/∂s_i = att_j·(δ_ij - att_i)`
    /// over the keys up to the query (the masked scores are constants, -∞: no gradient):
    ///
    ///     dW_proj[o, j] = Σ_(b,t) dy[b, t, o]·a[b, t, j]    db_proj[o] = Σ_(b,t) dy[b, t, o]    da[b, t, j] = Σ_o dy[b, t, o]·W_proj[o, j]
    ///     datt[t, u] = Σ_i da[t, h·size + i]·v[u, h·size + i]    dv[u, h·size + i] += att[t, u]·da[t, h·size + i]   (u ≤ t)
    ///     ds[t, u] = Σ_(u' ≤ t) datt[t, u']·att[t, u']·(δ_uu' - att[t, u])
    ///     dq[t, h·size + i] += ds[t, u]·k[u, h·size + i]/√size    dk[u, h·size + i] += ds[t, u]·q[t, h·size + i]/√size
    ///     dW_attn[o, i] = Σ_(b,t) dqkv[b, t, o]·x[b, t, i]    db_attn[o] = Σ_(b,t) dqkv[b, t, o]    dx[b, t, i] = Σ_o dqkv[b, t, o]·W_attn[o, i]
    public static func causalSelfAttentionBackward<Scalar>(
        _ x: Tensor<Scalar>, attentionWeight: Tensor<Scalar>, attentionBias: Tensor<Scalar>,
        projectionWeight: Tensor<Scalar>, projectionBias: Tensor<Scalar>, heads: Int, outputGradient dy: Tensor<Scalar>
    ) -> CausalSelfAttentionGradients<Scalar> {
        let s = AttentionSteps(
            x, attentionWeight: attentionWeight, attentionBias: attentionBias, projectionWeight: projectionWeight,
            projectionBias: projectionBias, heads: heads)
        let (batch, time, features, size) = (s.batch, s.time, s.features, s.features / heads)
        let scale = 1 / Scalar(size).squareRoot()
        var dWp = Tensor<Scalar>(zeros: [features, features]), dbp = Tensor<Scalar>(zeros: [features])
        var da = Tensor<Scalar>(zeros: [batch, time, features])
        for b in 0..<batch {
            for t in 0..<time {
                for o in 0..<features {
                    let g = dy[(b * time + t) * features + o]
                    dbp[o] += g
                    for j in 0..<features {
                        dWp[o, j] += g * s.attended[(b * time + t) * features + j]
                        da[(b * time + t) * features + j] += g * projectionWeight[o, j]
                    }
                }
            }
        }
        // dqkv[b, t, part·features + h·size + i]: part 0 the query, 1 the key, 2 the value
        var dqkv = Tensor<Scalar>(zeros: [batch, time, 3 * features])
        func at(_ b: Int, _ t: Int, _ part: Int, _ h: Int, _ i: Int) -> Int { (b * time + t) * 3 * features + part * features + h * size + i }
        for b in 0..<batch {
            for h in 0..<heads {
                for t in 0..<time {
                    func att(_ u: Int) -> Scalar { s.attention[((b * heads + h) * time + t) * time + u] }
                    var datt = [Scalar](repeating: 0, count: t + 1)
                    for u in 0...t {
                        for i in 0..<size {
                            let g = da[(b * time + t) * features + h * size + i]
                            datt[u] += g * s.qkv[at(b, u, 2, h, i)]
                            dqkv[at(b, u, 2, h, i)] += att(u) * g
                        }
                    }
                    for u in 0...t {
                        var dsu: Scalar = 0
                        for u2 in 0...t { dsu += datt[u2] * att(u2) * ((u == u2 ? 1 : 0) - att(u)) }
                        for i in 0..<size {
                            dqkv[at(b, t, 0, h, i)] += dsu * s.qkv[at(b, u, 1, h, i)] * scale
                            dqkv[at(b, u, 1, h, i)] += dsu * s.qkv[at(b, t, 0, h, i)] * scale
                        }
                    }
                }
            }
        }
        var dWa = Tensor<Scalar>(zeros: [3 * features, features]), dba = Tensor<Scalar>(zeros: [3 * features])
        var dx = Tensor<Scalar>(zeros: [batch, time, features])
        for b in 0..<batch {
            for t in 0..<time {
                for o in 0..<3 * features {
                    let g = dqkv[(b * time + t) * 3 * features + o]
                    dba[o] += g
                    for i in 0..<features {
                        dWa[o, i] += g * x[(b * time + t) * features + i]
                        dx[(b * time + t) * features + i] += g * attentionWeight[o, i]
                    }
                }
            }
        }
        return CausalSelfAttentionGradients(attentionWeight: dWa, attentionBias: dba, projectionWeight: dWp, projectionBias: dbp, input: dx)
    }

    /// The naive forward pass's intermediate values, which its backward pass reads.
    struct AttentionSteps<Scalar: TensorScalar> {
        let batch: Int, time: Int, features: Int
        /// `[q | k | v]`, `(batch, time, 3·features)`.
        var qkv: Tensor<Scalar>
        /// `(batch, heads, time, time)`.
        var attention: Tensor<Scalar>
        /// The heads side by side, `(batch, time, features)`.
        var attended: Tensor<Scalar>
        var output: Tensor<Scalar>

        init(
            _ x: Tensor<Scalar>, attentionWeight: Tensor<Scalar>, attentionBias: Tensor<Scalar>,
            projectionWeight: Tensor<Scalar>, projectionBias: Tensor<Scalar>, heads: Int
        ) {
            (batch, time, features) = (x.shape[0], x.shape[1], x.shape[2])
            let size = features / heads, scale = 1 / Scalar(size).squareRoot()
            qkv = Tensor(zeros: [batch, time, 3 * features])
            attention = Tensor(zeros: [batch, heads, time, time])
            attended = Tensor(zeros: [batch, time, features])
            output = Tensor(zeros: [batch, time, features])
            for b in 0..<batch {
                for t in 0..<time {
                    for o in 0..<3 * features {
                        var sum = attentionBias[o]
                        for i in 0..<features { sum += attentionWeight[o, i] * x[(b * time + t) * features + i] }
                        qkv[(b * time + t) * 3 * features + o] = sum
                    }
                }
            }
            // qkv[b, t, part·features + h·size + i]: part 0 the query, 1 the key, 2 the value
            func at(_ b: Int, _ t: Int, _ part: Int, _ h: Int, _ i: Int) -> Int { (b * time + t) * 3 * features + part * features + h * size + i }
            for b in 0..<batch {
                for h in 0..<heads {
                    for t in 0..<time {
                        // Query t against keys 0...t; keys after t are masked: weight 0.
                        let row = ((b * heads + h) * time + t) * time
                        var e = [Scalar](repeating: 0, count: t + 1), total: Scalar = 0
                        for u in 0...t {
                            var score: Scalar = 0
                            for i in 0..<size { score += qkv[at(b, t, 0, h, i)] * qkv[at(b, u, 1, h, i)] }
                            e[u] = Scalar.libmExp(score * scale)
                            total += e[u]
                        }
                        for u in 0...t { attention[row + u] = e[u] / total }
                        for i in 0..<size {
                            var sum: Scalar = 0
                            for u in 0...t { sum += attention[row + u] * qkv[at(b, u, 2, h, i)] }
                            attended[(b * time + t) * features + h * size + i] = sum
                        }
                    }
                }
            }
            for b in 0..<batch {
                for t in 0..<time {
                    for o in 0..<features {
                        var sum = projectionBias[o]
                        for j in 0..<features { sum += projectionWeight[o, j] * attended[(b * time + t) * features + j] }
                        output[(b * time + t) * features + o] = sum
                    }
                }
            }
        }
    }
}
