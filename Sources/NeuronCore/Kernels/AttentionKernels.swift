// Causal multi-head self-attention's passes, each one kernel (for the reason in DenseKernels.swift).
// A sequence is `(batch, time, features)` row-major, so row `b·time + t` of a `(batch·time, ·)`
// buffer is position `t` of sample `b`. The query, key and value projections of every position are
// one gemm into `qkv: (batch·time, 3·features)`, each row `[q | k | v]` with head `h` at columns
// `h·size ..< (h + 1)·size` of each third (`size = features / heads`, as nanoGPT splits and views
// them). A head of one sample is then a `(time, size)` matrix read in place through BLAS's leading
// dimension `3·features`, with no copy; OpenBLAS 0.3.21 has no batched gemm, so the heads' products
// run in a loop. Between the projections, two ways to compute the heads (`AttentionPath`):
//
// - full: the whole `(time, time)` score product of each head, the causal mask applied by the
//   softmax, which leaves exact zeros above the diagonal, so that the weighted sum over every key
//   is the sum over the keys up to the query's position, in one gemm. Forward keeps the weights,
//   `(batch, heads, time, time)`, and backward reads them. Few, large gemms; but at nanoGPT's block
//   of 256 half of every score product is masked away, and the weights (12.6 MB a layer at batch 8
//   and 6 heads, Float) are written, read, rewritten and read again from memory.
// - tiled, FlashAttention's on a CPU: per (sample, head), query tiles of `tile` rows against key
//   tiles of `tile` up to the diagonal only (the tiles above it are skipped; the diagonal tile alone
//   is masked), the softmax computed online (each row's running maximum and sum, the partial sum of
//   values rescaled when the maximum grows), so that nothing larger than a tile is written; forward
//   keeps each query's log-sum-exp, `(batch, heads, time)`, and backward recomputes each tile's
//   weights from `q`, `k` and it (FlashAttention-2's backward), accumulating `dq`, `dk` and `dv`
//   tile by tile. Every product inside a tile is a gemm on strided views.
//
// The naive definitions are beside the layer (`Naive.causalSelfAttentionForward`,
// `Naive.causalSelfAttentionBackward`, in Layers/CausalSelfAttention.swift).

/// How ``CausalSelfAttention`` computes its heads between the two projections. Both compute the
/// same function (their sums in other orders); they differ in what forward keeps and how much
/// memory each pass walks.
public enum AttentionPath: Sendable, Equatable, CustomStringConvertible {
    /// Every head's `(time, time)` scores and weights in full: three gemms a head forward, four
    /// backward. Forward keeps the weights, `heads·time²` per sample.
    case full
    /// Query tiles of `tile` rows against key tiles of `tile` up to the diagonal, with the online
    /// softmax; forward keeps each query's log-sum-exp, `heads·time` per sample, and backward
    /// recomputes each tile's weights from it.
    case tiled(tile: Int)

    /// The tile the tiled path runs with unless told, the fastest at nanoGPT's size: smaller tiles
    /// skip more of the masked half, larger ones make larger gemms (Benchmarks/README.md, “Figures
    /// behind the code”: attention's tiles).
    public static let defaultTile = 64

    /// The block from which the tiled path is the faster, at head sizes 16, 32 and 64 alike. Below
    /// it the full path's few large gemms win: the tiled backward's extra product (the scores
    /// again) costs more than the masked half it skips (Benchmarks/README.md, “Figures behind the
    /// code”: attention's tiles).
    public static let tiledFromTime = 128

    /// The path measured faster at `time` positions: tiled (tiles of ``defaultTile``) from
    /// ``tiledFromTime`` on, full below.
    public static func measured(time: Int) -> AttentionPath { time >= tiledFromTime ? .tiled(tile: defaultTile) : .full }

    /// `full` or `tiled (64)`.
    public var description: String {
        switch self {
        case .full: "full"
        case .tiled(let tile): "tiled (\(tile))"
        }
    }
}

/// Where each tensor of a ``CausalSelfAttention`` starts in its parameter slice, in nn.Linear's
/// `(out, in)` layout and nanoGPT's order: `c_attn.weight (3·features, features)`, `c_attn.bias
/// (3·features)`, `c_proj.weight (features, features)`, `c_proj.bias (features)`.
struct AttentionParameters {
    let attentionWeight = 0, attentionBias: Int, projectionWeight: Int, projectionBias: Int, count: Int

    init(features: Int) {
        attentionBias = 3 * features * features
        projectionWeight = attentionBias + 3 * features
        projectionBias = projectionWeight + features * features
        count = projectionBias + features
    }
}

/// Where each part of the tiled path's workspace starts in its one buffer, for tiles of `tile`
/// (at most `time`) rows: one pair of tiles' scores, then weights, `(tile, tile)`, with each row's
/// rescale right after them (forward: one exp call for both); backward's gradient of one pair's
/// weights, then of its scores, `(tile, tile)`; forward's running maximum and sum of each row of
/// the query tile, `(tile)` each; backward's `D_t = Σ_i da_h[t, i]·a_h[t, i]` of one head's
/// queries, `(time)`.
struct AttentionTiles {
    let scores = 0, scoreGradient: Int, maximum: Int, sum: Int, dot: Int, count: Int

    init(tile: Int, time: Int) {
        let tile = min(tile, time)
        scoreGradient = tile * tile + tile
        maximum = scoreGradient + tile * tile
        sum = maximum + tile
        dot = sum + tile
        count = dot + time
    }
}

extension Kernels {
    /// Causal multi-head self-attention's forward pass, nanoGPT's `CausalSelfAttention`:
    ///
    ///     [q | k | v] = x·W_attnᵀ + b_attn    per head: att = softmax(mask(q·kᵀ/√size))    a_h = att·v
    ///     y = [a_0 | … | a_{heads-1}]·W_projᵀ + b_proj
    ///
    /// `y` (resized to `(batch, time, features)`) is the output; `qkv` and `attended` (the heads
    /// side by side) are what backward needs with, on the full path, `attention` (the weights, zero
    /// above the diagonal), on the tiled path `logSumExp` (each query's `log Σ_{j≤t} e^(s_tj)`);
    /// the other path's buffer is left as it is. `tiles` is the tiled path's workspace.
    ///
    ///     // x, y, attended: (batch, time, features)  qkv: (batch, time, 3·features)
    ///     // full: attention (batch, heads, time, time)  tiled: logSumExp (batch, heads, time), tiles (AttentionTiles.count)
    ///     // parameters: W_attn (3·features, features), b_attn (3·features), W_proj (features, features), b_proj (features)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func attentionForward<T: TensorScalar>(
        _ x: Tensor<T>, parameters: UnsafeBufferPointer<T>, time: Int, features: Int, heads: Int, path: AttentionPath,
        qkv: inout Tensor<T>, attention: inout Tensor<T>, logSumExp: inout Tensor<T>, tiles: inout Tensor<T>,
        attended: inout Tensor<T>, into y: inout Tensor<T>
    ) {
        // x, attended: (batch·time, features)  qkv: (batch·time, 3·features)
        let batch = x.count / (time * features), rows = batch * time, width = 3 * features
        let at = AttentionParameters(features: features)
        qkv.resize(rows: rows, columns: width)
        attended.resize(rows: rows, columns: features)
        y.resize(batch: batch, time: time, features: features)
        let w = parameters.baseAddress!
        x.withUnsafeBufferPointer { px in
            qkv.withUnsafeMutableBufferPointer { pqkv in
                // qkv = x·W_attnᵀ for every position at once, + b_attn
                T.blasGemm(
                    transposeA: false, transposeB: true, m: rows, n: width, k: features,
                    alpha: 1, a: px.baseAddress!, lda: features, b: w + at.attentionWeight, ldb: features,
                    beta: 0, c: pqkv.baseAddress!, ldc: width)
                addBias(UnsafeBufferPointer(start: w + at.attentionBias, count: width), to: pqkv)
            }
        }
        qkv.withUnsafeBufferPointer { pqkv in
            attended.withUnsafeMutableBufferPointer { pa in
                switch path {
                case .full:
                    attention.resizeAttention(batch: batch, heads: heads, time: time)
                    attention.withUnsafeMutableBufferPointer { patt in
                        fullHeadsForward(
                            qkv: pqkv.baseAddress!, attention: patt, attended: pa.baseAddress!,
                            batch: batch, time: time, features: features, heads: heads)
                    }
                case .tiled(let tile):
                    precondition(tile >= 1, "attention: a tile of \(tile) rows")
                    logSumExp.resizeQueries(batch: batch, heads: heads, time: time)
                    tiles.resizeVector(count: AttentionTiles(tile: tile, time: time).count)
                    logSumExp.withUnsafeMutableBufferPointer { plse in
                        tiles.withUnsafeMutableBufferPointer { ptiles in
                            tiledHeadsForward(
                                qkv: pqkv.baseAddress!, attended: pa.baseAddress!, logSumExp: plse.baseAddress!, tiles: ptiles.baseAddress!,
                                batch: batch, time: time, features: features, heads: heads, tile: min(tile, time))
                        }
                    }
                }
            }
        }
        attended.withUnsafeBufferPointer { pa in
            y.withUnsafeMutableBufferPointer { py in
                // y = attended·W_projᵀ + b_proj
                T.blasGemm(
                    transposeA: false, transposeB: true, m: rows, n: features, k: features,
                    alpha: 1, a: pa.baseAddress!, lda: features, b: w + at.projectionWeight, ldb: features,
                    beta: 0, c: py.baseAddress!, ldc: features)
                addBias(UnsafeBufferPointer(start: w + at.projectionBias, count: features), to: py)
            }
        }
    }

    /// The full path's heads: `att = q·kᵀ/√size` for every (sample, head), then the softmax over
    /// all of them at once, then `a_h = att·v`: one exp call over the whole tensor rather than one
    /// per row (W9's 8192 rows of 1 to 16 weights each paid a call and a short vector loop).
    ///
    ///     // qkv: (batch·time, 3·features)  attention: (batch·heads, time, time)  attended: (batch·time, features)
    @inline(__always)
    static func fullHeadsForward<T: TensorScalar>(
        qkv: UnsafePointer<T>, attention: UnsafeMutableBufferPointer<T>, attended: UnsafeMutablePointer<T>,
        batch: Int, time: Int, features: Int, heads: Int
    ) {
        let width = 3 * features, size = features / heads, scale = 1 / T(size).squareRoot()
        for b in 0..<batch {
            for h in 0..<heads {
                // q, k: (time, size) views, rows 3·features apart
                let q = qkv + b * time * width + h * size, k = q + features
                T.blasGemm(
                    transposeA: false, transposeB: true, m: time, n: time, k: size,
                    alpha: scale, a: q, lda: width, b: k, ldb: width,
                    beta: 0, c: attention.baseAddress! + (b * heads + h) * time * time, ldc: time)
            }
        }
        causalSoftmax(attention, time: time)
        for b in 0..<batch {
            for h in 0..<heads {
                // v: a (time, size) view, rows 3·features apart
                let v = qkv + b * time * width + 2 * features + h * size
                let att = attention.baseAddress! + (b * heads + h) * time * time
                // a_h = att·v  (zeros above the diagonal: each query sums the keys up to it)
                T.blasGemm(
                    transposeA: false, transposeB: false, m: time, n: size, k: time,
                    alpha: 1, a: att, lda: time, b: v, ldb: width,
                    beta: 0, c: attended + b * time * features + h * size, ldc: features)
            }
        }
    }

    /// Every head's scores in place, row `t` of each `(time, time)` block the softmax of its entries
    /// `0...t`, shifted by their maximum, and zero above the diagonal (a query sees no later key):
    /// the shift writes -∞ above the diagonal, so that one exp over the whole buffer (the type's,
    /// vectorized for Float) gives exact zeros there, and the sums and scaling run over `0...t`.
    ///
    ///     // att: (batch·heads, time, time), in place
    @inline(__always)
    static func causalSoftmax<T: TensorScalar>(_ att: UnsafeMutableBufferPointer<T>, time: Int) {
        let scores = att.baseAddress!
        for row in stride(from: 0, to: att.count, by: time) {
            let r = scores + row, t = (row / time) % time
            var maximum = r[0]
            for j in 1..<t + 1 where r[j] > maximum { maximum = r[j] }
            for j in 0...t { r[j] -= maximum }
            for j in t + 1..<time { r[j] = -.infinity }
        }
        T.exp(inPlace: att)
        for row in stride(from: 0, to: att.count, by: time) {
            let r = scores + row, t = (row / time) % time
            var sum: T = 0
            for j in 0...t { sum += r[j] }
            let inverse = 1 / sum
            for j in 0...t { r[j] *= inverse }
        }
    }

    /// The tiled path's heads, per (sample, head) and query tile `i` (rows `r0 ..< r0 + rows`),
    /// over the key tiles `j` up to the diagonal (keys `c0 ..< c0 + columns`), with each row's
    /// running maximum `m` and sum `l`:
    ///
    ///     s = q_i·k_jᵀ/√size (-∞ after the query on the diagonal tile)    m' = max(m, max_row s)
    ///     p = e^(s - m')    l = l·e^(m - m') + Σ_row p    a_i = a_i·e^(m - m') + p·v_j
    ///
    /// then `a_i /= l` and `lse = m + log l`, row by row. The first key tile starts each row
    /// (`l = Σ p`, `a_i = p·v_0`): nothing to rescale yet.
    ///
    ///     // qkv: (batch·time, 3·features)  attended: (batch·time, features)  logSumExp: (batch·heads, time)
    ///     // tiles: AttentionTiles(tile, time).count; tile at most time
    static func tiledHeadsForward<T: TensorScalar>(
        qkv: UnsafePointer<T>, attended: UnsafeMutablePointer<T>, logSumExp: UnsafeMutablePointer<T>, tiles: UnsafeMutablePointer<T>,
        batch: Int, time: Int, features: Int, heads: Int, tile: Int
    ) {
        let width = 3 * features, size = features / heads, scale = 1 / T(size).squareRoot()
        let layout = AttentionTiles(tile: tile, time: time)
        let scores = tiles + layout.scores, maximum = tiles + layout.maximum, sum = tiles + layout.sum
        for b in 0..<batch {
            for h in 0..<heads {
                // q, k, v: (time, size) views, rows 3·features apart; a_h rows features apart
                let q = qkv + b * time * width + h * size, k = q + features, v = q + 2 * features
                let a = attended + b * time * features + h * size, lse = logSumExp + (b * heads + h) * time
                for r0 in stride(from: 0, to: time, by: tile) {
                    let rows = min(tile, time - r0)
                    // Key tiles up to the diagonal; those above it are never computed.
                    for c0 in stride(from: 0, through: r0, by: tile) {
                        let diagonal = c0 == r0, columns = diagonal ? rows : tile
                        let rescale = scores + rows * columns
                        // s = q_i·k_jᵀ/√size: (rows, columns), rows columns apart
                        T.blasGemm(
                            transposeA: false, transposeB: true, m: rows, n: columns, k: size,
                            alpha: scale, a: q + r0 * width, lda: width, b: k + c0 * width, ldb: width,
                            beta: 0, c: scores, ldc: columns)
                        for r in 0..<rows {
                            // Row r is query r0 + r: on the diagonal tile it sees keys c0 ... r0 + r.
                            let s = scores + r * columns, seen = diagonal ? r + 1 : columns
                            var largest = s[0]
                            for j in 1..<seen where s[j] > largest { largest = s[j] }
                            let previous = c0 == 0 ? -T.infinity : maximum[r], m = max(previous, largest)
                            for j in 0..<seen { s[j] -= m }
                            for j in seen..<columns { s[j] = -.infinity }
                            rescale[r] = previous - m
                            maximum[r] = m
                        }
                        // p = e^(s - m') and each row's e^(m - m'), in one call: exact zeros where masked
                        T.exp(inPlace: UnsafeMutableBufferPointer(start: scores, count: rows * columns + rows))
                        for r in 0..<rows {
                            let p = scores + r * columns
                            var total: T = 0
                            for j in 0..<columns { total += p[j] }
                            if c0 == 0 {
                                sum[r] = total
                            } else {
                                sum[r] = sum[r] * rescale[r] + total
                                let row = a + (r0 + r) * features, factor = rescale[r]
                                if factor != 1 { for i in 0..<size { row[i] *= factor } }
                            }
                        }
                        // a_i = a_i·e^(m - m') + p·v_j  (beta 0 on the first key tile: a_i holds nothing yet)
                        T.blasGemm(
                            transposeA: false, transposeB: false, m: rows, n: size, k: columns,
                            alpha: 1, a: scores, lda: columns, b: v + c0 * width, ldb: width,
                            beta: c0 == 0 ? 0 : 1, c: a + r0 * features, ldc: features)
                    }
                    for r in 0..<rows {
                        let row = a + (r0 + r) * features, inverse = 1 / sum[r]
                        for i in 0..<size { row[i] *= inverse }
                        lse[r0 + r] = maximum[r] + T.libmLog(sum[r])
                    }
                }
            }
        }
    }

    /// Causal multi-head self-attention's backward pass, from what forward kept:
    ///
    ///     dW_proj += dyᵀ·attended    db_proj += Σ dy    da = dy·W_proj
    ///     per head: dv = attᵀ·da_h    datt = da_h·vᵀ    ds = att ⊙ (datt - Σ_row att ⊙ datt), 0 above the diagonal
    ///               dq = ds·k/√size    dk = dsᵀ·q/√size
    ///     dW_attn += dqkvᵀ·x    db_attn += Σ dqkv    dx = dqkv·W_attn (when computeInputGradient)
    ///
    /// On the full path `scoreGradient` holds one head's `datt`, then `ds`, in place: the heads run
    /// one after another. On the tiled path the heads' products run tile by tile, `att` recomputed
    /// from `q`, `k` and `logSumExp`, in `tiles`. `path` is the one forward took.
    ///
    ///     // x, dx, dy, attended, attendedGradient: (batch, time, features)  qkv, qkvGradient: (batch, time, 3·features)
    ///     // full: attention (batch, heads, time, time), scoreGradient (time, time)
    ///     // tiled: logSumExp (batch, heads, time), tiles (AttentionTiles.count)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func attentionBackward<T: TensorScalar>(
        input x: Tensor<T>, outputGradient dy: Tensor<T>, qkv: Tensor<T>, attention: Tensor<T>, logSumExp: Tensor<T>,
        attended: Tensor<T>, parameters: UnsafeBufferPointer<T>, gradients: UnsafeMutableBufferPointer<T>,
        time: Int, features: Int, heads: Int, path: AttentionPath,
        attendedGradient da: inout Tensor<T>, scoreGradient ds: inout Tensor<T>, tiles: inout Tensor<T>, qkvGradient dqkv: inout Tensor<T>,
        computeInputGradient: Bool, inputGradient dx: inout Tensor<T>
    ) {
        // x, dy, attended, da: (batch·time, features)  qkv, dqkv: (batch·time, 3·features)
        let batch = x.count / (time * features), rows = batch * time, width = 3 * features
        let at = AttentionParameters(features: features)
        da.resize(rows: rows, columns: features)
        dqkv.resize(rows: rows, columns: width)
        let w = parameters.baseAddress!, g = gradients.baseAddress!
        dy.withUnsafeBufferPointer { pdy in
            attended.withUnsafeBufferPointer { pa in
                da.withUnsafeMutableBufferPointer { pda in
                    // dW_proj += dyᵀ·attended  (beta 1: backward adds into the gradient buffer)
                    T.blasGemm(
                        transposeA: true, transposeB: false, m: features, n: features, k: rows,
                        alpha: 1, a: pdy.baseAddress!, lda: features, b: pa.baseAddress!, ldb: features,
                        beta: 1, c: g + at.projectionWeight, ldc: features)
                    // db_proj += Σ dy
                    addColumnSums(pdy, to: UnsafeMutableBufferPointer(start: g + at.projectionBias, count: features))
                    // da = dy·W_proj
                    T.blasGemm(
                        transposeA: false, transposeB: false, m: rows, n: features, k: features,
                        alpha: 1, a: pdy.baseAddress!, lda: features, b: w + at.projectionWeight, ldb: features,
                        beta: 0, c: pda.baseAddress!, ldc: features)
                }
            }
        }
        qkv.withUnsafeBufferPointer { pqkv in
            da.withUnsafeBufferPointer { pda in
                dqkv.withUnsafeMutableBufferPointer { pdqkv in
                    switch path {
                    case .full:
                        ds.resize(rows: time, columns: time)
                        attention.withUnsafeBufferPointer { patt in
                            ds.withUnsafeMutableBufferPointer { pds in
                                fullHeadsBackward(
                                    qkv: pqkv.baseAddress!, attention: patt.baseAddress!, attendedGradient: pda.baseAddress!,
                                    scoreGradient: pds.baseAddress!, qkvGradient: pdqkv.baseAddress!,
                                    batch: batch, time: time, features: features, heads: heads)
                            }
                        }
                    case .tiled(let tile):
                        precondition(tile >= 1, "attention: a tile of \(tile) rows")
                        tiles.resizeVector(count: AttentionTiles(tile: tile, time: time).count)
                        attended.withUnsafeBufferPointer { pa in
                            logSumExp.withUnsafeBufferPointer { plse in
                                tiles.withUnsafeMutableBufferPointer { ptiles in
                                    tiledHeadsBackward(
                                        qkv: pqkv.baseAddress!, attended: pa.baseAddress!, attendedGradient: pda.baseAddress!,
                                        logSumExp: plse.baseAddress!, tiles: ptiles.baseAddress!, qkvGradient: pdqkv.baseAddress!,
                                        batch: batch, time: time, features: features, heads: heads, tile: min(tile, time))
                                }
                            }
                        }
                    }
                }
            }
        }
        x.withUnsafeBufferPointer { px in
            dqkv.withUnsafeBufferPointer { pdqkv in
                // dW_attn += dqkvᵀ·x
                T.blasGemm(
                    transposeA: true, transposeB: false, m: width, n: features, k: rows,
                    alpha: 1, a: pdqkv.baseAddress!, lda: width, b: px.baseAddress!, ldb: features,
                    beta: 1, c: g + at.attentionWeight, ldc: features)
                // db_attn += Σ dqkv
                addColumnSums(pdqkv, to: UnsafeMutableBufferPointer(start: g + at.attentionBias, count: width))
            }
        }
        guard computeInputGradient else { return }
        // dx: like x, (batch, time, features) or a network's first input (batch, time·features)
        if x.rank == 2 { dx.resize(rows: x.shape[0], columns: x.shape[1]) } else { dx.resize(batch: batch, time: time, features: features) }
        dqkv.withUnsafeBufferPointer { pdqkv in
            dx.withUnsafeMutableBufferPointer { pdx in
                // dx = dqkv·W_attn
                T.blasGemm(
                    transposeA: false, transposeB: false, m: rows, n: features, k: width,
                    alpha: 1, a: pdqkv.baseAddress!, lda: width, b: w + at.attentionWeight, ldb: features,
                    beta: 0, c: pdx.baseAddress!, ldc: features)
            }
        }
    }

    /// The full path's heads backward, one (sample, head) after another, from the saved weights.
    ///
    ///     // qkv, qkvGradient: (batch·time, 3·features)  attention: (batch·heads, time, time)
    ///     // attendedGradient: (batch·time, features)  scoreGradient: (time, time)
    @inline(__always)
    static func fullHeadsBackward<T: TensorScalar>(
        qkv: UnsafePointer<T>, attention: UnsafePointer<T>, attendedGradient: UnsafePointer<T>,
        scoreGradient dsh: UnsafeMutablePointer<T>, qkvGradient: UnsafeMutablePointer<T>,
        batch: Int, time: Int, features: Int, heads: Int
    ) {
        let width = 3 * features, size = features / heads, scale = 1 / T(size).squareRoot()
        for b in 0..<batch {
            for h in 0..<heads {
                // q, k, v and their gradients: (time, size) views, rows 3·features apart; da_h rows features apart
                let offset = b * time * width + h * size
                let q = qkv + offset, k = q + features, v = q + 2 * features
                let dq = qkvGradient + offset, dk = dq + features, dv = dq + 2 * features
                let dah = attendedGradient + b * time * features + h * size
                let att = attention + (b * heads + h) * time * time
                // dv = attᵀ·da_h
                T.blasGemm(
                    transposeA: true, transposeB: false, m: time, n: size, k: time,
                    alpha: 1, a: att, lda: time, b: dah, ldb: features,
                    beta: 0, c: dv, ldc: width)
                // datt = da_h·vᵀ
                T.blasGemm(
                    transposeA: false, transposeB: true, m: time, n: time, k: size,
                    alpha: 1, a: dah, lda: features, b: v, ldb: width,
                    beta: 0, c: dsh, ldc: time)
                causalSoftmaxBackward(att, gradient: dsh, time: time)
                // dq = ds·k/√size
                T.blasGemm(
                    transposeA: false, transposeB: false, m: time, n: size, k: time,
                    alpha: scale, a: dsh, lda: time, b: k, ldb: width,
                    beta: 0, c: dq, ldc: width)
                // dk = dsᵀ·q/√size
                T.blasGemm(
                    transposeA: true, transposeB: false, m: time, n: size, k: time,
                    alpha: scale, a: dsh, lda: time, b: q, ldb: width,
                    beta: 0, c: dk, ldc: width)
            }
        }
    }

    /// One head's softmax backward in place: each row `t` of `datt` becomes the gradient of its
    /// scores, `ds = att ⊙ (datt - Σ_j att_j·datt_j)` over `0...t`, and zero above the diagonal,
    /// where the mask held the scores at -∞ (`datt` is the full product there).
    ///
    ///     // att, gradient: (time, time)
    @inline(__always)
    static func causalSoftmaxBackward<T: TensorScalar>(_ att: UnsafePointer<T>, gradient ds: UnsafeMutablePointer<T>, time: Int) {
        for t in 0..<time {
            let a = att + t * time, row = ds + t * time
            var dot: T = 0
            for j in 0...t { dot += a[j] * row[j] }
            for j in 0...t { row[j] = a[j] * (row[j] - dot) }
            for j in t + 1..<time { row[j] = 0 }
        }
    }

    /// The tiled path's heads backward, FlashAttention-2's: per (sample, head), first each query's
    /// `D_t = Σ_i da_h[t, i]·a_h[t, i]` (which equals `Σ_j att_tj·datt_tj`, the softmax backward's
    /// row sum, from the head's output alone), then per key tile `j` (keys `c0 ..< c0 + columns`)
    /// and each query tile `i` at or below the diagonal (rows `r0 ..< r0 + rows`):
    ///
    ///     p = e^(q_i·k_jᵀ/√size - lse) (0 after the query on the diagonal tile)
    ///     dv_j += pᵀ·da_i    dp = da_i·v_jᵀ    ds = p ⊙ (dp - D)    dq_i += ds·k_j/√size    dk_j += dsᵀ·q_i/√size
    ///
    /// A key tile's first query tile is the diagonal one, where `dv_j` and `dk_j` start (beta 0);
    /// a query tile's first key tile is the first, where `dq_i` starts.
    ///
    ///     // qkv, qkvGradient: (batch·time, 3·features)  attended, attendedGradient: (batch·time, features)
    ///     // logSumExp: (batch·heads, time)  tiles: AttentionTiles(tile, time).count; tile at most time
    static func tiledHeadsBackward<T: TensorScalar>(
        qkv: UnsafePointer<T>, attended: UnsafePointer<T>, attendedGradient: UnsafePointer<T>, logSumExp: UnsafePointer<T>,
        tiles: UnsafeMutablePointer<T>, qkvGradient: UnsafeMutablePointer<T>,
        batch: Int, time: Int, features: Int, heads: Int, tile: Int
    ) {
        let width = 3 * features, size = features / heads, scale = 1 / T(size).squareRoot()
        let layout = AttentionTiles(tile: tile, time: time)
        let p = tiles + layout.scores, dp = tiles + layout.scoreGradient, dot = tiles + layout.dot
        for b in 0..<batch {
            for h in 0..<heads {
                // q, k, v and their gradients: (time, size) views, rows 3·features apart; a_h, da_h rows features apart
                let offset = b * time * width + h * size
                let q = qkv + offset, k = q + features, v = q + 2 * features
                let dq = qkvGradient + offset, dk = dq + features, dv = dq + 2 * features
                let ah = attended + b * time * features + h * size, dah = attendedGradient + b * time * features + h * size
                let lse = logSumExp + (b * heads + h) * time
                for t in 0..<time {
                    let o = ah + t * features, d = dah + t * features
                    var sum: T = 0
                    for i in 0..<size { sum += o[i] * d[i] }
                    dot[t] = sum
                }
                for c0 in stride(from: 0, to: time, by: tile) {
                    let columns = min(tile, time - c0)
                    // Query tiles from the diagonal down; those above it see none of these keys.
                    for r0 in stride(from: c0, to: time, by: tile) {
                        let rows = min(tile, time - r0), diagonal = r0 == c0
                        // p = e^(q_i·k_jᵀ/√size - lse): (rows, columns), rows columns apart
                        T.blasGemm(
                            transposeA: false, transposeB: true, m: rows, n: columns, k: size,
                            alpha: scale, a: q + r0 * width, lda: width, b: k + c0 * width, ldb: width,
                            beta: 0, c: p, ldc: columns)
                        for r in 0..<rows {
                            let s = p + r * columns, seen = diagonal ? r + 1 : columns, shift = lse[r0 + r]
                            for j in 0..<seen { s[j] -= shift }
                            for j in seen..<columns { s[j] = -.infinity }
                        }
                        T.exp(inPlace: UnsafeMutableBufferPointer(start: p, count: rows * columns))
                        // dv_j += pᵀ·da_i
                        T.blasGemm(
                            transposeA: true, transposeB: false, m: columns, n: size, k: rows,
                            alpha: 1, a: p, lda: columns, b: dah + r0 * features, ldb: features,
                            beta: diagonal ? 0 : 1, c: dv + c0 * width, ldc: width)
                        // dp = da_i·v_jᵀ
                        T.blasGemm(
                            transposeA: false, transposeB: true, m: rows, n: columns, k: size,
                            alpha: 1, a: dah + r0 * features, lda: features, b: v + c0 * width, ldb: width,
                            beta: 0, c: dp, ldc: columns)
                        // ds = p ⊙ (dp - D), in place of dp: 0 wherever p is (after the query on the diagonal)
                        for r in 0..<rows {
                            let pr = p + r * columns, g = dp + r * columns, d = dot[r0 + r]
                            for j in 0..<columns { g[j] = pr[j] * (g[j] - d) }
                        }
                        // dq_i += ds·k_j/√size
                        T.blasGemm(
                            transposeA: false, transposeB: false, m: rows, n: size, k: columns,
                            alpha: scale, a: dp, lda: columns, b: k + c0 * width, ldb: width,
                            beta: c0 == 0 ? 0 : 1, c: dq + r0 * width, ldc: width)
                        // dk_j += dsᵀ·q_i/√size
                        T.blasGemm(
                            transposeA: true, transposeB: false, m: columns, n: size, k: rows,
                            alpha: scale, a: dp, lda: columns, b: q + r0 * width, ldb: width,
                            beta: diagonal ? 0 : 1, c: dk + c0 * width, ldc: width)
                    }
                }
            }
        }
    }

    /// The attention weights of a tiled forward pass, recomputed from what it kept:
    /// `att[t, j] = e^(q_t·k_j/√size - lse_t)` for `j ≤ t`, 0 after, the softmax whose denominator
    /// the log-sum-exp holds. For reading them (attention maps), not for a training step: it
    /// allocates its result, and runs unspecialized from a layer's generic body (one gemm and one
    /// exp call a head; the loops between them a few ms at block 256).
    ///
    ///     // qkv: (batch·time, 3·features)  logSumExp: (batch, heads, time)  →  (batch, heads, time, time)
    static func attentionWeights<T: TensorScalar>(qkv: Tensor<T>, logSumExp: Tensor<T>, time: Int, features: Int, heads: Int) -> Tensor<T> {
        let width = 3 * features, size = features / heads, scale = 1 / T(size).squareRoot(), batch = qkv.count / (time * width)
        var attention = Tensor<T>(zeros: [batch, heads, time, time])
        guard batch > 0 else { return attention }
        qkv.withUnsafeBufferPointer { pqkv in
            logSumExp.withUnsafeBufferPointer { plse in
                attention.withUnsafeMutableBufferPointer { patt in
                    for b in 0..<batch {
                        for h in 0..<heads {
                            let q = pqkv.baseAddress! + b * time * width + h * size, k = q + features
                            let att = patt.baseAddress! + (b * heads + h) * time * time, lse = plse.baseAddress! + (b * heads + h) * time
                            T.blasGemm(
                                transposeA: false, transposeB: true, m: time, n: time, k: size,
                                alpha: scale, a: q, lda: width, b: k, ldb: width,
                                beta: 0, c: att, ldc: time)
                            for t in 0..<time {
                                let row = att + t * time
                                for j in 0...t { row[j] -= lse[t] }
                                for j in t + 1..<time { row[j] = -.infinity }
                            }
                        }
                    }
                    T.exp(inPlace: patt)
                }
            }
        }
        return attention
    }
}

extension Tensor {
    /// Resizes to attention weights' shape `(batch, heads, time, time)`, as
    /// ``resize(rows:columns:)`` does a matrix: when the shape is already that, nothing happens and
    /// nothing is allocated (the shape's array is built only when it changes).
    mutating func resizeAttention(batch: Int, heads: Int, time: Int) {
        guard !(shape.count == 4 && shape[0] == batch && shape[1] == heads && shape[2] == time && shape[3] == time) else { return }
        resize(to: [batch, heads, time, time])
    }

    /// Resizes to one number per query, `(batch, heads, time)`, as ``resizeAttention(batch:heads:time:)``.
    mutating func resizeQueries(batch: Int, heads: Int, time: Int) {
        guard !(shape.count == 3 && shape[0] == batch && shape[1] == heads && shape[2] == time) else { return }
        resize(to: [batch, heads, time])
    }

    /// Resizes to a vector of `count`, as ``resizeAttention(batch:heads:time:)``.
    mutating func resizeVector(count: Int) {
        guard !(shape.count == 1 && shape[0] == count) else { return }
        resize(to: [count])
    }
}
