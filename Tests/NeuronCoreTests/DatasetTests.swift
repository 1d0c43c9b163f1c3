import Testing

@testable import NeuronCore

@Suite("Dataset: features, targets, labels")
struct DatasetTests {
    /// Four samples of two features, classes b, a, b, c (indices 1, 0, 1, 2).
    private func sample<Scalar: TensorScalar>(_: Scalar.Type) throws -> Dataset<Scalar> {
        try .classification(
            features: Tensor(rows: [[0, 1], [2, 3], [4, 5], [6, 7]]), labels: [1, 0, 1, 2], classNames: ["a", "b", "c"])
    }

    @Test("classification builds one-hot targets; counts and default feature names")
    func classification() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            let d = try sample(Scalar.self)
            #expect(d.targets.rowArrays == [[0, 1, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
            #expect(d.count == 4 && d.featureCount == 2 && d.outputCount == 3 && d.isClassification)
            #expect(d.featureNames == ["x0", "x1"])
            #expect("\(d)" == "Dataset(4 samples, 2 features → 3 classes)")
            // The checked initializer accepts the same fields.
            #expect(try Dataset(features: d.features, targets: d.targets, labels: d.labels, classNames: d.classNames) == d)
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("Regression: no labels, named features")
    func regression() throws {
        let d = try Dataset<Double>(
            features: Tensor(rows: [[1], [2]]), targets: Tensor(rows: [[10, 11], [20, 21]]), featureNames: ["size"])
        #expect(!d.isClassification && d.labels == nil && d.classNames == nil)
        #expect(d.featureNames == ["size"] && d.outputCount == 2)
        #expect("\(d)" == "Dataset(2 samples, 1 feature → 2 outputs)")
    }

    @Test("Inconsistent fields throw, saying what does not fit")
    func inconsistent() throws {
        let x = try Tensor<Float>(rows: [[0, 1], [2, 3]])
        let oneHot = try Tensor<Float>(rows: [[1, 0], [0, 1]])
        let oneRow = try Tensor<Float>(rows: [[1, 0]])
        func message(_ body: () throws(DataError) -> Dataset<Float>) -> String {
            do { _ = try body(); return "no error" } catch { return error.description }
        }
        #expect(
            message { () throws(DataError) in try Dataset(features: Tensor(vector: [1, 2]), targets: oneHot) }
                .contains("features must be rank 2"))
        #expect(
            message { () throws(DataError) in try Dataset(features: x, targets: Tensor(vector: [1, 2])) }
                .contains("targets must be rank 2"))
        #expect(
            message { () throws(DataError) in try Dataset(features: x, targets: oneRow) }
                .contains("features have 2 rows but targets have 1"))
        #expect(
            message { () throws(DataError) in try Dataset(features: x, targets: oneHot, labels: [0]) }
                .contains("1 labels for 2 samples"))
        #expect(
            message { () throws(DataError) in try Dataset(features: x, targets: oneHot, labels: [0, 2]) }
                .contains("sample 1 has label 2; expected 0..<2"))
        #expect(
            message { () throws(DataError) in try Dataset(features: x, targets: oneHot, labels: [1, 1]) }
                .contains("targets row 0 is not the one-hot row of label 1"))
        #expect(
            message { () throws(DataError) in try Dataset(features: x, targets: oneHot, labels: [0, 1], classNames: ["a"]) }
                .contains("1 class names for 2 target columns"))
        #expect(
            message { () throws(DataError) in try Dataset(features: x, targets: oneHot, classNames: ["a", "b"]) }
                .contains("class names given without labels"))
        #expect(
            message { () throws(DataError) in try Dataset(features: x, targets: oneHot, featureNames: ["only"]) }
                .contains("1 feature names for 2 feature columns"))
        #expect(
            message { () throws(DataError) in try .classification(features: x, labels: [0, -1], classNames: ["a", "b"]) }
                .contains("sample 1 has label -1"))
    }

    @Test("subset takes rows in the given order, labels with them")
    func subset() throws {
        let s = try sample(Double.self).subset([3, 0, 0])
        #expect(s.features.rowArrays == [[6, 7], [0, 1], [0, 1]])
        #expect(s.targets.rowArrays == [[0, 0, 1], [0, 1, 0], [0, 1, 0]])
        #expect(s.labels == [2, 1, 1] && s.classNames == ["a", "b", "c"])
        #expect(try sample(Double.self).subset([]).count == 0)
    }

    @Test("split: shuffled, the last fraction (rounded, at least 1) validates, reproducible by seed")
    func split() throws {
        let rows = (0..<10).map { [Double($0)] }
        let d = try Dataset<Double>(features: Tensor(rows: rows), targets: Tensor(rows: rows))
        var g = SeededGenerator(seed: 7)
        let (training, validation) = try d.split(validationFraction: 0.25, generator: &g)
        // 10 · 0.25 = 2.5 rounds to 3 (schoolbook rounding, away from zero on ties)
        #expect(training.count == 7 && validation.count == 3)
        let seen = (training.features.scalars + validation.features.scalars).sorted()
        #expect(seen == (0..<10).map(Double.init))
        #expect(training.features != d.subset(Array(0..<7)).features)  // shuffled, not the first seven
        // The same seed gives the same split: the order is the generator's shuffle of 0..<10.
        var h = SeededGenerator(seed: 7)
        var order = Array(0..<10)
        h.shuffle(&order)
        #expect(validation.features.scalars == order[7...].map(Double.init))
        // A tiny fraction still validates on one row; zero validates on none.
        var g2 = SeededGenerator(seed: 1)
        #expect(try d.split(validationFraction: 0.01, generator: &g2).validation.count == 1)
        let none = try d.split(validationFraction: 0, generator: &g2)
        #expect(none.training.count == 10 && none.validation.count == 0 && none.validation.featureCount == 1)
    }

    @Test("split rejects fractions outside [0, 1) and one that leaves no training rows")
    func splitErrors() throws {
        let d = try Dataset<Float>(features: Tensor(rows: [[1], [2]]), targets: Tensor(rows: [[1], [2]]))
        var g = SeededGenerator(seed: 1)
        for bad in [-0.1, 1, 1.5, .nan] {
            #expect(throws: DataError.self) { try d.split(validationFraction: bad, generator: &g) }
        }
        do {
            _ = try d.split(validationFraction: 0.9, generator: &g)  // 2 · 0.9 = 1.8 → 2 of 2 rows
            Issue.record("expected an error")
        } catch {
            #expect(error.description.contains("leaves at least one of the 2 samples for training"))
        }
    }

    @Test("splitRows names the rows split puts in each part; counts out of range are refused")
    func splitRows() throws {
        let rows = (0..<10).map { [Double($0)] }
        let d = try Dataset<Double>(features: Tensor(rows: rows), targets: Tensor(rows: rows))
        var g = SeededGenerator(seed: 7), h = SeededGenerator(seed: 7)
        let (training, validation) = try d.split(validationFraction: 0.25, generator: &g)
        let named = try Dataset<Double>.splitRows(count: 10, validationCount: 3, generator: &h)
        #expect(named.training.map(Double.init) == training.features.scalars)  // row i holds the value i
        #expect(named.validation.map(Double.init) == validation.features.scalars)
        for (count, held) in [(-1, 0), (4, 5), (4, -1)] {
            #expect(throws: DataError.self) { try Dataset<Double>.splitRows(count: count, validationCount: held, generator: &h) }
        }
    }

    @Test("converted changes the scalar type and keeps everything else")
    func converted() throws {
        let d = try sample(Float.self)
        let e = d.converted(to: Double.self)
        #expect(e.features.scalars == [0, 1, 2, 3, 4, 5, 6, 7] && e.features.shape == [4, 2])
        #expect(e.targets.shape == [4, 3] && e.labels == d.labels && e.classNames == d.classNames)
        #expect(e.converted(to: Float.self) == d)
        let third = try Dataset<Double>(features: Tensor(rows: [[1.0 / 3]]), targets: Tensor(rows: [[0]]))
        #expect(third.converted(to: Float.self).features[0] == Float(1.0 / 3))
    }
}
