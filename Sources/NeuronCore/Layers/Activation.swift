// Activations: applied in place to a layer's pre-activation, and differentiated from the saved
// output alone (tanh: 1 - y², sigmoid: y·(1 - y), relu: y > 0), so backward never recomputes them.

/// The non-linearity at a dense layer's output.
public enum Activation: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// `tanh(z)`: the neuron's, and the default (Float: a vectorized approximation within 4e-7, see ``Float/tanh(inPlace:)``).
    case tanh
    /// `1 / (1 + e^-z)`.
    case sigmoid
    /// `max(0, z)`.
    case relu
    /// `z` unchanged.
    case identity
    /// `e^zⱼ / Σₖ e^zₖ` over each row. Only at the output, fused with the cross-entropy loss,
    /// whose gradient with respect to the pre-activation is simply `p - t`.
    case softmax

    public var description: String { rawValue }

    /// Applies the activation in place: `y = f(z)`, element-wise (softmax: row-wise).
    ///
    ///     // z → y: (batch, units), in place
    @_specialize(exported: true, where Scalar == Float)
    @_specialize(exported: true, where Scalar == Double)
    @_specialize(where Scalar == Float)
    @_specialize(where Scalar == Double)
    public func apply<Scalar: TensorScalar>(to y: inout Tensor<Scalar>) {
        let columns = y.columns
        y.withUnsafeMutableBufferPointer { p in
            switch self {
            case .tanh:
                Scalar.tanh(inPlace: p)
            case .sigmoid:
                for i in p.indices { p[i] = Self.sigmoid(p[i]) }
            case .relu:
                for i in p.indices where p[i] < 0 { p[i] = 0 }  // NaN stays NaN, so divergence stays visible
            case .identity:
                break
            case .softmax:
                var start = 0
                while start < p.count {
                    Self.softmaxRow(p, start: start, count: columns)
                    start += columns
                }
            }
        }
    }

    /// The chain rule through the activation from its saved output: `dz = dy ⊙ f'(z)`.
    ///
    ///     // y: (batch, units)  dy: (batch, units)  →  dz: (batch, units), may alias dy
    ///
    /// Softmax has no element-wise derivative; fused with cross-entropy the loss hands over
    /// `dz` directly, so here it passes the gradient through unchanged.
    @_specialize(exported: true, where Scalar == Float)
    @_specialize(exported: true, where Scalar == Double)
    @_specialize(where Scalar == Float)
    @_specialize(where Scalar == Double)
    public func backward<Scalar: TensorScalar>(output y: Tensor<Scalar>, gradient dy: Tensor<Scalar>, into dz: inout Tensor<Scalar>) {
        y.withUnsafeBufferPointer { py in
            dy.withUnsafeBufferPointer { pdy in
                dz.withUnsafeMutableBufferPointer { pdz in
                    switch self {
                    case .tanh:
                        for i in py.indices { pdz[i] = pdy[i] * (1 - py[i] * py[i]) }
                    case .sigmoid:
                        for i in py.indices { pdz[i] = pdy[i] * (py[i] * (1 - py[i])) }
                    case .relu:
                        for i in py.indices { pdz[i] = py[i] > 0 ? pdy[i] : 0 }
                    case .identity, .softmax:
                        for i in py.indices { pdz[i] = pdy[i] }
                    }
                }
            }
        }
    }

    @inline(__always)
    static func sigmoid<Scalar: TensorScalar>(_ z: Scalar) -> Scalar {
        // Two branches so that exp never overflows: e^-z for z ≥ 0, e^z for z < 0.
        if z >= 0 {
            return 1 / (1 + Scalar.exp(-z))
        } else {
            let e = Scalar.exp(z)
            return e / (1 + e)
        }
    }

    /// Softmax of one row in place, shifted by the row's maximum so that exp never overflows.
    @inline(__always)
    static func softmaxRow<Scalar: TensorScalar>(_ p: UnsafeMutableBufferPointer<Scalar>, start: Int, count: Int) {
        var maximum = -Scalar.infinity
        for j in start ..< start + count where p[j] > maximum { maximum = p[j] }
        var sum: Scalar = 0
        for j in start ..< start + count {
            p[j] = Scalar.exp(p[j] - maximum)
            sum += p[j]
        }
        let inverse = 1 / sum
        for j in start ..< start + count { p[j] *= inverse }
    }
}
