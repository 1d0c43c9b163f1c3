// The dense layer's passes, each one kernel: the products go to BLAS, the bias and the activation
// to the element-wise kernels. One call per pass, because a layer is reached through
// `any Layer<Float>`, where its own generic body would look up the metadata of every tensor and
// buffer it touches: here a generic caller pays one type check and runs the concrete copy
// (W1, a 1→1 network: 0.92 → 0.44 µs a step). The naive definitions are beside the layer
// (`Naive.denseForward`, `Naive.denseBackward` in Layers/Dense.swift).
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
                let w = parameters.baseAddress!
                // y = x·w
                T.blasGemm(
                    transposeA: false, transposeB: false, m: rows, n: outputs, k: inputs,
                    alpha: 1, a: px.baseAddress!, lda: inputs, b: w, ldb: outputs,
                    beta: 0, c: py.baseAddress!, ldc: outputs)
                // y += b, then y = f(y) (softmax: left to the loss head)
                addBias(UnsafeBufferPointer(rebasing: parameters[inputs * outputs..<inputs * outputs + outputs]), thenActivate: activation, py)
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
        let rows = x.count / inputs
        dz.resize(rows: rows, columns: outputs)
        y.withUnsafeBufferPointer { py in
            dy.withUnsafeBufferPointer { pdy in
                dz.withUnsafeMutableBufferPointer { pdz in
                    // dz = dy ⊙ f'(z), from the saved output
                    activationBackward(activation, output: py, gradient: pdy, into: pdz)
                }
            }
        }
        x.withUnsafeBufferPointer { px in
            dz.withUnsafeBufferPointer { pdz in
                let dw = gradients.baseAddress!
                // dw += xᵀ·dz  (beta 1: backward adds into the gradient buffer)
                T.blasGemm(
                    transposeA: true, transposeB: false, m: inputs, n: outputs, k: rows,
                    alpha: 1, a: px.baseAddress!, lda: inputs, b: pdz.baseAddress!, ldb: outputs,
                    beta: 1, c: dw, ldc: outputs)
                // db += Σ over the rows of dz
                addColumnSums(pdz, to: UnsafeMutableBufferPointer(rebasing: gradients[inputs * outputs..<inputs * outputs + outputs]))
            }
        }
        guard computeInputGradient else { return }
        // dx: like x, whose shape says whether it is (batch, inputs) or per position (batch, time, inputs)
        if x.rank == 2 { dx.resize(rows: x.shape[0], columns: x.shape[1]) } else { dx.resize(to: x.shape) }
        dz.withUnsafeBufferPointer { pdz in
            dx.withUnsafeMutableBufferPointer { pdx in
                // dx = dz·wᵀ
                T.blasGemm(
                    transposeA: false, transposeB: true, m: rows, n: inputs, k: outputs,
                    alpha: 1, a: pdz.baseAddress!, lda: outputs, b: parameters.baseAddress!, ldb: outputs,
                    beta: 0, c: pdx.baseAddress!, ldc: inputs)
            }
        }
    }
}
