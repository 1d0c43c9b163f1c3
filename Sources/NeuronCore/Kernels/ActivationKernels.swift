// Activations applied in place to a layer's pre-activation, and differentiated from the saved
// output alone (tanh: 1 - y², sigmoid: y·(1 - y), relu: y > 0), so backward never recomputes
// them. Under them, in `Naive`, each activation and its derivative written from the
// pre-activation instead, an oracle that shares nothing with them. The GELU layer's passes follow
// the activations' (its naive definition is beside the layer, in Layers/GELU.swift).

extension Kernels {
    /// `y = f(z)` in place, element by element; softmax is not element-wise and is left to the
    /// loss head (``softmaxRows(_:columns:)``), so here it leaves `z` as it is.
    ///
    ///     // z → y: (batch, units), in place
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func activate<T: TensorScalar>(_ activation: Activation, _ y: UnsafeMutableBufferPointer<T>) {
        switch activation {
        case .tanh:
            T.tanh(inPlace: y)
        case .sigmoid:
            for i in y.indices { y[i] = sigmoid(y[i]) }
        case .relu:
            // max(y, 0) is `0 >= y ? 0 : y`: NaN stays NaN, so divergence stays visible. Written as
            // `y < 0 ? 0 : y` the compiler made it a store under a branch, mispredicted on half of a
            // layer's outputs, many times slower than this, which vectorizes (Benchmarks/README.md,
            // “Figures behind the code”: relu as a select).
            for i in y.indices { y[i] = Swift.max(y[i], 0) }
        case .identity, .softmax:
            break
        }
    }

    /// `y = f(y + b)` in place: ``addBias(_:to:)`` then ``activate(_:_:)``, in one pass where the
    /// activation allows it (relu, identity), with the same numbers as the two.
    ///
    ///     // y: (rows, columns)  b: (columns)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func addBias<T: TensorScalar>(
        _ b: UnsafeBufferPointer<T>, thenActivate activation: Activation, _ y: UnsafeMutableBufferPointer<T>
    ) {
        // y: (rows, columns)  b: (columns)
        guard activation == .relu else {
            addBias(b, to: y)
            activate(activation, y)
            return
        }
        // One pass over a convolution's output instead of two (5.5 MB for W7's first): the same
        // addition, then the same max, so the numbers are those of the two passes.
        let columns = b.count
        guard columns > 0, let bs = b.baseAddress, let ys = y.baseAddress else { return }
        for row in stride(from: 0, to: y.count, by: columns) {
            let yr = ys + row
            for j in 0..<columns { yr[j] = Swift.max(yr[j] + bs[j], 0) }
        }
    }

    /// The chain rule through an activation from its saved output: `dz = dy ⊙ f'(z)`, with
    /// `f'` written in terms of `y` (tanh: `1 - y²`, sigmoid: `y·(1 - y)`, relu: `y > 0`).
    ///
    ///     // y, dy, dz: (batch, units); dz may alias dy
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func activationBackward<T: TensorScalar>(
        _ activation: Activation, output y: UnsafeBufferPointer<T>, gradient dy: UnsafeBufferPointer<T>,
        into dz: UnsafeMutableBufferPointer<T>
    ) {
        switch activation {
        case .tanh:
            for i in y.indices { dz[i] = dy[i] * (1 - y[i] * y[i]) }
        case .sigmoid:
            for i in y.indices { dz[i] = dy[i] * (y[i] * (1 - y[i])) }
        case .relu:
            // Both loaded before the select, so that it is a select: with `dy[i]` read only when
            // `y > 0`, it was a branch per element (Benchmarks/README.md, “Figures behind the
            // code”: relu as a select).
            for i in y.indices {
                let output = y[i], gradient = dy[i]
                dz[i] = output > 0 ? gradient : 0
            }
        case .identity, .softmax:
            // Softmax has no element-wise derivative: the fused loss hands over dz directly.
            for i in y.indices { dz[i] = dy[i] }
        }
    }

    /// Softmax of each row in place, shifted by the row's maximum so that exp never overflows.
    ///
    ///     // z → p: (rows, columns), in place
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func softmaxRows<T: TensorScalar>(_ p: UnsafeMutableBufferPointer<T>, columns: Int) {
        // Every row shifted, then one exp over the whole buffer at the vector width (a row of a
        // vocabulary is short: 27 for the character models), then every row scaled.
        var start = 0
        while start < p.count {
            var maximum = -T.infinity
            for j in start..<start + columns where p[j] > maximum { maximum = p[j] }
            for j in start..<start + columns { p[j] -= maximum }
            start += columns
        }
        T.exp(inPlace: p)
        start = 0
        while start < p.count {
            var sum: T = 0
            for j in start..<start + columns { sum += p[j] }
            let inverse = 1 / sum
            for j in start..<start + columns { p[j] *= inverse }
            start += columns
        }
    }

    /// Two branches so that exp never overflows: e^-z for z ≥ 0, e^z for z < 0.
    @inline(__always)
    static func sigmoid<T: TensorScalar>(_ z: T) -> T {
        if z >= 0 {
            return 1 / (1 + T.libmExp(-z))
        } else {
            let e = T.libmExp(z)
            return e / (1 + e)
        }
    }
}

// GELU, `y = x·Φ(x)`: each pass is the type's (``TensorScalar/geluForward(_:approximation:gate:into:)``):
// Float's one loop in C at the CPU's vector width (Sources/CKernels), Double's the Swift loops
// below, a few flat loops over the whole buffer with erf, tanh and exp through the type's buffer
// functions between them, so that no loop calls into the C library.
extension Kernels {
    /// GELU forward, `y = x ⊙ gate`, keeping the gate for backward: the exact form's
    /// `gate = Φ(x) = (1 + erf(x/√2)) / 2`, or the tanh form's `gate = (1 + tanh(u)) / 2` with
    /// `u = √(2/π)·(x + 0.044715·x³)` (PyTorch's `approximate='tanh'`).
    ///
    ///     // x, gate, y: (n)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func geluForward<T: TensorScalar>(
        _ x: UnsafeBufferPointer<T>, approximation: GELUApproximation, gate: UnsafeMutableBufferPointer<T>,
        into y: UnsafeMutableBufferPointer<T>
    ) {
        T.geluForward(x, approximation: approximation, gate: gate, into: y)
    }

    /// ``geluForward(_:approximation:gate:into:)`` in Swift: Double's pass, the arithmetic of Float's C loop.
    ///
    ///     // x, gate, y: (n)
    static func geluForwardLoops<T: TensorScalar>(
        _ x: UnsafeBufferPointer<T>, approximation: GELUApproximation, gate: UnsafeMutableBufferPointer<T>,
        into y: UnsafeMutableBufferPointer<T>
    ) {
        // x, gate, y: (n); gate first holds erf's or tanh's argument, then the function in place
        switch approximation {
        case .none:
            let inverseSquareRoot2 = T(0.70710678118654752440)  // 1/√2
            for i in x.indices { gate[i] = x[i] * inverseSquareRoot2 }
            T.erf(inPlace: gate)
        case .tanh:
            let c = T(0.79788456080286535588), a = T(0.044715)  // √(2/π), and the cubic's coefficient
            for i in x.indices {
                let v = x[i]
                gate[i] = c * (v + a * v * v * v)
            }
            T.tanh(inPlace: gate)
        }
        for i in x.indices {
            gate[i] = T(0.5) * (1 + gate[i])
            y[i] = x[i] * gate[i]
        }
    }

    /// GELU backward from the saved gate: `dx = dy ⊙ (gate + x·gate′)`; exact, `gate′ = φ(x) =
    /// e^(-x²/2)/√(2π)`; tanh form, `gate′ = ½(1 - tanh²u)·u′ = 2·gate·(1 - gate)·√(2/π)·(1 +
    /// 3·0.044715·x²)` (the tanh read back from the gate, `1 - tanh²u = 4·gate·(1 - gate)`).
    ///
    ///     // x, gate, dy, dx: (n); dx may alias dy only in the tanh form (the exact form uses dx for e^(-x²/2) first)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func geluBackward<T: TensorScalar>(
        _ x: UnsafeBufferPointer<T>, gate: UnsafeBufferPointer<T>, outputGradient dy: UnsafeBufferPointer<T>,
        approximation: GELUApproximation, into dx: UnsafeMutableBufferPointer<T>
    ) {
        T.geluBackward(x, gate: gate, outputGradient: dy, approximation: approximation, into: dx)
    }

    /// ``geluBackward(_:gate:outputGradient:approximation:into:)`` in Swift: Double's pass, the
    /// arithmetic of Float's C loop.
    ///
    ///     // x, gate, dy, dx: (n); dx may alias dy only in the tanh form
    static func geluBackwardLoops<T: TensorScalar>(
        _ x: UnsafeBufferPointer<T>, gate: UnsafeBufferPointer<T>, outputGradient dy: UnsafeBufferPointer<T>,
        approximation: GELUApproximation, into dx: UnsafeMutableBufferPointer<T>
    ) {
        // x, gate, dy, dx: (n)
        switch approximation {
        case .none:
            // e^(-x²/2) into dx through the type's buffer exp (vectorized for Float, where glibc's
            // expf is a call per element: Benchmarks/README.md, “Figures behind the code”: GELU's
            // exp), then dx = dy ⊙ (gate + x·e^(-x²/2)/√(2π))
            for i in x.indices { dx[i] = -T(0.5) * x[i] * x[i] }
            T.exp(inPlace: dx)
            let inverseSquareRoot2Pi = T(0.39894228040143267794)  // 1/√(2π)
            for i in x.indices { dx[i] = dy[i] * (gate[i] + x[i] * inverseSquareRoot2Pi * dx[i]) }
        case .tanh:
            let c = T(0.79788456080286535588), a3 = T(3 * 0.044715)
            for i in x.indices {
                let v = x[i], s = gate[i]
                dx[i] = dy[i] * (s + v * 2 * s * (1 - s) * c * (1 + a3 * v * v))
            }
        }
    }
}

extension Naive {
    /// `f(z)` for one pre-activation, from the textbook definitions (the C library's tanh, even
    /// for Float; softmax, which is not element-wise, is the identity here as in a layer).
    public static func activation<Scalar: TensorScalar>(_ activation: Activation, _ z: Scalar) -> Scalar {
        switch activation {
        case .tanh: Scalar.libmTanh(z)
        case .sigmoid: 1 / (1 + Scalar.libmExp(-z))
        case .relu: z > 0 ? z : 0
        case .identity, .softmax: z
        }
    }

    /// `f'(z)` for one pre-activation, from the definitions written in `z`, not in the output:
    /// tanh' = 1 / cosh²(z), sigmoid' = e^-z / (1 + e^-z)², relu' = 1 for z > 0 else 0.
    public static func activationDerivative<Scalar: TensorScalar>(_ activation: Activation, _ z: Scalar) -> Scalar {
        switch activation {
        case .tanh:
            let cosh = (Scalar.libmExp(z) + Scalar.libmExp(-z)) / 2
            return 1 / (cosh * cosh)
        case .sigmoid:
            let e = Scalar.libmExp(-z)
            return e / ((1 + e) * (1 + e))
        case .relu: return z > 0 ? 1 : 0
        case .identity, .softmax: return 1
        }
    }

    /// Softmax of each row of `z`: `e^zⱼ / Σₖ e^zₖ`, with no shift (fine for the small logits of tests).
    public static func softmax<Scalar: TensorScalar>(_ z: Tensor<Scalar>) -> Tensor<Scalar> {
        var p = z
        for n in 0..<z.rows {
            var sum: Scalar = 0
            for j in 0..<z.columns { sum += Scalar.libmExp(z[n, j]) }
            for j in 0..<z.columns { p[n, j] = Scalar.libmExp(z[n, j]) / sum }
        }
        return p
    }
}
