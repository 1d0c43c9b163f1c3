import Testing

@testable import NeuronCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("Synthetic datasets")
struct SyntheticTests {
    @Test("XOR: the four rows and their exclusive or")
    func xor() {
        func check<Scalar: TensorScalar>(_: Scalar.Type) {
            let d = Synthetic.xor(as: Scalar.self)
            #expect(d.features.rowArrays == [[0, 0], [0, 1], [1, 0], [1, 1]])
            #expect(d.targets.rowArrays == [[0], [1], [1], [0]])
            #expect(d.labels == nil && !d.isClassification && d.featureNames == ["x0", "x1"])
        }
        check(Float.self)
        check(Double.self)
    }

    @Test("Sine: x in [-π, π), target sin(x), reproducible by seed, same points in both precisions")
    func sine() throws {
        var g = SeededGenerator(seed: 3)
        let d: Dataset<Double> = try Synthetic.sine(count: 500, generator: &g)
        #expect(d.features.shape == [500, 1] && d.targets.shape == [500, 1] && d.featureNames == ["x"])
        #expect(d.features.scalars.allSatisfy { $0 >= -Double.pi && $0 < Double.pi })
        #expect(zip(d.features.scalars, d.targets.scalars).allSatisfy { sin($0) == $1 })
        // Spread over the whole interval: both ends are reached within a tenth.
        #expect(d.features.scalars.min()! < -2.9 && d.features.scalars.max()! > 2.9)
        // The first point is the generator's first uniform draw.
        var h = SeededGenerator(seed: 3)
        #expect(d.features[0] == h.uniform(-Double.pi, Double.pi))
        var f = SeededGenerator(seed: 3)
        let single: Dataset<Float> = try Synthetic.sine(count: 500, generator: &f)
        #expect(single.features.scalars == d.features.scalars.map { Float($0) })
        #expect(single.targets.scalars == d.targets.scalars.map { Float($0) })
    }

    @Test("Sine needs at least one point")
    func sineCount() {
        var g = SeededGenerator(seed: 1)
        #expect(throws: DataError.invalidArgument(name: "count", value: "0", expected: "at least 1 point")) {
            let _: Dataset<Float> = try Synthetic.sine(count: 0, generator: &g)
        }
    }
}
