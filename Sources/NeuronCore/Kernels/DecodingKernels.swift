// The layers' passes at one position of one sample: what decoding a token costs once the positions
// before it are computed (``Network/continueText(_:length:rule:seed:cache:each:)``). A batch of one is
// `(time, features)` row-major, so position `t` is row `t` of every buffer the whole pass sized, and
// a step writes that row alone. Every product is a gemv on that row: a gemm of one row would first
// pack the whole weight matrix into OpenBLAS's panels. Attention's keys and values of the earlier
// positions are the rows its whole pass (or the steps since) left in `qkv`: that buffer is the
// key/value cache, and a step adds its row. The reference for each step is the same layer's whole
// pass, row `t` of its output (TextGenerationTests).

extension Kernels {
    /// A dense layer per position at position `t` of one sample: `y_t = f(x_t·w + b)`.
    ///
    ///     // x: (time, inputs), row t read  parameters: w (inputs, outputs) then b (outputs)  y: (time, outputs), row t written
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func denseForward<T: TensorScalar>(
        position t: Int, _ x: Tensor<T>, parameters: UnsafeBufferPointer<T>, inputs: Int, outputs: Int, activation: Activation,
        into y: inout Tensor<T>
    ) {
        // x_t: (inputs)  w: (inputs, outputs)  b, y_t: (outputs)
        x.withUnsafeBufferPointer { px in
            y.withUnsafeMutableBufferPointer { py in
                let w = parameters.baseAddress!, b = w + inputs * outputs, yt = py.baseAddress! + t * outputs
                yt.update(from: b, count: outputs)
                // y_t += wᵀ·x_t  (beta 1: onto the bias, as the whole pass's gemm)
                T.blasGemv(
                    transpose: true, m: inputs, n: outputs, alpha: 1, a: w, lda: outputs,
                    x: px.baseAddress! + t * inputs, beta: 1, y: yt)
                activate(activation, UnsafeMutableBufferPointer(start: yt, count: outputs))
            }
        }
    }

    /// Causal multi-head self-attention at position `t` of one sample, the keys and values of
    /// positions `0..<t` read from `qkv` (the key/value cache) and position `t`'s written into it:
    ///
    ///     [q_t | k_t | v_t] = W_attn·x_t + b_attn    per head: att_t = softmax(k_{0...t}·q_t/√size)    a_t,h = att_tᵀ·v_{0...t}
    ///     y_t = W_proj·a_t + b_proj
    ///
    /// When `attention` holds the full path's weights, row `t` of each head's is written as the
    /// whole pass writes it (zero after `t`), so ``CausalSelfAttention/attentionWeights`` stays the
    /// map of every position decoded; otherwise (the tiled path keeps no weights) each head's row
    /// is computed in `scratch`, which is made to hold at least `time` entries.
    ///
    ///     // x, attended, y: (time, features), row t  qkv: (time, 3·features), rows 0..<t read, row t written
    ///     // attention: (heads, time, time), row t of each head written, or scratch: (≥ time)
    ///     // parameters: W_attn (3·features, features), b_attn (3·features), W_proj (features, features), b_proj (features)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func attentionForward<T: TensorScalar>(
        position t: Int, _ x: Tensor<T>, parameters: UnsafeBufferPointer<T>, time: Int, features: Int, heads: Int,
        qkv: inout Tensor<T>, attention: inout Tensor<T>, scratch: inout Tensor<T>, attended: inout Tensor<T>, into y: inout Tensor<T>
    ) {
        let width = 3 * features, size = features / heads
        let keepsWeights = attention.count == heads * time * time
        if !keepsWeights, scratch.count < time { scratch.resizeVector(count: time) }
        let at = AttentionParameters(features: features), scale = 1 / T(size).squareRoot()
        let w = parameters.baseAddress!
        x.withUnsafeBufferPointer { px in
            qkv.withUnsafeMutableBufferPointer { pqkv in
                // [q_t | k_t | v_t] = W_attn·x_t + b_attn
                let row = pqkv.baseAddress! + t * width
                row.update(from: w + at.attentionBias, count: width)
                T.blasGemv(
                    transpose: false, m: width, n: features, alpha: 1, a: w + at.attentionWeight, lda: features,
                    x: px.baseAddress! + t * features, beta: 1, y: row)
            }
        }
        // Each head's scores at position t: row t of its weights, or the scratch row.
        func attend(scoresIn buffer: inout Tensor<T>) {
            qkv.withUnsafeBufferPointer { pqkv in
                buffer.withUnsafeMutableBufferPointer { patt in
                    attended.withUnsafeMutableBufferPointer { pa in
                        for h in 0..<heads {
                            // q_t: (size)  k, v: (t + 1, size) views, rows 3·features apart  scores: (t + 1), head h's row t
                            let k = pqkv.baseAddress! + features + h * size, v = k + features, q = pqkv.baseAddress! + t * width + h * size
                            let scores = patt.baseAddress! + (keepsWeights ? (h * time + t) * time : 0)
                            // s = k_{0...t}·q_t/√size
                            T.blasGemv(transpose: false, m: t + 1, n: size, alpha: scale, a: k, lda: width, x: q, beta: 0, y: scores)
                            causalSoftmax(row: UnsafeMutableBufferPointer(start: scores, count: time), position: t)
                            // a_t,h = att_tᵀ·v_{0...t}
                            T.blasGemv(
                                transpose: true, m: t + 1, n: size, alpha: 1, a: v, lda: width, x: scores,
                                beta: 0, y: pa.baseAddress! + t * features + h * size)
                        }
                    }
                }
            }
        }
        if keepsWeights { attend(scoresIn: &attention) } else { attend(scoresIn: &scratch) }
        attended.withUnsafeBufferPointer { pa in
            y.withUnsafeMutableBufferPointer { py in
                // y_t = W_proj·a_t + b_proj
                let yt = py.baseAddress! + t * features
                yt.update(from: w + at.projectionBias, count: features)
                T.blasGemv(
                    transpose: false, m: features, n: features, alpha: 1, a: w + at.projectionWeight, lda: features,
                    x: pa.baseAddress! + t * features, beta: 1, y: yt)
            }
        }
    }

    /// One query's scores in place, as ``causalSoftmax(_:time:)`` computes row `t` of a head: the
    /// softmax of entries `0...t` shifted by their maximum (through the type's exp over the
    /// buffer), and zero after `t`.
    ///
    ///     // row: (time), in place
    @inline(__always)
    static func causalSoftmax<T: TensorScalar>(row r: UnsafeMutableBufferPointer<T>, position t: Int) {
        var maximum = r[0]
        for j in 1..<t + 1 where r[j] > maximum { maximum = r[j] }
        for j in 0...t { r[j] -= maximum }
        let kept = UnsafeMutableBufferPointer(rebasing: r[0...t])
        T.exp(inPlace: kept)
        var sum: T = 0
        for j in 0...t { sum += r[j] }
        let inverse = 1 / sum
        for j in 0...t { r[j] *= inverse }
        for j in t + 1..<r.count { r[j] = 0 }
    }
}
