// The recurrent layers' passes over the time axis, each pass one kernel (for the reason in
// DenseKernels.swift). A sequence is `(batch, time, features)` row-major, so row `b·time + t` of a
// `(batch·time, ·)` buffer is position `t` of sample `b`, and the rows of one step are `time` rows
// apart: a step's product reads and writes them in place through BLAS's leading dimension.
//
// The recurrence leaves the products as few as it allows: forward projects the inputs of every
// position in one gemm before the loop, then one gemm a step for the hidden side; backward walks
// the steps back with one gemm a step (the gradient reaching the previous state), keeping every
// position's gate gradients, so that `dW_ih`, `dW_hh` and `dx` are one gemm each after the loop.
// The naive definitions are beside the layers (`Naive.rnnForward`, `Naive.gruForward` and their
// backward passes, in Layers/RNN.swift and Layers/GRU.swift).

extension Kernels {
    // MARK: RNN

    /// An Elman RNN's forward pass over every position, `h_t = tanh(W_ih·x_t + b_ih + W_hh·h_{t-1} + b_hh)`
    /// from `h_{-1} = h0`; `y` (resized to `(batch, time·hidden)`) holds every `h_t`, and
    /// `previousState` every `h_{t-1}` (backward's `dW_hh` in one product).
    ///
    ///     // x: (batch, time, inputs)  parameters: W_ih (hidden, inputs), W_hh (hidden, hidden), b_ih, b_hh, h0 (hidden)
    ///     // y, previousState: (batch, time, hidden)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func rnnForward<T: TensorScalar>(
        _ x: Tensor<T>, parameters: UnsafeBufferPointer<T>, time: Int, inputs: Int, hidden: Int,
        previousState: inout Tensor<T>, into y: inout Tensor<T>
    ) {
        // x: (batch·time, inputs)  W_ih: (hidden, inputs)  W_hh: (hidden, hidden)  y, previousState: (batch·time, hidden)
        let batch = x.shape[0], positions = batch * time, stride = time * hidden
        let at = RecurrentParameters(gates: 1, inputs: inputs, hidden: hidden)
        y.resize(rows: batch, columns: stride)
        previousState.resize(rows: positions, columns: hidden)
        x.withUnsafeBufferPointer { px in
            y.withUnsafeMutableBufferPointer { py in
                previousState.withUnsafeMutableBufferPointer { ph in
                    let w = parameters.baseAddress!, ys = py.baseAddress!, hs = ph.baseAddress!
                    // y = x·W_ihᵀ for every position at once, + b_ih + b_hh
                    T.blasGemm(
                        transposeA: false, transposeB: true, m: positions, n: hidden, k: inputs,
                        alpha: 1, a: px.baseAddress!, lda: inputs, b: w + at.weightIH, ldb: inputs,
                        beta: 0, c: ys, ldc: hidden)
                    addBias(UnsafeBufferPointer(start: w + at.biasIH, count: hidden), to: py)
                    addBias(UnsafeBufferPointer(start: w + at.biasHH, count: hidden), to: py)
                    for b in 0..<batch { (hs + b * stride).update(from: w + at.initialState, count: hidden) }
                    for t in 0..<time {
                        // y[:, t] += h_{t-1}·W_hhᵀ  (rows `time` apart: leading dimension time·hidden)
                        T.blasGemm(
                            transposeA: false, transposeB: true, m: batch, n: hidden, k: hidden,
                            alpha: 1, a: hs + t * hidden, lda: stride, b: w + at.weightHH, ldb: hidden,
                            beta: 1, c: ys + t * hidden, ldc: stride)
                        for b in 0..<batch {
                            let row = (b * time + t) * hidden
                            T.tanh(inPlace: UnsafeMutableBufferPointer(start: ys + row, count: hidden))
                            if t + 1 < time { (hs + row + hidden).update(from: ys + row, count: hidden) }
                        }
                    }
                }
            }
        }
    }

    /// An Elman RNN's backward pass through time: from the last step back, `da_t = (dy_t + dh_t) ⊙
    /// (1 - h_t²)` and `dh_{t-1} = da_t·W_hh`; then `dW_ih += daᵀ·x`, `dW_hh += daᵀ·h_prev`,
    /// `db_ih`, `db_hh += Σ da` and `dh0 += Σ_batch dh_{-1}` into `gradients`, and `dx = da·W_ih`
    /// when `computeInputGradient`.
    ///
    ///     // x, dx: (batch, time, inputs)  y, dy, previousState, da: (batch, time, hidden)  carry: (batch, hidden)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func rnnBackward<T: TensorScalar>(
        input x: Tensor<T>, output y: Tensor<T>, outputGradient dy: Tensor<T>, previousState: Tensor<T>,
        parameters: UnsafeBufferPointer<T>, gradients: UnsafeMutableBufferPointer<T>, time: Int, inputs: Int, hidden: Int,
        preActivationGradient da: inout Tensor<T>, carry: inout Tensor<T>,
        computeInputGradient: Bool, inputGradient dx: inout Tensor<T>
    ) {
        // x: (batch·time, inputs)  y, dy, previousState, da: (batch·time, hidden)  carry: (batch, hidden)
        let batch = x.shape[0], positions = batch * time, stride = time * hidden
        let at = RecurrentParameters(gates: 1, inputs: inputs, hidden: hidden)
        da.resize(rows: positions, columns: hidden)
        carry.resize(rows: batch, columns: hidden)
        carry.zero()  // nothing reaches the last step from after it
        let w = parameters.baseAddress!, g = gradients.baseAddress!
        y.withUnsafeBufferPointer { py in
            dy.withUnsafeBufferPointer { pdy in
                da.withUnsafeMutableBufferPointer { pda in
                    carry.withUnsafeMutableBufferPointer { pc in
                        let ys = py.baseAddress!, dys = pdy.baseAddress!, das = pda.baseAddress!, dhs = pc.baseAddress!
                        for t in (0..<time).reversed() {
                            // da_t = (dy_t + dh_t) ⊙ (1 - h_t²), dh_t carried from step t + 1
                            for b in 0..<batch {
                                let row = (b * time + t) * hidden, carried = dhs + b * hidden
                                for j in 0..<hidden { das[row + j] = (dys[row + j] + carried[j]) * (1 - ys[row + j] * ys[row + j]) }
                            }
                            // dh_{t-1} = da_t·W_hh
                            T.blasGemm(
                                transposeA: false, transposeB: false, m: batch, n: hidden, k: hidden,
                                alpha: 1, a: das + t * hidden, lda: stride, b: w + at.weightHH, ldb: hidden,
                                beta: 0, c: dhs, ldc: hidden)
                        }
                        // dh0 += Σ over the batch of the gradient reaching the initial state
                        addColumnSums(UnsafeBufferPointer(pc), to: UnsafeMutableBufferPointer(start: g + at.initialState, count: hidden))
                    }
                }
            }
        }
        weightGradients(
            input: x, previousState: previousState, inputSide: da, hiddenSide: da, parameters: w, gradients: g, at: at,
            batch: batch, time: time, inputs: inputs, width: hidden, computeInputGradient: computeInputGradient, inputGradient: &dx)
    }

    // MARK: GRU

    /// A GRU's forward pass over every position, PyTorch's `nn.GRU` from `h_{-1} = h0`:
    ///
    ///     r = σ(W_ir·x + b_ir + W_hr·h + b_hr)    z = σ(W_iz·x + b_iz + W_hz·h + b_hz)
    ///     n = tanh(W_in·x + b_in + r ⊙ (W_hn·h + b_hn))    h' = (1 - z) ⊙ n + z ⊙ h
    ///
    /// `y` (resized to `(batch, time·hidden)`) holds every `h_t`; `gates` every `[r, z, n]`,
    /// `hiddenProjection` every `W_hh·h_{t-1} + b_hh` (its `n` third is the term `dr` needs) and
    /// `previousState` every `h_{t-1}`: what backward needs.
    ///
    ///     // x: (batch, time, inputs)  parameters: W_ih (3·hidden, inputs), W_hh (3·hidden, hidden), b_ih, b_hh (3·hidden), h0 (hidden)
    ///     // gates, hiddenProjection: (batch, time, 3·hidden)  y, previousState: (batch, time, hidden)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func gruForward<T: TensorScalar>(
        _ x: Tensor<T>, parameters: UnsafeBufferPointer<T>, time: Int, inputs: Int, hidden: Int,
        gates: inout Tensor<T>, hiddenProjection: inout Tensor<T>, previousState: inout Tensor<T>, into y: inout Tensor<T>
    ) {
        // x: (batch·time, inputs)  W_ih: (3·hidden, inputs)  W_hh: (3·hidden, hidden)
        // gates, hiddenProjection: (batch·time, 3·hidden)  y, previousState: (batch·time, hidden)
        let batch = x.shape[0], positions = batch * time, width = 3 * hidden, stride = time * hidden
        let at = RecurrentParameters(gates: 3, inputs: inputs, hidden: hidden)
        y.resize(rows: batch, columns: stride)
        gates.resize(rows: positions, columns: width)
        hiddenProjection.resize(rows: positions, columns: width)
        previousState.resize(rows: positions, columns: hidden)
        x.withUnsafeBufferPointer { px in
            y.withUnsafeMutableBufferPointer { py in
                gates.withUnsafeMutableBufferPointer { pg in
                    hiddenProjection.withUnsafeMutableBufferPointer { pp in
                        previousState.withUnsafeMutableBufferPointer { ph in
                            let w = parameters.baseAddress!, ys = py.baseAddress!, gs = pg.baseAddress!
                            let ps = pp.baseAddress!, hs = ph.baseAddress!
                            // gates = x·W_ihᵀ for every position at once, + b_ih
                            T.blasGemm(
                                transposeA: false, transposeB: true, m: positions, n: width, k: inputs,
                                alpha: 1, a: px.baseAddress!, lda: inputs, b: w + at.weightIH, ldb: inputs,
                                beta: 0, c: gs, ldc: width)
                            addBias(UnsafeBufferPointer(start: w + at.biasIH, count: width), to: pg)
                            for b in 0..<batch { (hs + b * stride).update(from: w + at.initialState, count: hidden) }
                            for t in 0..<time {
                                // hiddenProjection[:, t] = h_{t-1}·W_hhᵀ  (rows `time` apart), b_hh added by the cell
                                T.blasGemm(
                                    transposeA: false, transposeB: true, m: batch, n: width, k: hidden,
                                    alpha: 1, a: hs + t * hidden, lda: stride, b: w + at.weightHH, ldb: hidden,
                                    beta: 0, c: ps + t * width, ldc: time * width)
                                for b in 0..<batch {
                                    let position = b * time + t
                                    gruCell(
                                        gates: gs + position * width, hiddenProjection: ps + position * width, biasHH: w + at.biasHH,
                                        previous: hs + position * hidden, into: ys + position * hidden, hidden: hidden)
                                    if t + 1 < time { (hs + (position + 1) * hidden).update(from: ys + position * hidden, count: hidden) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// One sample's GRU step: the input projection `gates` (with b_ih) becomes `[r, z, n]` in
    /// place, `hiddenProjection` gets `b_hh`, and `h'` goes to `output`.
    ///
    ///     // gates, hiddenProjection, biasHH: (3·hidden)  previous, output: (hidden)
    @inline(__always)
    static func gruCell<T: TensorScalar>(
        gates g: UnsafeMutablePointer<T>, hiddenProjection p: UnsafeMutablePointer<T>, biasHH: UnsafePointer<T>,
        previous h: UnsafePointer<T>, into output: UnsafeMutablePointer<T>, hidden: Int
    ) {
        let n = g + 2 * hidden, z = g + hidden, pn = p + 2 * hidden
        for j in 0..<3 * hidden { p[j] += biasHH[j] }
        // r, z = σ(a) = (1 + tanh(a/2)) / 2: the same function, through the vectorized tanh over
        // the row rather than an exp and a division per element (Benchmarks/README.md, “Figures
        // behind the code”: the GRU's gates through tanh).
        for j in 0..<2 * hidden { g[j] = (g[j] + p[j]) * 0.5 }
        T.tanh(inPlace: UnsafeMutableBufferPointer(start: g, count: 2 * hidden))
        for j in 0..<2 * hidden { g[j] = 0.5 + 0.5 * g[j] }
        // n = tanh(W_in·x + b_in + r ⊙ (W_hn·h + b_hn))
        for j in 0..<hidden { n[j] += g[j] * pn[j] }
        T.tanh(inPlace: UnsafeMutableBufferPointer(start: n, count: hidden))
        // h' = (1 - z) ⊙ n + z ⊙ h
        for j in 0..<hidden { output[j] = n[j] + z[j] * (h[j] - n[j]) }
    }

    /// A GRU's backward pass through time. From the last step back, with `dh = dy_t + dh_t` (`dh_t`
    /// carried from step t + 1) and the gates saved by forward:
    ///
    ///     da_n = dh ⊙ (1 - z) ⊙ (1 - n²)    da_z = dh ⊙ (h - n) ⊙ z(1 - z)    da_r = da_n ⊙ (W_hn·h + b_hn) ⊙ r(1 - r)
    ///     input side [da_r, da_z, da_n]     hidden side [da_r, da_z, da_n ⊙ r]    dh_{t-1} = dh ⊙ z + hidden side·W_hh
    ///
    /// then `dW_ih += inputsideᵀ·x`, `dW_hh += hiddensideᵀ·h_prev`, the biases their column sums and
    /// `dh0 += Σ_batch dh_{-1}` into `gradients`, and `dx = input side·W_ih` when `computeInputGradient`.
    ///
    ///     // x, dx: (batch, time, inputs)  dy, previousState: (batch, time, hidden)  carry: (batch, hidden)
    ///     // gates, hiddenProjection, gateGradient, hiddenGateGradient: (batch, time, 3·hidden)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func gruBackward<T: TensorScalar>(
        input x: Tensor<T>, outputGradient dy: Tensor<T>, gates: Tensor<T>, hiddenProjection: Tensor<T>, previousState: Tensor<T>,
        parameters: UnsafeBufferPointer<T>, gradients: UnsafeMutableBufferPointer<T>, time: Int, inputs: Int, hidden: Int,
        gateGradient: inout Tensor<T>, hiddenGateGradient: inout Tensor<T>, carry: inout Tensor<T>,
        computeInputGradient: Bool, inputGradient dx: inout Tensor<T>
    ) {
        // x: (batch·time, inputs)  dy, previousState: (batch·time, hidden)  carry: (batch, hidden)
        // gates, hiddenProjection, gateGradient, hiddenGateGradient: (batch·time, 3·hidden)
        let batch = x.shape[0], positions = batch * time, width = 3 * hidden
        let at = RecurrentParameters(gates: 3, inputs: inputs, hidden: hidden)
        gateGradient.resize(rows: positions, columns: width)
        hiddenGateGradient.resize(rows: positions, columns: width)
        carry.resize(rows: batch, columns: hidden)
        carry.zero()  // nothing reaches the last step from after it
        let w = parameters.baseAddress!, gw = gradients.baseAddress!
        dy.withUnsafeBufferPointer { pdy in
            gates.withUnsafeBufferPointer { pg in
                hiddenProjection.withUnsafeBufferPointer { pp in
                    previousState.withUnsafeBufferPointer { ph in
                        gateGradient.withUnsafeMutableBufferPointer { pdi in
                            hiddenGateGradient.withUnsafeMutableBufferPointer { pdh in
                                carry.withUnsafeMutableBufferPointer { pc in
                                    for t in (0..<time).reversed() {
                                        for b in 0..<batch {
                                            let position = b * time + t
                                            gruCellBackward(
                                                outputGradient: pdy.baseAddress! + position * hidden, carry: pc.baseAddress! + b * hidden,
                                                gates: pg.baseAddress! + position * width, hiddenProjection: pp.baseAddress! + position * width,
                                                previous: ph.baseAddress! + position * hidden,
                                                gateGradient: pdi.baseAddress! + position * width,
                                                hiddenGateGradient: pdh.baseAddress! + position * width, hidden: hidden)
                                        }
                                        // dh_{t-1} = dh ⊙ z (left by the cell) + hidden side·W_hh
                                        T.blasGemm(
                                            transposeA: false, transposeB: false, m: batch, n: hidden, k: width,
                                            alpha: 1, a: pdh.baseAddress! + t * width, lda: time * width, b: w + at.weightHH, ldb: hidden,
                                            beta: 1, c: pc.baseAddress!, ldc: hidden)
                                    }
                                    // dh0 += Σ over the batch of the gradient reaching the initial state
                                    addColumnSums(
                                        UnsafeBufferPointer(pc), to: UnsafeMutableBufferPointer(start: gw + at.initialState, count: hidden))
                                }
                            }
                        }
                    }
                }
            }
        }
        weightGradients(
            input: x, previousState: previousState, inputSide: gateGradient, hiddenSide: hiddenGateGradient, parameters: w,
            gradients: gw, at: at, batch: batch, time: time, inputs: inputs, width: width,
            computeInputGradient: computeInputGradient, inputGradient: &dx)
    }

    /// The products a recurrent layer's backward ends with, over every position at once from its
    /// gate gradients: `dW_ih += inputSideᵀ·x`, `dW_hh += hiddenSideᵀ·h_prev`, the two biases their
    /// column sums, and `dx = inputSide·W_ih` when `computeInputGradient`. An RNN's two sides are
    /// the same `da`; a GRU's differ in the candidate gate (`da_n` and `da_n ⊙ r`).
    ///
    ///     // x, dx: (batch·time, inputs)  previousState: (batch·time, hidden)  inputSide, hiddenSide: (batch·time, width)
    @inline(__always)
    static func weightGradients<T: TensorScalar>(
        input x: Tensor<T>, previousState: Tensor<T>, inputSide: Tensor<T>, hiddenSide: Tensor<T>,
        parameters w: UnsafePointer<T>, gradients g: UnsafeMutablePointer<T>, at: RecurrentParameters,
        batch: Int, time: Int, inputs: Int, width: Int, computeInputGradient: Bool, inputGradient dx: inout Tensor<T>
    ) {
        let hidden = at.hidden, positions = batch * time
        x.withUnsafeBufferPointer { px in
            previousState.withUnsafeBufferPointer { ph in
                inputSide.withUnsafeBufferPointer { pdi in
                    hiddenSide.withUnsafeBufferPointer { pdh in
                        // dW_ih += inputSideᵀ·x  (beta 1: backward adds into the gradient buffer)
                        T.blasGemm(
                            transposeA: true, transposeB: false, m: width, n: inputs, k: positions,
                            alpha: 1, a: pdi.baseAddress!, lda: width, b: px.baseAddress!, ldb: inputs,
                            beta: 1, c: g + at.weightIH, ldc: inputs)
                        // dW_hh += hiddenSideᵀ·h_prev
                        T.blasGemm(
                            transposeA: true, transposeB: false, m: width, n: hidden, k: positions,
                            alpha: 1, a: pdh.baseAddress!, lda: width, b: ph.baseAddress!, ldb: hidden,
                            beta: 1, c: g + at.weightHH, ldc: hidden)
                        // db_ih += Σ inputSide, db_hh += Σ hiddenSide
                        addColumnSums(pdi, to: UnsafeMutableBufferPointer(start: g + at.biasIH, count: width))
                        addColumnSums(pdh, to: UnsafeMutableBufferPointer(start: g + at.biasHH, count: width))
                    }
                }
            }
        }
        guard computeInputGradient else { return }
        dx.resize(rows: batch, columns: time * inputs)
        inputSide.withUnsafeBufferPointer { pdi in
            dx.withUnsafeMutableBufferPointer { pdx in
                // dx = inputSide·W_ih
                T.blasGemm(
                    transposeA: false, transposeB: false, m: positions, n: inputs, k: width,
                    alpha: 1, a: pdi.baseAddress!, lda: width, b: w + at.weightIH, ldb: inputs,
                    beta: 0, c: pdx.baseAddress!, ldc: inputs)
            }
        }
    }

    /// One sample's GRU step backward: `dh = dy + carry`, the gate gradients of both sides, and
    /// `carry = dh ⊙ z`, the path to the previous state that skips `W_hh` (the caller adds the other).
    ///
    ///     // outputGradient, carry, previous: (hidden)  gates, hiddenProjection, gateGradient, hiddenGateGradient: (3·hidden)
    @inline(__always)
    static func gruCellBackward<T: TensorScalar>(
        outputGradient dy: UnsafePointer<T>, carry: UnsafeMutablePointer<T>, gates g: UnsafePointer<T>,
        hiddenProjection p: UnsafePointer<T>, previous h: UnsafePointer<T>,
        gateGradient di: UnsafeMutablePointer<T>, hiddenGateGradient dp: UnsafeMutablePointer<T>, hidden: Int
    ) {
        // Eight units at a time as SIMD vectors, loaded and stored explicitly: written element by
        // element the loop stayed scalar, since the compiler cannot tell that the seven rows it
        // writes do not overlap the six it reads (W8's backward: a third of its step). The last
        // `hidden % 8` units go through the same arithmetic in a vector filled lane by lane.
        typealias V = SIMD8<T>
        @inline(__always) func load(_ x: UnsafePointer<T>, _ j: Int, _ count: Int) -> V {
            if count == 8 { return UnsafeRawPointer(x + j).loadUnaligned(as: V.self) }
            var v = V()
            for i in 0..<count { v[i] = x[j + i] }
            return v
        }
        @inline(__always) func store(_ v: V, _ x: UnsafeMutablePointer<T>, _ j: Int, _ count: Int) {
            if count == 8 { return UnsafeMutableRawPointer(x + j).storeBytes(of: v, as: V.self) }
            for i in 0..<count { x[j + i] = v[i] }
        }
        let (gz, gn, pn) = (g + hidden, g + 2 * hidden, p + 2 * hidden)
        let (diz, din, dpz, dpn) = (di + hidden, di + 2 * hidden, dp + hidden, dp + 2 * hidden)
        var j = 0
        while j < hidden {
            let count = min(8, hidden - j)
            let r = load(g, j, count), z = load(gz, j, count), n = load(gn, j, count)
            let dh = load(dy, j, count) + load(carry, j, count)
            let dn = dh * (1 - z) * (1 - n * n)
            let dz = dh * (load(h, j, count) - n) * (z * (1 - z))
            let dr = dn * load(pn, j, count) * (r * (1 - r))
            store(dr, di, j, count)
            store(dz, diz, j, count)
            store(dn, din, j, count)
            store(dr, dp, j, count)
            store(dz, dpz, j, count)
            store(dn * r, dpn, j, count)
            store(dh * z, carry, j, count)
            j += count
        }
    }
}
