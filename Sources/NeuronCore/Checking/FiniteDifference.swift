// Faux gradients: a derivative faked without calculus, by nudging one quantity and watching the
// loss. They verify the analytic gradients; they never replace them.

/// A finite-difference rule and its step size.
///
/// - Forward: `(L(q + tiny) - L(q)) / tiny`, error O(tiny). Docs/Reference.md §2's reference, tiny = 1e-4.
/// - Central: `(L(q + tiny) - L(q - tiny)) / (2·tiny)`, error O(tiny²); what a gradient check
///   uses in Double (PyTorch's gradcheck default step is 1e-6).
/// - Five-point: `(-L(q + 2h) + 8·L(q + h) - 8·L(q - h) + L(q - 2h)) / (12·h)`, error O(h⁴).
///   Its truncation is so small that h can be ~1e-3, where rounding noise in the loss (about
///   ε·|L| / h) is a thousand times smaller than at central's 1e-6: what it takes for relative
///   errors near 1e-7 on gradient entries as small as 1e-5.
public struct FiniteDifference<Scalar: TensorScalar>: Equatable, Sendable, CustomStringConvertible {
    /// Which difference quotient to take.
    public enum Method: String, Equatable, Sendable, CaseIterable, Codable {
        case forward, central, fivePoint
    }

    /// Which difference quotient to take.
    public let method: Method
    /// The nudge; finite and greater than zero.
    public let tiny: Scalar

    /// A finite-difference rule.
    /// - Throws: ``NeuronError/invalidHyperparameter(name:value:allowed:)`` unless `tiny` is finite and positive.
    public init(_ method: Method = .forward, tiny: Scalar = Scalar(1e-4)) throws(NeuronError) {
        guard tiny.isFinite, tiny > 0 else {
            throw .invalidHyperparameter(name: "tiny", value: "\(tiny)", allowed: "a finite number greater than 0")
        }
        self.method = method
        self.tiny = tiny
    }

    /// Docs/Reference.md §2's rule: forward difference with tiny = 1e-4.
    public static var reference: FiniteDifference { try! FiniteDifference(.forward, tiny: Scalar(1e-4)) }

    /// The faux derivative of `loss` at nudge 0, where `loss(delta)` is the loss with the quantity moved by `delta`.
    @inlinable
    public func derivative<E: Error>(_ loss: (Scalar) throws(E) -> Scalar) throws(E) -> Scalar {
        switch method {
        case .forward: return (try loss(tiny) - loss(0)) / tiny
        case .central: return (try loss(tiny) - loss(-tiny)) / (2 * tiny)
        case .fivePoint:
            let near = try loss(tiny) - loss(-tiny)
            let far = try loss(2 * tiny) - loss(-2 * tiny)
            return (8 * near - far) / (12 * tiny)
        }
    }

    /// `forward difference, tiny 0.0001`.
    public var description: String { "\(method) difference, tiny \(tiny)" }
}

/// An analytic gradient next to its faux one, and how far apart they are.
public struct GradientComparison<Scalar: TensorScalar>: Equatable, Sendable {
    /// The gradient from the chain rule.
    public var analytic: Scalar
    /// The gradient from finite differences.
    public var faux: Scalar

    /// A comparison of two values of the same gradient.
    public init(analytic: Scalar, faux: Scalar) {
        self.analytic = analytic
        self.faux = faux
    }

    /// `|analytic - faux|`.
    public var absoluteError: Scalar { abs(analytic - faux) }

    /// `|analytic - faux| / max(|analytic|, |faux|)`, and 0 when both are 0.
    public var relativeError: Scalar {
        let scale = max(abs(analytic), abs(faux))
        return scale == 0 ? 0 : absoluteError / scale
    }

    /// Whether they agree as PyTorch's gradcheck judges it: `|a - n| <= atol + rtol * |n|`.
    public func agrees(absoluteTolerance atol: Scalar, relativeTolerance rtol: Scalar) -> Bool {
        absoluteError <= atol + rtol * abs(faux)
    }
}
