import Foundation
import Testing

@testable import NeuronCore

@Suite("Standardizer: fit on training rows, apply to any set")
struct StandardizerTests {
    @Test("Mean and population deviation by hand; a constant column maps to 0")
    func byHand() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            // column 0: 1, 3 → mean 2, deviation 1;  column 1: 2, 2, → constant;  column 2: 0, 8 → mean 4, deviation 4
            let x = try Tensor<Scalar>(rows: [[1, 2, 0], [3, 2, 8]])
            let s = Standardizer(fitting: x)
            #expect(s.mean == [2, 2, 4] && s.standardDeviation == [1, 1, 4])
            var y = x
            try s.apply(to: &y)
            #expect(y.rowArrays == [[-1, 0, -1], [1, 0, 1]])
            // Another set is mapped with the training statistics, not its own.
            var other = try Tensor<Scalar>(rows: [[5, 4, 2]])
            try s.apply(to: &other)
            #expect(other.rowArrays == [[3, 2, -0.5]])
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("A constant column of an inexact value still gets deviation 1, not a rounding residue")
    func constantColumn() throws {
        let column = try Tensor<Float>(shape: [7, 1], scalars: Array(repeating: 0.1, count: 7))
        let s = Standardizer(fitting: column)
        #expect(s.standardDeviation == [1])
        #expect(Standardizer(fitting: Tensor<Double>(zeros: [0, 2])) == (try Standardizer(mean: [0, 0], standardDeviation: [1, 1])))
    }

    @Test("Standardized training columns have mean 0 and deviation 1")
    func moments() throws {
        var g = SeededGenerator(seed: 4)
        var x = Tensor<Double>.random([200, 3], using: &g)
        for r in 0..<200 { x[r, 1] = 50 + 10 * x[r, 1] }
        let s = Standardizer(fitting: x)
        try s.apply(to: &x)
        let refit = Standardizer(fitting: x)
        expectClose(refit.mean, [0, 0, 0], tolerance: 1e-12)
        expectClose(refit.standardDeviation, [1, 1, 1], tolerance: 1e-12)
    }

    @Test("Datasets: features standardized, targets untouched; a column count mismatch throws")
    func dataset() throws {
        var d = try Dataset<Double>(features: Tensor(rows: [[0], [4]]), targets: Tensor(rows: [[7], [9]]))
        let s = Standardizer(fitting: d.features)
        try s.apply(to: &d)
        #expect(d.features.rowArrays == [[-1], [1]] && d.targets.rowArrays == [[7], [9]])
        var wide = try Tensor<Double>(rows: [[1, 2]])
        #expect(throws: DataError.featureCountMismatch(expected: 1, found: 2)) { try s.apply(to: &wide) }
        #expect(wide.rowArrays == [[1, 2]])
    }

    @Test("Given statistics are checked; Codable round trip rejects bad ones")
    func givenStatistics() throws {
        #expect(throws: DataError.self) { try Standardizer<Float>(mean: [0, 1], standardDeviation: [1]) }
        #expect(throws: DataError.self) { try Standardizer<Float>(mean: [.nan], standardDeviation: [1]) }
        #expect(throws: DataError.self) { try Standardizer<Float>(mean: [0], standardDeviation: [0]) }
        #expect(throws: DataError.self) { try Standardizer<Float>(mean: [0], standardDeviation: [.infinity]) }
        let s = try Standardizer<Double>(mean: [1, 2], standardDeviation: [3, 4])
        #expect(try JSONDecoder().decode(Standardizer<Double>.self, from: JSONEncoder().encode(s)) == s)
        let zero = Data(#"{"mean":[1],"standardDeviation":[0]}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Standardizer<Double>.self, from: zero) }
    }
}
