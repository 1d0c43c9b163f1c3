// The kernel seam. Every loop over the elements of a training step — BLAS products, the bias
// broadcast and its adjoint, each activation forward and backward, softmax and the fused losses,
// the optimizers' updates, the norms a display reads — is a requirement of `TensorScalar`, which
// `Float` and `Double` implement concretely. Generic engine code (layers, networks, optimizers)
// pays one protocol call per kernel per step and never loops over elements itself, so it needs no
// specialization attributes: the loops run as concrete Float or Double code however they are
// reached, even through `any Layer<Float>`.
//
// This table is the seam a future accelerator backend implements: the same requirements over
// device buffers. Most kernels have one generic body (a default implementation next to the
// concept it belongs to: activations in `Layers/Activation.swift`, losses in `Network/Loss.swift`,
// updates in `Optimizers/`), which the compiler specializes for each conformance; the ones whose
// Float and Double versions differ (BLAS, tanh) are written per type.

/// A scalar type the engine computes in: `Float` or `Double`, with its table of kernels.
///
/// Buffers are row-major and contiguous; each kernel's shape comment says how it reads them.
/// Engine code calls these through layers, losses and optimizers; the shape-checked operations
/// on ``Tensor`` are the public face for everyone else.
public protocol TensorScalar: BinaryFloatingPoint, LosslessStringConvertible, Codable, Sendable
where RawSignificand: FixedWidthInteger {
    // MARK: BLAS (Tensor/BLAS.swift, the only file that imports the C library)

    /// Row-major `c = alpha * op(a) * op(b) + beta * c` (BLAS gemm).
    static func blasGemm(
        transposeA: Bool, transposeB: Bool, m: Int, n: Int, k: Int,
        alpha: Self, a: UnsafePointer<Self>, lda: Int,
        b: UnsafePointer<Self>, ldb: Int,
        beta: Self, c: UnsafeMutablePointer<Self>, ldc: Int)

    /// `x *= alpha` over `n` contiguous elements (BLAS scal).
    static func blasScal(n: Int, alpha: Self, x: UnsafeMutablePointer<Self>)

    // MARK: The C library's scalar functions

    /// The C library's hyperbolic tangent (glibc's `tanh` / `tanhf`), so results match the
    /// reference numbers computed with the same libm (Docs/Reference.md §1–3).
    static func tanh(_ x: Self) -> Self
    /// The C library's natural exponential.
    static func exp(_ x: Self) -> Self
    /// The C library's natural logarithm.
    static func log(_ x: Self) -> Self

    // MARK: Element-wise and reductions (Tensor/Kernels.swift)

    /// tanh of every element in place, as fast as the type allows: Double calls the C library's
    /// tanh (the reference numbers depend on it); Float uses a vectorizable rational approximation
    /// (`Float.tanh(inPlace:)` in `Tensor/VectorTanh.swift`).
    static func tanh(inPlace values: UnsafeMutableBufferPointer<Self>)

    /// Adds the bias row to every row: `y[r, j] += b[j]`.
    ///
    ///     // y: (rows, columns)  b: (columns)
    static func addBias(_ b: UnsafeBufferPointer<Self>, to y: UnsafeMutableBufferPointer<Self>)

    /// Adds the column sums into `b`: `b[j] += Σ_r x[r, j]` (the adjoint of ``addBias(_:to:)``:
    /// how a bias gradient is formed from a batch).
    ///
    ///     // x: (rows, columns)  b: (columns)
    static func addColumnSums(_ x: UnsafeBufferPointer<Self>, to b: UnsafeMutableBufferPointer<Self>)

    /// Copies rows `order[positions]` of `source` into consecutive rows of `batch` (a mini-batch).
    ///
    ///     // source: (count, columns)  batch: (positions.count, columns)
    static func gatherRows(
        _ source: UnsafeBufferPointer<Self>, columns: Int, order: UnsafeBufferPointer<Int>, positions: Range<Int>,
        into batch: UnsafeMutableBufferPointer<Self>)

    /// The index of the largest element (the first, on ties; 0 for an empty row).
    static func argmax(_ row: UnsafeBufferPointer<Self>) -> Int

    /// `Σ x²`, summed in Double (for norms).
    static func sumOfSquares(_ x: UnsafeBufferPointer<Self>) -> Double

    /// How many elements have `|x| > threshold`.
    static func countMagnitudes(_ x: UnsafeBufferPointer<Self>, above threshold: Self) -> Int

    /// Whether any element is NaN or infinite.
    static func containsNonFinite(_ x: UnsafeBufferPointer<Self>) -> Bool

    // MARK: Activations (Layers/Activation.swift)

    /// `y = f(z)` in place, element by element; softmax is not element-wise and is left to the
    /// loss head (``softmaxRows(_:columns:)``), so here it leaves `z` as it is.
    ///
    ///     // z → y: (batch, units), in place
    static func activate(_ activation: Activation, _ y: UnsafeMutableBufferPointer<Self>)

    /// The chain rule through an activation from its saved output: `dz = dy ⊙ f'(z)`, with
    /// `f'` written in terms of `y` (tanh: `1 - y²`, sigmoid: `y·(1 - y)`, relu: `y > 0`).
    ///
    ///     // y, dy, dz: (batch, units); dz may alias dy
    static func activationBackward(
        _ activation: Activation, output y: UnsafeBufferPointer<Self>, gradient dy: UnsafeBufferPointer<Self>,
        into dz: UnsafeMutableBufferPointer<Self>)

    /// Softmax of each row in place, shifted by the row's maximum so that exp never overflows.
    ///
    ///     // z → p: (rows, columns), in place
    static func softmaxRows(_ p: UnsafeMutableBufferPointer<Self>, columns: Int)

    // MARK: Losses (Network/Loss.swift)

    /// `Σ (y - t)² / 2 / batch`, and, when `gradient` is given, `(y - t) / batch` into it.
    ///
    ///     // y, t, gradient: (batch, outputs)
    static func halfSquaredError(
        output y: UnsafeBufferPointer<Self>, targets t: UnsafeBufferPointer<Self>, batch: Int,
        gradient: UnsafeMutableBufferPointer<Self>?
    ) -> Self

    /// `-Σ t · log softmax(z) / batch` from the logits by a shifted log-sum-exp, and, when
    /// `gradient` is given, the fused gradient with respect to the logits, `(p - t) / batch`,
    /// from the probabilities `p = softmax(z)`.
    ///
    ///     // z, p, t, gradient: (batch, columns)
    static func softmaxCrossEntropy(
        logits z: UnsafeBufferPointer<Self>, probabilities p: UnsafeBufferPointer<Self>,
        targets t: UnsafeBufferPointer<Self>, columns: Int, gradient: UnsafeMutableBufferPointer<Self>?
    ) -> Self

    // MARK: Updates (Optimizers/SGD.swift, Optimizers/Adam.swift)

    /// Plain SGD with L2 weight decay: `p ← p - lr·(g + λ·p)`.
    ///
    ///     // p, g: (n)
    static func sgdUpdate(
        parameters p: UnsafeMutableBufferPointer<Self>, gradients g: UnsafeBufferPointer<Self>,
        learningRate: Self, weightDecay: Self)

    /// SGD with momentum (PyTorch's rule, dampening 0): `b ← g` on the first step else `μ·b + g`,
    /// then `p ← p - lr·(g + μ·b)` (Nesterov) or `p ← p - lr·b`; `g` includes `λ·p`.
    ///
    ///     // p, g, b: (n)
    static func sgdMomentumUpdate(
        parameters p: UnsafeMutableBufferPointer<Self>, gradients g: UnsafeBufferPointer<Self>,
        velocity b: UnsafeMutableBufferPointer<Self>,
        learningRate: Self, weightDecay: Self, momentum: Self, nesterov: Bool, first: Bool)

    /// One Adam (or AdamW) step with the bias corrections folded into `step`.
    ///
    ///     // p, g, m, v: (n)
    static func adamUpdate(
        parameters p: UnsafeMutableBufferPointer<Self>, gradients g: UnsafeBufferPointer<Self>,
        m: UnsafeMutableBufferPointer<Self>, v: UnsafeMutableBufferPointer<Self>, step: AdamStep<Self>)
}

extension Float: TensorScalar {}
extension Double: TensorScalar {}
