// Causal multi-head self-attention's passes, each one kernel (for the reason in DenseKernels.swift).
// A sequence is `(batch, time, features)` row-major, so row `b·time + t` of a `(batch·time, ·)`
// buffer is position `t` of sample `b`. The query, key and value projections of every position are
// one gemm into `qkv: (batch·time, 3·features)`, each row `[q | k | v]` with head `h` at columns
// `h·size ..< (h + 1)·size` of each third (`size = features / heads`, as nanoGPT splits and views
// them). A head of one sample is then a `(time, size)` matrix read in place through BLAS's leading
// dimension `3·features`, so each (sample, head) is three gemms forward and four backward on
// strided views, with no copy; OpenBLAS 0.3.21 has no batched gemm, so they run in a loop. The
// scores are the full `(time, time)` product, the causal mask applied by the softmax, which
// leaves exact zeros above the diagonal: the weighted sum over every key is then the sum over the
// keys up to the query's position, in one gemm. The naive definitions are beside the layer
// (`Naive.causalSelfAttentionForward`, `Naive.causalSelfAttentionBackward`, in
// Layers/CausalSelfAttention.swift).

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

extension Kernels {
    /// Causal multi-head self-attention's forward pass, nanoGPT's `CausalSelfAttention`:
    ///
    ///     [q | k | v] = x·W_attnᵀ + b_attn    per head: att = softmax(mask(q·kᵀ/√size))    a_h = att·v
    ///     y = [a_0 | … | a_{heads-1}]·W_projᵀ + b_proj
    ///
    /// `y` (resized to `(batch, time, features)`) is the output; `qkv`, `attention` (the weights,
    /// zero above the diagonal) and `attended` (the heads side by side) are what backward needs.
    ///
    ///     // x, y, attended: (batch, time, features)  qkv: (batch, time, 3·features)  attention: (batch, heads, time, time)
    ///     // parameters: W_attn (3·features, features), b_attn (3·features), W_proj (features, features), b_proj (features)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func attentionForward<T: TensorScalar>(
        _ x: Tensor<T>, parameters: UnsafeBufferPointer<T>, time: Int, features: Int, heads: Int,
        qkv: inout Tensor<T>, attention: inout Tensor<T>, attended: inout Tensor<T>, into y: inout Tensor<T>
    ) {
        // x, attended: (batch·time, features)  qkv: (batch·time, 3·features)  attention: (batch·heads, time, time)
        let batch = x.count / (time * features), rows = batch * time, width = 3 * features, size = features / heads
        let at = AttentionParameters(features: features), scale = 1 / T(size).squareRoot()
        qkv.resize(rows: rows, columns: width)
        attention.resizeAttention(batch: batch, heads: heads, time: time)
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
            attention.withUnsafeMutableBufferPointer { patt in
                attended.withUnsafeMutableBufferPointer { pa in
                    // att = q·kᵀ/√size for every (sample, head), then the softmax over all of them at
                    // once, then a_h = att·v: one exp call over the whole tensor rather than one per row
                    // (W9's 8192 rows of 1 to 16 weights each paid a call and a short vector loop)
                    for b in 0..<batch {
                        for h in 0..<heads {
                            // q, k: (time, size) views, rows 3·features apart
                            let q = pqkv.baseAddress! + b * time * width + h * size, k = q + features
                            T.blasGemm(
                                transposeA: false, transposeB: true, m: time, n: time, k: size,
                                alpha: scale, a: q, lda: width, b: k, ldb: width,
                                beta: 0, c: patt.baseAddress! + (b * heads + h) * time * time, ldc: time)
                        }
                    }
                    causalSoftmax(patt, time: time)
                    for b in 0..<batch {
                        for h in 0..<heads {
                            // v: a (time, size) view, rows 3·features apart
                            let v = pqkv.baseAddress! + b * time * width + 2 * features + h * size
                            let att = patt.baseAddress! + (b * heads + h) * time * time
                            // a_h = att·v  (zeros above the diagonal: each query sums the keys up to it)
                            T.blasGemm(
                                transposeA: false, transposeB: false, m: time, n: size, k: time,
                                alpha: 1, a: att, lda: time, b: v, ldb: width,
                                beta: 0, c: pa.baseAddress! + b * time * features + h * size, ldc: features)
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

    /// Causal multi-head self-attention's backward pass, from what forward kept:
    ///
    ///     dW_proj += dyᵀ·attended    db_proj += Σ dy    da = dy·W_proj
    ///     per head: dv = attᵀ·da_h    datt = da_h·vᵀ    ds = att ⊙ (datt - Σ_row att ⊙ datt), 0 above the diagonal
    ///               dq = ds·k/√size    dk = dsᵀ·q/√size
    ///     dW_attn += dqkvᵀ·x    db_attn += Σ dqkv    dx = dqkv·W_attn (when computeInputGradient)
    ///
    /// `scoreGradient` holds one head's `datt`, then `ds`, in place: the heads run one after another.
    ///
    ///     // x, dx, dy, attended, attendedGradient: (batch, time, features)  qkv, qkvGradient: (batch, time, 3·features)
    ///     // attention: (batch, heads, time, time)  scoreGradient: (time, time)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func attentionBackward<T: TensorScalar>(
        input x: Tensor<T>, outputGradient dy: Tensor<T>, qkv: Tensor<T>, attention: Tensor<T>, attended: Tensor<T>,
        parameters: UnsafeBufferPointer<T>, gradients: UnsafeMutableBufferPointer<T>, time: Int, features: Int, heads: Int,
        attendedGradient da: inout Tensor<T>, scoreGradient ds: inout Tensor<T>, qkvGradient dqkv: inout Tensor<T>,
        computeInputGradient: Bool, inputGradient dx: inout Tensor<T>
    ) {
        // x, dy, attended, da: (batch·time, features)  qkv, dqkv: (batch·time, 3·features)  attention: (batch·heads, time, time)
        let batch = x.count / (time * features), rows = batch * time, width = 3 * features, size = features / heads
        let at = AttentionParameters(features: features), scale = 1 / T(size).squareRoot()
        da.resize(rows: rows, columns: features)
        ds.resize(rows: time, columns: time)
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
            attention.withUnsafeBufferPointer { patt in
                da.withUnsafeBufferPointer { pda in
                    ds.withUnsafeMutableBufferPointer { pds in
                        dqkv.withUnsafeMutableBufferPointer { pdqkv in
                            let dsh = pds.baseAddress!
                            for b in 0..<batch {
                                for h in 0..<heads {
                                    // q, k, v and their gradients: (time, size) views, rows 3·features apart; da_h rows features apart
                                    let offset = b * time * width + h * size
                                    let q = pqkv.baseAddress! + offset, k = q + features, v = q + 2 * features
                                    let dq = pdqkv.baseAddress! + offset, dk = dq + features, dv = dq + 2 * features
                                    let dah = pda.baseAddress! + b * time * features + h * size
                                    let att = patt.baseAddress! + (b * heads + h) * time * time
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
}

extension Tensor {
    /// Resizes to attention weights' shape `(batch, heads, time, time)`, as
    /// ``resize(rows:columns:)`` does a matrix: when the shape is already that, nothing happens and
    /// nothing is allocated (the shape's array is built only when it changes).
    mutating func resizeAttention(batch: Int, heads: Int, time: Int) {
        guard !(shape.count == 4 && shape[0] == batch && shape[1] == heads && shape[2] == time && shape[3] == time) else { return }
        resize(to: [batch, heads, time, time])
    }
}
