// The kernels: the entry point of every loop over the elements of a training step that is not a
// BLAS product. Layers, the network's loss head and the optimizers call them on whole buffers, once
// per pass, and never loop over elements themselves; a new layer adds its kernels here, not a
// requirement to `TensorScalar`. One generic body per kernel, a file per concern:
//
//     Kernels.swift                element-wise and reductions (resize, add, scaled add, multiply, bias,
//                                  column sums, row gathers, argmax, sums of squares, magnitude counts,
//                                  finiteness)
//     ActivationKernels.swift      activations forward and backward, bias and activation in one pass,
//                                  softmax, GELU
//     DenseKernels.swift           the dense layer's passes, and its backward with the SGD update inside
//     ImageKernels.swift           im2col and col2im, max and average pooling, per-image transposes
//     RecurrentKernels.swift       the recurrent layers' passes through time (RNN, GRU)
//     AttentionKernels.swift       causal multi-head self-attention's passes
//     SequenceKernels.swift        embedding lookups and their scatter-adds, context windows, index checks
//     NormalizationKernels.swift   dropout, batch and layer normalization
//     LossKernels.swift            the fused losses (value and gradient in one pass)
//     UpdateKernels.swift          the optimizers' updates (SGD, momentum, Adam) and gradient clipping
//
// What differs between Float and Double is reached through `T`, never written here: `TensorScalar`
// (Tensor/TensorScalar.swift) holds BLAS's gemm and scal (Tensor/BLAS.swift, the only file that
// imports CBLAS), the C library's scalar functions, exp, erf and tanh over a buffer, and five fused
// passes (GELU forward and backward, layer normalization forward and backward, Adam's update). For
// Float the buffer functions and the fused passes are C loops (Sources/CKernels), compiled once per
// x86-64 vector width (baseline SSE2, AVX2 with FMA, AVX-512) and chosen at first use as the widest
// the CPU and its OS run (`Kernels.vectorLevel`, in Tensor/VectorKernels.swift, the only file that
// imports CKernels); for Double they are the C library's functions and the Swift loops kept in this
// folder (`geluForwardLoops`, `layerNormForwardLoops`, their backward twins, `adamUpdateLoop`).
//
// Most kernels have a naive definition in `Naive`, under the kernel or beside the layer it serves
// (Layers/Dense.swift, Conv2D.swift, …): the tests' oracle. The updates are checked by hand and
// against PyTorch's formulas instead. This namespace is the seam a future accelerator backend
// implements.
//
// The one specialization rule: every public kernel carries exactly the pair
// `@_specialize(where T == Float)` / `@_specialize(where T == Double)`, and outside this folder only
// the step's entries, `Network.lossAndGradientsUnchecked` and `Network.fusedLossAndUpdate`, carry
// it; the internal helpers a kernel calls carry none. A caller that does not know its scalar type
// (a layer reached through `any Layer<Float>`) or sits in another module reaches the generic entry
// point, which checks the type and jumps to the concrete copy. Without the pair, a kernel called
// from another module runs its generic body, one to two orders of magnitude slower
// (Benchmarks/README.md, “Figures behind the code”: specialized kernels). A layer carries no
// attribute: where its own generic body cost a step (the dense layer, in W1–W3), its pass is one
// kernel call (`DenseKernels.swift`). `.ci/specialize-check` fails on an attribute outside this
// folder and those two entries' files, or on more than its cap: a pair per kernel and per entry;
// that each kernel has its pair is for review to see.

/// The engine's kernels over contiguous row-major buffers; see the file's header for the rule
/// that specializes them.
public enum Kernels {}

extension Kernels {
    /// Sets `storage.count` to `count` and keeps its capacity: elements removed from the end, or
    /// zeros appended (the storage of ``Tensor/resize(to:)``). A kernel because a layer's generic
    /// body grows its buffers through it: unspecialized, the append went through a generic
    /// iterator one element at a time, 43% of W7's whole process for a first step of batch 64.
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func resize<T: TensorScalar>(_ storage: inout [T], count: Int) {
        if count < storage.count {
            storage.removeLast(storage.count - count)
        } else if count > storage.count {
            storage.append(contentsOf: repeatElement(0, count: count - storage.count))
        }
    }

    /// `y = a + b`, element by element (a residual block's sum, forward and backward).
    ///
    ///     // a, b, y: (n); y may alias a
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func add<T: TensorScalar>(_ a: UnsafeBufferPointer<T>, _ b: UnsafeBufferPointer<T>, into y: UnsafeMutableBufferPointer<T>) {
        // a, b, y: (n)
        for i in 0..<a.count { y[i] = a[i] + b[i] }
    }

    /// `y += α·x`, element by element (BLAS's axpy): a share's gradients added into the batch's,
    /// weighted by the share's part of the batch (``Network/batchThreads``).
    ///
    ///     // x, y: (n)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func addScaled<T: TensorScalar>(_ x: UnsafeBufferPointer<T>, by alpha: T, to y: UnsafeMutableBufferPointer<T>) {
        // x, y: (n)
        for i in 0..<x.count { y[i] += alpha * x[i] }
    }

    /// `y = a ⊙ b`, element by element (dropout's backward: `dx = dy ⊙ mask`).
    ///
    ///     // a, b, y: (n); y may alias a
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func multiply<T: TensorScalar>(_ a: UnsafeBufferPointer<T>, _ b: UnsafeBufferPointer<T>, into y: UnsafeMutableBufferPointer<T>) {
        // a, b, y: (n)
        for i in 0..<a.count { y[i] = a[i] * b[i] }
    }

    /// Adds the bias row to every row: `y[r, j] += b[j]`.
    ///
    ///     // y: (rows, columns)  b: (columns)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func addBias<T: TensorScalar>(_ b: UnsafeBufferPointer<T>, to y: UnsafeMutableBufferPointer<T>) {
        // y: (rows, columns)  b: (columns)
        // This and addColumnSums walk the rows through pointers, without overflow checks, so that
        // each row's loop vectorizes (5× faster than buffer subscripts on a conv layer's output).
        let columns = b.count
        guard columns > 0, let bs = b.baseAddress, let ys = y.baseAddress else { return }
        for row in stride(from: 0, to: y.count, by: columns) {
            let yr = ys + row
            for j in 0..<columns { yr[j] += bs[j] }
        }
    }

    /// Adds the column sums into `b`: `b[j] += Σ_r x[r, j]` (the adjoint of ``addBias(_:to:)``:
    /// how a bias gradient is formed from a batch).
    ///
    ///     // x: (rows, columns)  b: (columns)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func addColumnSums<T: TensorScalar>(_ x: UnsafeBufferPointer<T>, to b: UnsafeMutableBufferPointer<T>) {
        // x: (rows, columns)  b: (columns)
        // Row after row keeps the reads sequential. Eight rows are added into b at a time: a row at
        // a time, each row's store to b is what the next row's load of b waits for, and that
        // chain, not the adds, set the pace (Benchmarks/README.md, “Figures behind the code”:
        // column sums eight rows at a time).
        let columns = b.count
        guard columns > 0, let xs = x.baseAddress, let bs = b.baseAddress else { return }
        let rows = x.count / columns
        var row = 0
        while row + 8 <= rows {
            let r0 = xs + row * columns, r1 = r0 + columns, r2 = r1 + columns, r3 = r2 + columns
            let r4 = r3 + columns, r5 = r4 + columns, r6 = r5 + columns, r7 = r6 + columns
            for j in 0..<columns { bs[j] += ((r0[j] + r1[j]) + (r2[j] + r3[j])) + ((r4[j] + r5[j]) + (r6[j] + r7[j])) }
            row += 8
        }
        for row in row..<rows {
            let xr = xs + row * columns
            for j in 0..<columns { bs[j] += xr[j] }
        }
    }

    /// Copies rows `order[positions]` of `source` into consecutive rows of `batch` (a mini-batch).
    ///
    ///     // source: (count, columns)  batch: (positions.count, columns)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func gatherRows<T: TensorScalar>(
        _ source: UnsafeBufferPointer<T>, columns: Int, order: UnsafeBufferPointer<Int>, positions: Range<Int>,
        into batch: UnsafeMutableBufferPointer<T>
    ) {
        // source: (count, columns)  batch: (positions.count, columns); batch row i = source row order[positions.lowerBound + i]
        guard columns > 0, let from = source.baseAddress, let to = batch.baseAddress else { return }
        for (i, position) in positions.enumerated() {
            (to + i * columns).update(from: from + order[position] * columns, count: columns)
        }
    }

    /// The index of the largest element (the first, on ties; 0 for an empty row).
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func argmax<T: TensorScalar>(_ row: UnsafeBufferPointer<T>) -> Int {
        guard !row.isEmpty else { return 0 }
        var best = 0
        var bestValue = row[0]
        for j in 1..<row.count where row[j] > bestValue {
            best = j
            bestValue = row[j]
        }
        return best
    }

    /// `Σ x²`, summed in Double (for norms).
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func sumOfSquares<T: TensorScalar>(_ x: UnsafeBufferPointer<T>) -> Double {
        var sum = 0.0
        for v in x { sum += Double(v) * Double(v) }
        return sum
    }

    /// How many elements have `|x| > threshold`.
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func countMagnitudes<T: TensorScalar>(_ x: UnsafeBufferPointer<T>, above threshold: T) -> Int {
        var above = 0
        for v in x where abs(v) > threshold { above += 1 }
        return above
    }

    /// Whether any element is NaN or infinite.
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func containsNonFinite<T: TensorScalar>(_ x: UnsafeBufferPointer<T>) -> Bool {
        x.contains { !$0.isFinite }
    }
}

extension Naive {
    /// The definition of ``Kernels/addBias(_:to:)``: `y[i, j] += b[j]`, through subscripts.
    public static func addBias<Scalar>(_ b: Tensor<Scalar>, to y: inout Tensor<Scalar>) {
        for i in 0..<y.rows { for j in 0..<y.columns { y[i, j] += b[j] } }
    }

    /// The definition of ``Kernels/addColumnSums(_:to:)``: one column at a time.
    public static func addColumnSums<Scalar>(_ x: Tensor<Scalar>, to b: inout Tensor<Scalar>) {
        for j in 0..<x.columns {
            var sum = b[j]
            for i in 0..<x.rows { sum += x[i, j] }
            b[j] = sum
        }
    }
}
