// The dense layer's passes, each one kernel: the products go to BLAS, the bias and the activation
// to the element-wise kernels. One call per pass, because a layer is reached through
// `any Layer<Float>`, where its own generic body would look up the metadata of every tensor and
// buffer it touches: here a generic caller pays one type check and runs the concrete copy, which
// halved W1's step (Benchmarks/README.md, “Figures behind the code”: one kernel per pass). The
// naive definitions are beside the layer (`Naive.denseForward`, `Naive.denseBackward` in
// Layers/Dense.swift).
//
// A per-position layer (`time` set) reads (batch, time, inputs) as one (batch·time, inputs)
// matrix: the same products over more rows; only the output's shape says where the rows came from.

extension Kernels {
    /// A dense layer's forward pass: `y = f(x·w + b)` (softmax: the logits, `x·w + b`), `y`
    /// resized to `(batch, outputs)`, or, with `time`, to `(batch, time, outputs)`.
    ///
    ///     // x: (batch, inputs)  parameters: w (inputs, outputs) then b (outputs)  y: (batch, outputs)
    ///     // per position: x: (batch, time, inputs)  y: (batch, time, outputs)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func denseForward<T: TensorScalar>(
        _ x: Tensor<T>, parameters: UnsafeBufferPointer<T>, inputs: Int, outputs: Int, time: Int? = nil, activation: Activation,
        into y: inout Tensor<T>
    ) {
        // x: (rows, inputs)  w: (inputs, outputs)  b: (outputs)  y: (rows, outputs), rows = batch or batch·time
        let rows = x.count / inputs
        if let time { y.resize(batch: rows / time, time: time, features: outputs) } else { y.resize(rows: rows, columns: outputs) }
        x.withUnsafeBufferPointer { px in
            y.withUnsafeMutableBufferPointer { py in
                let w = parameters.baseAddress!, b = parameters.baseAddress! + inputs * outputs
                // y = b in every row, then y += x·w (beta 1: the product adds to the bias instead of
                // OpenBLAS clearing y first and a pass adding b after)
                for row in 0..<rows { (py.baseAddress! + row * outputs).update(from: b, count: outputs) }
                T.blasGemm(
                    transposeA: false, transposeB: false, m: rows, n: outputs, k: inputs,
                    alpha: 1, a: px.baseAddress!, lda: inputs, b: w, ldb: outputs,
                    beta: 1, c: py.baseAddress!, ldc: outputs)
                // y = f(y) (softmax: left to the loss head)
                activate(activation, py)
            }
        }
    }

    /// A dense layer's backward pass: `dz = dy ⊙ f'(z)` from the saved output, `dw += xᵀ·dz` and
    /// `db += Σ dz` into `gradients`, and `dx = dz·wᵀ` when `computeInputGradient`; per position,
    /// the sums run over every position of every sample.
    ///
    ///     // x: (batch, inputs)  y, dy, dz: (batch, outputs)  dw: (inputs, outputs)  db: (outputs)  dx: (batch, inputs)
    ///     // per position: x, dx: (batch, time, inputs)  y, dy: (batch, time, outputs)  dz: (batch·time, outputs)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func denseBackward<T: TensorScalar>(
        input x: Tensor<T>, output y: Tensor<T>, outputGradient dy: Tensor<T>,
        parameters: UnsafeBufferPointer<T>, gradients: UnsafeMutableBufferPointer<T>,
        inputs: Int, outputs: Int, activation: Activation,
        preActivationGradient dz: inout Tensor<T>, computeInputGradient: Bool, inputGradient dx: inout Tensor<T>
    ) {
        // x: (rows, inputs)  dy, dz: (rows, outputs)  dw: (inputs, outputs)  db: (outputs)  dx: (rows, inputs)
        densePreActivationGradient(output: y, outputGradient: dy, outputs: outputs, activation: activation, into: &dz)
        // dw += xᵀ·dz  (beta 1: backward adds into the gradient buffer)
        denseWeightProduct(input: x, preActivationGradient: dz, inputs: inputs, outputs: outputs, alpha: 1, beta: 1, into: gradients.baseAddress!)
        dz.withUnsafeBufferPointer { pdz in
            // db += Σ over the rows of dz
            addColumnSums(pdz, to: UnsafeMutableBufferPointer(rebasing: gradients[inputs * outputs..<inputs * outputs + outputs]))
        }
        if computeInputGradient {
            denseInputGradient(input: x, preActivationGradient: dz, parameters: parameters, inputs: inputs, outputs: outputs, into: &dx)
        }
    }

    /// A dense layer's backward pass with a plain SGD update (``SGDStep``) computed in the weight
    /// gradient's product: `dz = dy ⊙ f'(z)`, `dx = dz·wᵀ` when `computeInputGradient` (from `w`
    /// before the update), then `w ← (1 - lr·λ)·w - lr·xᵀ·dz` as one product into `w`, and
    /// `b ← b - lr·(Σ dz + λ·b)` through the bias's part of `gradients`, scratch space. The weight
    /// gradient is never stored: no clearing of it, no pass of the update over it. `offset` is the
    /// layer's start in the flat buffer, which says where `step`'s weight decay applies.
    ///
    ///     // x: (batch, inputs)  y, dy, dz: (batch, outputs)  w: (inputs, outputs)  b: (outputs)  dx: (batch, inputs)
    ///
    /// - Returns: false, having done nothing, when the decay covers part of the weight or the bias only.
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func denseBackwardUpdating<T: TensorScalar>(
        input x: Tensor<T>, output y: Tensor<T>, outputGradient dy: Tensor<T>,
        parameters: UnsafeMutableBufferPointer<T>, gradients: UnsafeMutableBufferPointer<T>,
        inputs: Int, outputs: Int, activation: Activation, step: SGDStep, offset: Int,
        preActivationGradient dz: inout Tensor<T>, computeInputGradient: Bool, inputGradient dx: inout Tensor<T>
    ) -> Bool {
        let weights = inputs * outputs
        guard let weightDecay = step.weightDecay(over: offset..<offset + weights).map(T.init),
            let biasDecay = step.weightDecay(over: offset + weights..<offset + weights + outputs).map(T.init)
        else { return false }
        densePreActivationGradient(output: y, outputGradient: dy, outputs: outputs, activation: activation, into: &dz)
        if computeInputGradient {
            denseInputGradient(
                input: x, preActivationGradient: dz, parameters: UnsafeBufferPointer(parameters), inputs: inputs, outputs: outputs,
                into: &dx)
        }
        // w ← (1 - lr·λ)·w - lr·xᵀ·dz
        let lr = T(step.learningRate)
        denseWeightProduct(
            input: x, preActivationGradient: dz, inputs: inputs, outputs: outputs, alpha: -lr, beta: 1 - lr * weightDecay,
            into: parameters.baseAddress!)
        // db = Σ over the rows of dz, then b ← b - lr·(db + λ·b)
        let db = UnsafeMutableBufferPointer(rebasing: gradients[weights..<weights + outputs])
        Tensor<T>.zero(db)
        dz.withUnsafeBufferPointer { addColumnSums($0, to: db) }
        sgdUpdate(
            parameters: UnsafeMutableBufferPointer(rebasing: parameters[weights..<weights + outputs]),
            gradients: UnsafeBufferPointer(db), learningRate: lr, weightDecay: biasDecay)
        return true
    }

    /// `dz = dy ⊙ f'(z)` from the saved output `y`, resized to `(rows, outputs)`.
    private static func densePreActivationGradient<T: TensorScalar>(
        output y: Tensor<T>, outputGradient dy: Tensor<T>, outputs: Int, activation: Activation, into dz: inout Tensor<T>
    ) {
        dz.resize(rows: y.count / outputs, columns: outputs)
        y.withUnsafeBufferPointer { py in
            dy.withUnsafeBufferPointer { pdy in
                dz.withUnsafeMutableBufferPointer { activationBackward(activation, output: py, gradient: pdy, into: $0) }
            }
        }
    }

    /// `c = alpha·xᵀ·dz + beta·c`, `c: (inputs, outputs)`: the weight gradient's product.
    private static func denseWeightProduct<T: TensorScalar>(
        input x: Tensor<T>, preActivationGradient dz: Tensor<T>, inputs: Int, outputs: Int, alpha: T, beta: T,
        into c: UnsafeMutablePointer<T>
    ) {
        x.withUnsafeBufferPointer { px in
            dz.withUnsafeBufferPointer { pdz in
                T.blasGemm(
                    transposeA: true, transposeB: false, m: inputs, n: outputs, k: dz.rows,
                    alpha: alpha, a: px.baseAddress!, lda: inputs, b: pdz.baseAddress!, ldb: outputs,
                    beta: beta, c: c, ldc: outputs)
            }
        }
    }

    /// `dx = dz·wᵀ`, `dx` shaped like `x`, whose shape says whether it is (batch, inputs) or per
    /// position (batch, time, inputs).
    private static func denseInputGradient<T: TensorScalar>(
        input x: Tensor<T>, preActivationGradient dz: Tensor<T>, parameters: UnsafeBufferPointer<T>, inputs: Int, outputs: Int,
        into dx: inout Tensor<T>
    ) {
        if x.rank == 2 { dx.resize(rows: x.shape[0], columns: x.shape[1]) } else { dx.resize(to: x.shape) }
        dz.withUnsafeBufferPointer { pdz in
            dx.withUnsafeMutableBufferPointer { pdx in
                T.blasGemm(
                    transposeA: false, transposeB: true, m: dz.rows, n: inputs, k: outputs,
                    alpha: 1, a: pdz.baseAddress!, lda: outputs, b: parameters.baseAddress!, ldb: outputs,
                    beta: 0, c: pdx.baseAddress!, ldc: inputs)
            }
        }
    }
}
