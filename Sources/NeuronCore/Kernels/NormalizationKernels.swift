// Dropout (inverted, its mask drawn from a counter-based stream), batch normalization in
// training and evaluation, and layer normalization, with their backward passes. The naive
// definitions of the two normalizations are beside their layers (`Naive.batchNormTraining` in
// Layers/BatchNorm.swift, `Naive.layerNormForward` and `Naive.layerNormBackward` in
// Layers/LayerNorm.swift).

extension Kernels {
    /// Inverted dropout: draws the mask from `key` (element `i` is kept, as `1 / (1 - rate)`,
    /// when the `i`-th number of the key's stream is at least `rate`, else 0), and `y = x ⊙ mask`.
    ///
    ///     // x, mask, y: (n)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func dropout<T: TensorScalar>(
        _ x: UnsafeBufferPointer<T>, rate: Double, key: UInt64,
        mask: UnsafeMutableBufferPointer<T>, into y: UnsafeMutableBufferPointer<T>
    ) {
        // x, mask, y: (n)
        let kept = 1 / T(1 - rate)
        for i in 0..<x.count {
            mask[i] = noiseUniform(key: key, index: i) >= rate ? kept : 0
            y[i] = x[i] * mask[i]
        }
    }
}

// The kernels walk the rows through pointers, without overflow checks: each row's loop over the
// channels then vectorizes (with buffer subscripts and checked `r + j` it ran an element at a
// time, 5× slower in a micro-benchmark). Every sum still runs down the rows in order.
extension Kernels {
    /// Batch normalization in training: each column's mean and biased variance over the rows,
    /// `x̂ = (x - mean) / √(var + ε)`, `y = γ·x̂ + β`; the running statistics move towards the
    /// batch's, `r ← (1 - momentum)·r + momentum·batch` (the variance unbiased, as PyTorch does).
    ///
    ///     // x, xHat, y: (rows, columns)  γ, β, mean, inverseDeviation, runningMean, runningVariance: (columns)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func batchNormTraining<T: TensorScalar>(
        _ x: UnsafeBufferPointer<T>, gamma: UnsafeBufferPointer<T>, beta: UnsafeBufferPointer<T>,
        epsilon: Double, momentum: Double,
        runningMean: UnsafeMutableBufferPointer<T>, runningVariance: UnsafeMutableBufferPointer<T>,
        mean: UnsafeMutableBufferPointer<T>, inverseDeviation s: UnsafeMutableBufferPointer<T>,
        normalized xHat: UnsafeMutableBufferPointer<T>, into y: UnsafeMutableBufferPointer<T>
    ) {
        // x, x̂, y: (rows, channels), row after row; the column statistics accumulate across them
        let c = gamma.count, rows = x.count / c
        Tensor<T>.zero(mean)
        Tensor<T>.zero(s)  // holds Σ (x - mean)² until the end
        guard rows > 0, let xs = x.baseAddress, let hs = xHat.baseAddress, let ys = y.baseAddress,
            let ms = mean.baseAddress, let ss = s.baseAddress, let gs = gamma.baseAddress, let bs = beta.baseAddress
        else { return }
        for r in stride(from: 0, to: x.count, by: c) {
            let xr = xs + r
            for j in 0..<c { ms[j] += xr[j] }
        }
        for j in 0..<c { ms[j] /= T(rows) }
        for r in stride(from: 0, to: x.count, by: c) {
            let xr = xs + r, hr = hs + r
            for j in 0..<c {
                let d = xr[j] - ms[j]
                hr[j] = d
                ss[j] += d * d
            }
        }
        let m = T(momentum), unbiased = rows > 1 ? T(rows) / T(rows - 1) : 1
        for j in 0..<c {
            let variance = ss[j] / T(rows)
            runningMean[j] = (1 - m) * runningMean[j] + m * ms[j]
            runningVariance[j] = (1 - m) * runningVariance[j] + m * variance * unbiased
            ss[j] = 1 / (variance + T(epsilon)).squareRoot()
        }
        for r in stride(from: 0, to: x.count, by: c) {
            let hr = hs + r, yr = ys + r
            for j in 0..<c {
                hr[j] *= ss[j]
                yr[j] = gs[j] * hr[j] + bs[j]
            }
        }
    }

    /// Batch normalization in evaluation: `y = γ·(x - runningMean) / √(runningVariance + ε) + β`.
    ///
    ///     // x, y: (rows, columns)  γ, β, runningMean, runningVariance: (columns)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func batchNormEvaluation<T: TensorScalar>(
        _ x: UnsafeBufferPointer<T>, gamma: UnsafeBufferPointer<T>, beta: UnsafeBufferPointer<T>,
        runningMean: UnsafeBufferPointer<T>, runningVariance: UnsafeBufferPointer<T>, epsilon: Double,
        into y: UnsafeMutableBufferPointer<T>
    ) {
        // x, y: (rows, channels)
        let c = gamma.count
        guard c > 0, let xs = x.baseAddress, let ys = y.baseAddress, let gs = gamma.baseAddress, let bs = beta.baseAddress,
            let ms = runningMean.baseAddress, let vs = runningVariance.baseAddress
        else { return }
        for r in stride(from: 0, to: x.count, by: c) {
            let xr = xs + r, yr = ys + r
            for j in 0..<c {
                yr[j] = gs[j] * (xr[j] - ms[j]) / (vs[j] + T(epsilon)).squareRoot() + bs[j]
            }
        }
    }

    /// The backward pass of ``batchNormTraining(_:gamma:beta:epsilon:momentum:runningMean:runningVariance:mean:inverseDeviation:normalized:into:)``: `dγ += Σ dy·x̂`, `dβ += Σ dy`, and
    /// `dx = γ·s/rows · (rows·dy - Σ dy - x̂·Σ dy·x̂)` with `s` the inverse deviation; the column
    /// sums go through `sums` (scratch) first.
    ///
    ///     // dy, xHat, dx: (rows, columns)  γ, inverseDeviation, dγ, dβ: (columns)  sums: (2, columns)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func batchNormBackward<T: TensorScalar>(
        _ dy: UnsafeBufferPointer<T>, normalized xHat: UnsafeBufferPointer<T>,
        gamma: UnsafeBufferPointer<T>, inverseDeviation s: UnsafeBufferPointer<T>, sums: UnsafeMutableBufferPointer<T>,
        gammaGradient: UnsafeMutableBufferPointer<T>, betaGradient: UnsafeMutableBufferPointer<T>,
        into dx: UnsafeMutableBufferPointer<T>?
    ) {
        // dy, x̂, dx: (rows, channels)  sums: (Σ dy, Σ dy·x̂) per channel
        let c = gamma.count, rows = T(dy.count / c)
        Tensor<T>.zero(sums)
        guard c > 0, let dys = dy.baseAddress, let hs = xHat.baseAddress, let sd = sums.baseAddress else { return }
        let sdh = sd + c
        for r in stride(from: 0, to: dy.count, by: c) {
            let dyr = dys + r, hr = hs + r
            for j in 0..<c {
                sd[j] += dyr[j]
                sdh[j] += dyr[j] * hr[j]
            }
        }
        for j in 0..<c {
            betaGradient[j] += sd[j]
            gammaGradient[j] += sdh[j]
        }
        guard let dxs = dx?.baseAddress, let gs = gamma.baseAddress, let ss = s.baseAddress else { return }
        for r in stride(from: 0, to: dy.count, by: c) {
            let dyr = dys + r, hr = hs + r, dxr = dxs + r
            for j in 0..<c {
                dxr[j] = gs[j] * ss[j] / rows * (rows * dyr[j] - sd[j] - hr[j] * sdh[j])
            }
        }
    }
}

// Layer normalization normalizes each row over its own features, where batch normalization
// normalizes each column over the rows. Each pass is the type's (``TensorScalar/layerNormForward(_:weight:bias:epsilon:mean:inverseDeviation:into:)``):
// Float's in C at the CPU's vector width (Sources/CKernels), its row sums split across the lanes;
// Double's the Swift loops below, a row's statistics each in eight partial sums (``rowSum(_:_:)``),
// while the per-feature loops (the affine step, the parameter gradients) run along the row through
// pointers and vectorize.
extension Kernels {
    /// `Σ term(j)` over `0..<count`, in eight partial sums (term `j` into sum `j mod 8`) added
    /// pairwise at the end, then the terms past the last multiple of 8 in order: eight independent
    /// chains of additions, which the compiler keeps in vector registers, rather than one chain
    /// that waits on each addition (Benchmarks/README.md, “Figures behind the code”: row sums in
    /// eight chains). A row of fewer than 8 is summed in order, as a plain loop would.
    @inline(__always)
    static func rowSum<T: TensorScalar>(_ count: Int, _ term: (Int) -> T) -> T {
        var s0: T = 0, s1: T = 0, s2: T = 0, s3: T = 0, s4: T = 0, s5: T = 0, s6: T = 0, s7: T = 0
        var j = 0
        while j + 8 <= count {
            s0 += term(j)
            s1 += term(j + 1)
            s2 += term(j + 2)
            s3 += term(j + 3)
            s4 += term(j + 4)
            s5 += term(j + 5)
            s6 += term(j + 6)
            s7 += term(j + 7)
            j += 8
        }
        var sum = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
        while j < count {
            sum += term(j)
            j += 1
        }
        return sum
    }

    /// Layer normalization: each row's mean and biased variance over its features,
    /// `x̂ = (x - mean)·s` with `s = 1/√(var + ε)`, `y = weight ⊙ x̂ + bias`; the mean and `s` of
    /// each row kept for backward (PyTorch's `nn.LayerNorm` over the last dimension).
    ///
    ///     // x, y: (rows, features)  weight, bias: (features)  mean, inverseDeviation: (rows)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func layerNormForward<T: TensorScalar>(
        _ x: UnsafeBufferPointer<T>, weight: UnsafeBufferPointer<T>, bias: UnsafeBufferPointer<T>, epsilon: Double,
        mean: UnsafeMutableBufferPointer<T>, inverseDeviation s: UnsafeMutableBufferPointer<T>, into y: UnsafeMutableBufferPointer<T>
    ) {
        T.layerNormForward(x, weight: weight, bias: bias, epsilon: epsilon, mean: mean, inverseDeviation: s, into: y)
    }

    /// ``layerNormForward(_:weight:bias:epsilon:mean:inverseDeviation:into:)`` in Swift: Double's pass.
    ///
    ///     // x, y: (rows, features)  weight, bias: (features)  mean, inverseDeviation: (rows)
    static func layerNormForwardLoops<T: TensorScalar>(
        _ x: UnsafeBufferPointer<T>, weight: UnsafeBufferPointer<T>, bias: UnsafeBufferPointer<T>, epsilon: Double,
        mean: UnsafeMutableBufferPointer<T>, inverseDeviation s: UnsafeMutableBufferPointer<T>, into y: UnsafeMutableBufferPointer<T>
    ) {
        // x, y: (rows, features), a row at a time: its mean, then Σ (x - mean)² (two passes, as
        // PyTorch's: no cancellation between Σ x² and mean²), then the affine step
        let f = weight.count, e = T(epsilon)
        guard f > 0, let xs = x.baseAddress, let ys = y.baseAddress, let ws = weight.baseAddress, let bs = bias.baseAddress else { return }
        for r in 0..<x.count / f {
            let xr = xs + r * f, yr = ys + r * f
            let m = rowSum(f) { xr[$0] } / T(f)
            let squares = rowSum(f) { (xr[$0] - m) * (xr[$0] - m) }
            let inverse = 1 / (squares / T(f) + e).squareRoot()
            for j in 0..<f { yr[j] = (xr[j] - m) * inverse * ws[j] + bs[j] }
            mean[r] = m
            s[r] = inverse
        }
    }

    /// The backward pass of ``layerNormForward(_:weight:bias:epsilon:mean:inverseDeviation:into:)``,
    /// `x̂` recomputed from `x` and the kept mean and `s`: `dweight += Σ dy ⊙ x̂` and
    /// `dbias += Σ dy` over the rows, and, when asked, through each row's mean and variance,
    /// `dx = s·(g - mean(g) - x̂·mean(g ⊙ x̂))` with `g = dy ⊙ weight`.
    ///
    ///     // x, dy, dx: (rows, features)  weight, weightGradient, biasGradient: (features)  mean, inverseDeviation: (rows)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func layerNormBackward<T: TensorScalar>(
        _ x: UnsafeBufferPointer<T>, outputGradient dy: UnsafeBufferPointer<T>, weight: UnsafeBufferPointer<T>,
        mean: UnsafeBufferPointer<T>, inverseDeviation s: UnsafeBufferPointer<T>,
        weightGradient: UnsafeMutableBufferPointer<T>, biasGradient: UnsafeMutableBufferPointer<T>,
        into dx: UnsafeMutableBufferPointer<T>?
    ) {
        T.layerNormBackward(
            x, outputGradient: dy, weight: weight, mean: mean, inverseDeviation: s,
            weightGradient: weightGradient, biasGradient: biasGradient, into: dx)
    }

    /// ``layerNormBackward(_:outputGradient:weight:mean:inverseDeviation:weightGradient:biasGradient:into:)``
    /// in Swift: Double's pass.
    ///
    ///     // x, dy, dx: (rows, features)  weight, weightGradient, biasGradient: (features)  mean, inverseDeviation: (rows)
    static func layerNormBackwardLoops<T: TensorScalar>(
        _ x: UnsafeBufferPointer<T>, outputGradient dy: UnsafeBufferPointer<T>, weight: UnsafeBufferPointer<T>,
        mean: UnsafeBufferPointer<T>, inverseDeviation s: UnsafeBufferPointer<T>,
        weightGradient: UnsafeMutableBufferPointer<T>, biasGradient: UnsafeMutableBufferPointer<T>,
        into dx: UnsafeMutableBufferPointer<T>?
    ) {
        // x, dy, dx: (rows, features), a row at a time
        let f = weight.count
        guard f > 0, let xs = x.baseAddress, let dys = dy.baseAddress, let ws = weight.baseAddress,
            let dws = weightGradient.baseAddress, let dbs = biasGradient.baseAddress
        else { return }
        let dxs = dx?.baseAddress
        for r in 0..<x.count / f {
            let xr = xs + r * f, dyr = dys + r * f, m = mean[r], inverse = s[r]
            // dweight += dy ⊙ x̂, dbias += dy: along the row, vectorized
            for j in 0..<f {
                dws[j] += dyr[j] * ((xr[j] - m) * inverse)
                dbs[j] += dyr[j]
            }
            guard let dxs else { continue }
            // Σ g and Σ g ⊙ x̂ along the row: the gradient through the mean, and through the variance
            let sumG = rowSum(f) { dyr[$0] * ws[$0] }
            let sumGX = rowSum(f) { dyr[$0] * ws[$0] * ((xr[$0] - m) * inverse) }
            let meanG = sumG / T(f), meanGX = sumGX / T(f), dxr = dxs + r * f
            for j in 0..<f { dxr[j] = inverse * (dyr[j] * ws[j] - meanG - (xr[j] - m) * inverse * meanGX) }
        }
    }
}

// RMS normalization is layer normalization without the mean: each row is scaled by the reciprocal
// of its root mean square, then by a learned weight, with no shift. Both types run these Swift
// loops (no C pass, unlike layer normalization's Float): the row sums in eight partial sums
// (``rowSum(_:_:)``), the per-feature loops along the row through pointers, which vectorize. The
// naive definitions are beside the layer (`Naive.rmsNormForward` and `Naive.rmsNormBackward` in
// Layers/RMSNorm.swift).
extension Kernels {
    /// RMS normalization: each row's `r = 1/√(mean(x²) + ε)` over its features, `y = x·r ⊙ weight`;
    /// `r` of each row kept for backward (PyTorch's `nn.RMSNorm` over the last dimension).
    ///
    ///     // x, y: (rows, features)  weight: (features)  inverseRMS: (rows)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func rmsNormForward<T: TensorScalar>(
        _ x: UnsafeBufferPointer<T>, weight: UnsafeBufferPointer<T>, epsilon: Double,
        inverseRMS r: UnsafeMutableBufferPointer<T>, into y: UnsafeMutableBufferPointer<T>
    ) {
        // x, y: (rows, features), a row at a time: Σ x² (one pass: a sum of squares cancels nothing), then the scaling
        let f = weight.count, e = T(epsilon)
        guard f > 0, let xs = x.baseAddress, let ys = y.baseAddress, let ws = weight.baseAddress else { return }
        for row in 0..<x.count / f {
            let xr = xs + row * f, yr = ys + row * f
            let inverse = 1 / (rowSum(f) { xr[$0] * xr[$0] } / T(f) + e).squareRoot()
            for j in 0..<f { yr[j] = xr[j] * inverse * ws[j] }
            r[row] = inverse
        }
    }

    /// The backward pass of ``rmsNormForward(_:weight:epsilon:inverseRMS:into:)``, `x̂ = x·r`
    /// recomputed from `x` and the kept `r`: `dweight += Σ dy ⊙ x̂` over the rows, and, when asked,
    /// through each row's mean square, `dx = r·(g - x̂·mean(g ⊙ x̂))` with `g = dy ⊙ weight`
    /// (that is `r·(g - x·r²·mean(g ⊙ x))`).
    ///
    ///     // x, dy, dx: (rows, features)  weight, weightGradient: (features)  inverseRMS: (rows)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func rmsNormBackward<T: TensorScalar>(
        _ x: UnsafeBufferPointer<T>, outputGradient dy: UnsafeBufferPointer<T>, weight: UnsafeBufferPointer<T>,
        inverseRMS r: UnsafeBufferPointer<T>, weightGradient: UnsafeMutableBufferPointer<T>,
        into dx: UnsafeMutableBufferPointer<T>?
    ) {
        // x, dy, dx: (rows, features), a row at a time
        let f = weight.count
        guard f > 0, let xs = x.baseAddress, let dys = dy.baseAddress, let ws = weight.baseAddress,
            let dws = weightGradient.baseAddress
        else { return }
        let dxs = dx?.baseAddress
        for row in 0..<x.count / f {
            let xr = xs + row * f, dyr = dys + row * f, inverse = r[row]
            // dweight += dy ⊙ x̂: along the row, vectorized
            for j in 0..<f { dws[j] += dyr[j] * (xr[j] * inverse) }
            guard let dxs else { continue }
            // Σ g ⊙ x̂ along the row: the gradient through the mean square
            let meanGX = rowSum(f) { dyr[$0] * ws[$0] * (xr[$0] * inverse) } / T(f), dxr = dxs + row * f
            for j in 0..<f { dxr[j] = inverse * (dyr[j] * ws[j] - xr[j] * inverse * meanGX) }
        }
    }
}
