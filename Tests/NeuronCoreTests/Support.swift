import Foundation
import Testing

@testable import NeuronCore

/// Expects `|actual - expected| <= tolerance` element by element, naming the first entry that is off.
func expectClose<Scalar: TensorScalar>(
    _ actual: [Scalar], _ expected: [Scalar], tolerance: Scalar,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(actual.count == expected.count, "counts differ: \(actual.count) vs \(expected.count)", sourceLocation: sourceLocation)
    for (i, (a, e)) in zip(actual, expected).enumerated() where !(abs(a - e) <= tolerance) {
        Issue.record("entry \(i): \(a) vs \(e), off by \(abs(a - e)) > \(tolerance)", sourceLocation: sourceLocation)
        return
    }
}

/// Expects `|actual - expected| <= tolerance`.
func expectClose<Scalar: TensorScalar>(
    _ actual: Scalar, _ expected: Scalar, tolerance: Scalar,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(
        abs(actual - expected) <= tolerance, "\(actual) vs \(expected), off by \(abs(actual - expected)) > \(tolerance)",
        sourceLocation: sourceLocation)
}

/// Expects `|actual - expected| <= tolerance · |expected|`.
func expectRelativelyClose<Scalar: TensorScalar>(
    _ actual: Scalar, _ expected: Scalar, tolerance: Scalar,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(
        abs(actual - expected) <= tolerance * abs(expected),
        "\(actual) vs \(expected), relative error \(abs(actual - expected) / abs(expected)) > \(tolerance)",
        sourceLocation: sourceLocation)
}

extension Tensor {
    /// A tensor of uniform values in [-1, 1) from a seeded generator.
    static func random(_ shape: [Int], using generator: inout SeededGenerator) -> Tensor {
        var t = Tensor(zeros: shape)
        for i in 0..<t.count { t[i] = Scalar(generator.uniform(-1, 1)) }
        return t
    }
}

/// Targets for a batch of a random network: a one-hot class per row for softmax cross-entropy,
/// values in (-0.9, 0.9) (inside tanh's range) otherwise.
func randomTargets(batch: Int, outputs: Int, loss: Loss, using g: inout SeededGenerator) -> Tensor<Double> {
    var t = Tensor<Double>(zeros: [batch, outputs])
    for n in 0..<batch {
        if loss == .softmaxCrossEntropy {
            t[n, g.index(below: outputs)] = 1
        } else {
            for j in 0..<outputs { t[n, j] = g.uniform(-0.9, 0.9) }
        }
    }
    return t
}

/// The tolerance for comparing a BLAS result with the naive loops' over `k` products:
/// both round each of `k` additions, in different orders, so the gap grows like `k · ε`.
func summationTolerance<Scalar: TensorScalar>(_: Scalar.Type, terms k: Int) -> Scalar {
    Scalar(4 * max(k, 1)) * Scalar.ulpOfOne
}

/// The message of the error that `body` throws, or "no error" when it does not throw.
func message<T, E: Error & CustomStringConvertible>(_ body: () throws(E) -> T) -> String {
    do {
        _ = try body()
        return "no error"
    } catch {
        return error.description
    }
}

/// The description of the error that `body` throws (any error), or "no error" when it does not throw.
func anyMessage<T>(_ body: () throws -> T) -> String {
    do {
        _ = try body()
        return "no error"
    } catch {
        return "\(error)"
    }
}

/// A new file in the temporary directory holding `contents`, its name ending in `name`.
func temporaryFile(_ name: String, contents: Data) throws -> String {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-\(UUID().uuidString)-\(name)")
    try contents.write(to: url)
    return url.path
}
