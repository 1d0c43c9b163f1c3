import Foundation
import NeuronCore
import Testing

@testable import NeuronTraining

@Suite("RunData: a run's rows, split and preprocessed as its config says")
struct RunDataTests {
    /// Ten rows whose first feature is the row number, so that each row can be told apart after preprocessing.
    private func numberTable(in directory: CheckpointTestDirectory) throws {
        let rows = (0..<10).map { n in "\(n),\(Double(n * n) / 10),\(n % 2 == 0 ? "even" : "odd")" }
        _ = try directory.write(Array((["n,square,parity"] + rows).joined(separator: "\n").utf8), "table.csv")
    }

    @Test("CSV: validation rows split off first; the statistics are the training rows' alone, applied to both")
    func csvStandardizedOnTrainingRows() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        try numberTable(in: directory)
        let run = try config(
            """
            model: {layers: [{units: 2, activation: softmax}]}
            data: {kind: csv, path: table.csv, labelColumn: parity, validationSplit: 0.3}
            """, in: directory.path)
        let data = try RunData<Double>(run.data, seed: 5)
        let validation = try #require(data.validation)
        #expect(data.training.count == 7 && validation.count == 3 && data.test == nil)
        guard case let .standardize(mean, deviation) = data.preprocessing else {
            Issue.record("expected standardization, got \(data.preprocessing)")
            return
        }
        // Undone, the two sets are the table's rows, each once, with their labels.
        func numbers(_ set: Dataset<Double>) -> [Double] { column(0, of: set).map { ($0 * deviation[0] + mean[0]).rounded() } }
        #expect((numbers(data.training) + numbers(validation)).sorted() == (0..<10).map(Double.init))
        let even = try #require(data.training.classNames?.firstIndex(of: "even"))
        #expect(zip(numbers(data.training), data.training.labels ?? []).allSatisfy { n, label in (Int(n) % 2 == 0) == (label == even) })
        // Fitted on the training rows: there, each column has mean 0 and deviation 1 ...
        for c in 0..<2 {
            let (m, d) = meanAndDeviation(column(c, of: data.training))
            expectClose(m, 0, tolerance: 1e-12)
            expectClose(d, 1, tolerance: 1e-12)
        }
        // ... and the mean is the training rows', not the whole table's (4.5).
        let trainingNumbers = numbers(data.training)
        expectClose(mean[0], meanAndDeviation(trainingNumbers).mean, tolerance: 1e-12)
        expectClose(deviation[0], meanAndDeviation(trainingNumbers).deviation, tolerance: 1e-12)
        #expect(abs(mean[0] - 4.5) > 0.1)
        // The split is drawn from the seed: the same seed gives the same rows, another seed others.
        #expect(try RunData<Double>(run.data, seed: 5).training == data.training)
        #expect(try RunData<Double>(run.data, seed: 6).training != data.training)
    }

    @Test("CSV: limit keeps the first rows; normalization none leaves the features as read")
    func limitAndNone() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        try numberTable(in: directory)
        let run = try config(
            """
            model: {layers: [{units: 2, activation: softmax}]}
            data: {kind: csv, path: table.csv, labelColumn: parity, validationSplit: 0, limit: 4, normalization: none}
            """, in: directory.path)
        let data = try RunData<Float>(run.data, seed: 1)
        #expect(data.preprocessing == .none && data.validation == nil)
        #expect(column(0, of: data.training) == [0, 1, 2, 3] && column(1, of: data.training) == [0, 0.1, 0.4, 0.9].map { Double(Float($0)) })
    }

    @Test("IDX: pixels scaled by 1/255, test rows scaled the same way and named by the same classes")
    func idxScaled() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let pixels: [UInt8] = [0, 51, 102, 255, 255, 0, 0, 0, 1, 2, 3, 4]
        _ = try directory.write(idx([3, 2, 2], pixels), "train-images")
        _ = try directory.write(idx([3], [0, 1, 2]), "train-labels")
        _ = try directory.write(idx([2, 2, 2], [255, 255, 255, 255, 0, 0, 0, 0]), "test-images")
        _ = try directory.write(idx([2], [2, 0]), "test-labels")
        let run = try config(
            """
            model: {layers: [{units: 10, activation: softmax}]}
            data: {kind: idx, trainImages: train-images, trainLabels: train-labels, testImages: test-images, testLabels: test-labels, validationSplit: 0}
            """, in: directory.path)
        let data = try RunData<Float>(run.data, seed: 1)
        #expect(data.preprocessing == .scale(1.0 / 255) && data.validation == nil)
        let scale = Float(1.0 / 255)
        #expect(data.training.features.scalars == pixels.map { Float($0) * scale })
        #expect(data.training.labels == [0, 1, 2])
        let test = try #require(data.test)
        #expect(test.features.scalars == [1, 1, 1, 1, 0, 0, 0, 0].map { Float($0) * 255 * scale } && test.labels == [2, 0])
        #expect(test.classNames == data.training.classNames)
    }

    @Test("IDX: test images of another size are refused at load time, naming both files and sizes")
    func idxTestImagesOfAnotherSize() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        _ = try directory.write(idx([3, 2, 2], Array(repeating: 0, count: 12)), "train-images")
        _ = try directory.write(idx([3], [0, 1, 2]), "train-labels")
        _ = try directory.write(idx([2, 1, 3], Array(repeating: 0, count: 6)), "test-images")
        _ = try directory.write(idx([2], [2, 0]), "test-labels")
        let run = try config(
            """
            model: {layers: [{units: 10, activation: softmax}]}
            data: {kind: idx, trainImages: train-images, trainLabels: train-labels, testImages: test-images, testLabels: test-labels}
            """, in: directory.path)
        #expect(
            throws: DataError.imageSizeMismatch(
                trainPath: directory.file("train-images"), trainSize: [2, 2], testPath: directory.file("test-images"), testSize: [1, 3])
        ) { try RunData<Float>(run.data, seed: 1) }
    }

    @Test("CSV: data.testPath reads test rows with the training file's columns and classes, preprocessed alike")
    func csvTestPath() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        try numberTable(in: directory)
        // Columns in another order, and only one class: the training file's order and classes hold.
        _ = try directory.write(Array("parity,square,n\nodd,0.1,1\nodd,0.9,3\n".utf8), "test.csv")
        let run = try config(
            """
            model: {layers: [{units: 2, activation: softmax}]}
            data: {kind: csv, path: table.csv, labelColumn: parity, testPath: test.csv, normalization: none, validationSplit: 0}
            """, in: directory.path)
        #expect(run.data.testPath == directory.file("test.csv"))
        let data = try RunData<Double>(run.data, seed: 1)
        let test = try #require(data.test)
        #expect(test.featureNames == ["n", "square"] && test.features.rowArrays == [[1, 0.1], [3, 0.9]])
        #expect(test.classNames == ["even", "odd"] && test.labels == [1, 1])
        // The engine evaluates on it after training, as on idx test images.
        let engine = try RunBuilder.build(run).engine
        #expect((engine as? NetworkTrainingEngine<Float, SGD<Float>>)?.test?.count == 2)
        // A class the training rows never had is an error at its place.
        _ = try directory.write(Array("n,square,parity\n1,0.1,prime\n".utf8), "test.csv")
        #expect(throws: DataError.self) { try RunData<Double>(run.data, seed: 1) }
    }

    @Test("A validation split that leaves no training rows says which key, and whether it was the default")
    func splitLeavesNothing() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        _ = try directory.write(Array("x,y\n1,a\n".utf8), "one.csv")
        let run = try config(
            """
            model: {layers: [{units: 1, activation: softmax}]}
            data: {kind: csv, path: one.csv, labelColumn: y}
            """, in: directory.path)
        #expect(
            throws: ConfigError(
                file: "test.yaml",
                message:
                    "data.validationSplit 0.1 (the default) holds out 1 of the 1 training rows for validation and leaves none to train on (data: \(directory.file("one.csv"))); set data.validationSplit: 0 or use more rows"
            )
        ) { try RunData<Float>(run.data, seed: 1, origin: run.origin) }
    }

    @Test("Standardizing a column whose statistics overflow names the data file and the column")
    func standardizeOverflow() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        _ = try directory.write(Array("x,big,y\n1,1e308,a\n2,-1e308,b\n3,1e308,a\n".utf8), "big.csv")
        let run = try config(
            """
            model: {layers: [{units: 2, activation: softmax}]}
            data: {kind: csv, path: big.csv, labelColumn: y, validationSplit: 0}
            """, in: directory.path)
        let message = "\(failure { try RunData<Double>(run.data, seed: 1) })"
        #expect(message.hasPrefix("\(directory.file("big.csv")): column \"big\": its mean"), "\(message)")
        #expect(message.contains("set data.normalization: none"))
    }

    @Test("Synthetic: XOR's four rows as they are; sine standardized with 10% held out")
    func synthetic() throws {
        let xor = try RunData<Double>(try xorConfig().data, seed: 7)
        #expect(xor.training.count == 4 && xor.validation == nil && xor.preprocessing == .none)
        #expect(xor.training.features.scalars == [0, 0, 0, 1, 1, 0, 1, 1])
        let sine = try RunData<Double>(
            try config(
                """
                model: {layers: [{units: 4}, {units: 1, activation: identity}]}
                data: {kind: synthetic, name: sine, count: 40}
                """
            ).data, seed: 2)
        #expect(sine.training.count == 36 && sine.validation?.count == 4)
        guard case let .standardize(mean, _) = sine.preprocessing else {
            Issue.record("expected standardization, got \(sine.preprocessing)")
            return
        }
        #expect(mean.count == 1)
        expectClose(meanAndDeviation(column(0, of: sine.training)).mean, 0, tolerance: 1e-12)
    }
}

/// The error `body` throws, described, or "no error".
private func failure<T>(_ body: () throws -> T) -> String {
    do {
        _ = try body()
        return "no error"
    } catch {
        return "\(error)"
    }
}
