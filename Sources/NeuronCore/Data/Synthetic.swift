#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Small made-up datasets whose answers are known: for first runs, tests and demonstrations.
public enum Synthetic {
    /// The four XOR rows: features [[0, 0], [0, 1], [1, 0], [1, 1]], targets [[0], [1], [1], [0]].
    ///
    /// Regression targets with one output (labels nil): the classic problem a single neuron
    /// cannot solve and one hidden layer can.
    public static func xor<Scalar: TensorScalar>(as: Scalar.Type = Scalar.self) -> Dataset<Scalar> {
        Dataset(
            unchecked: Tensor(matrix: [0, 0, 0, 1, 1, 0, 1, 1], rows: 4, columns: 2),
            targets: Tensor(matrix: [0, 1, 1, 0], rows: 4, columns: 1),
            labels: nil, classNames: nil, featureNames: nil)
    }

    /// `count` points x uniform in [-π, π) from `generator`, with target sin(x): regression, one
    /// feature "x", one output.
    /// - Throws: ``DataError/invalidArgument(name:value:expected:)`` for a count below 1.
    public static func sine<Scalar: TensorScalar>(
        count: Int, generator: inout SeededGenerator
    ) throws(DataError) -> Dataset<Scalar> {
        guard count >= 1 else { throw .invalidArgument(name: "count", value: "\(count)", expected: "at least 1 point") }
        // x: (count, 1)  y: (count, 1); drawn and evaluated in Double so both precisions see the same points
        var x = [Scalar](), y = [Scalar]()
        x.reserveCapacity(count)
        y.reserveCapacity(count)
        for _ in 0..<count {
            let value = generator.uniform(-Double.pi, Double.pi)
            x.append(Scalar(value))
            y.append(Scalar(sin(value)))
        }
        return Dataset(
            unchecked: Tensor(matrix: x, rows: count, columns: 1), targets: Tensor(matrix: y, rows: count, columns: 1),
            labels: nil, classNames: nil, featureNames: ["x"])
    }
}
