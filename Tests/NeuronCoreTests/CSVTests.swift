import Foundation
import Testing

@testable import NeuronCore

/// The repository root: three levels up from Tests/NeuronCoreTests/CSVTests.swift.
private let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// Writes `text` to a fresh file in the temporary directory, runs `body` with its path, removes it.
private func withTemporaryFile(_ text: String, _ body: (String) throws -> Void) throws {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-csv-\(UUID().uuidString).csv")
    try Data(text.utf8).write(to: url)
    defer { try? FileManager.default.removeItem(at: url) }
    try body(url.path)
}

@Suite("CSV: tables with a header row as datasets")
struct CSVTests {
    @Test("Classification by hand: quoted fields, CRLF, blank lines, spaces, classes sorted by name")
    func classification() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            let text = "height, \"weight, kg\",kind\r\n\r\n1.5,60,\"cat\"\r\n 2 ,70,dog\r\n\r\n-3e-1,80,\"ca\"\"t\"\r\n0.25,1,cat\r\n"
            let d = try CSV.parse(text, source: "pets.csv", labelColumn: "kind", task: .classification, as: Scalar.self)
            #expect(d.featureNames == ["height", "weight, kg"])
            #expect(d.classNames == ["ca\"t", "cat", "dog"])
            #expect(d.labels == [1, 2, 0, 1])
            #expect(d.features.rowArrays == [[1.5, 60], [2, 70], [-0.3, 80], [0.25, 1]])
            #expect(d.targets.rowArrays == [[0, 1, 0], [0, 0, 1], [1, 0, 0], [0, 1, 0]])
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("Numeric class labels sort as numbers: 2 before 10")
    func numericClasses() throws {
        let d = try CSV.parse("x,y\n1,10\n2,2\n3,-1\n4,2.5\n", source: "n.csv", labelColumn: "y", task: .classification, as: Float.self)
        #expect(d.classNames == ["-1", "2", "2.5", "10"] && d.labels == [3, 1, 0, 2])
        // One non-number makes the whole set sort as text.
        let e = try CSV.parse("x,y\n1,10\n2,2\n3,b\n", source: "t.csv", labelColumn: "y", task: .classification, as: Float.self)
        #expect(e.classNames == ["10", "2", "b"])
    }

    @Test("Regression and chosen feature columns, in the order given")
    func regressionAndFeatureColumns() throws {
        let text = "a,b,c,price\n1,2,3,10.5\n4,5,6,-1\n"
        let d = try CSV.parse(text, source: "r.csv", labelColumn: "price", task: .regression, featureColumns: ["c", "a"], as: Double.self)
        #expect(!d.isClassification && d.featureNames == ["c", "a"])
        #expect(d.features.rowArrays == [[3, 1], [6, 4]] && d.targets.rowArrays == [[10.5], [-1]])
        // A text column left out of the features does not need to be numeric.
        let named = try CSV.parse(
            "id,x,y\nfirst,1,2\nsecond,3,4\n", source: "s.csv", labelColumn: "y", task: .regression,
            featureColumns: ["x"], as: Float.self)
        #expect(named.features.scalars == [1, 3])
    }

    @Test("Missing, empty, header-only files name the file")
    func fileErrors() throws {
        let missing = "/nonexistent/neuron-\(UUID().uuidString).csv"
        #expect(
            message { () throws(DataError) in try CSV.load(missing, labelColumn: "y", task: .regression, as: Float.self) }
                == "\(missing): no such file")
        try withTemporaryFile("") { path in
            #expect(
                message { () throws(DataError) in try CSV.load(path, labelColumn: "y", task: .regression, as: Float.self) }
                    == "\(path): the file is empty; expected a header row and data rows")
        }
        try withTemporaryFile("\n\r\n  \n") { path in
            #expect(throws: DataError.emptyFile(path: path, expected: "a header row and data rows")) {
                try CSV.load(path, labelColumn: "y", task: .regression, as: Float.self)
            }
        }
        try withTemporaryFile("x,y\n\n") { path in
            #expect(
                message { () throws(DataError) in try CSV.load(path, labelColumn: "y", task: .regression, as: Float.self) }
                    == "\(path): the file has a header row but no data rows")
        }
        let directory = FileManager.default.temporaryDirectory.path
        #expect(
            message { () throws(DataError) in try CSV.load(directory, labelColumn: "y", task: .regression, as: Float.self) }
                .contains("cannot be read: it is a directory"))
    }

    @Test("An unknown column lists the columns and suggests the closest")
    func unknownColumn() throws {
        let text = "sepal_length,petal_width,species\n1,2,a\n"
        #expect(
            message { () throws(DataError) in try CSV.parse(text, source: "iris.csv", labelColumn: "Specis", task: .classification, as: Float.self) }
                == #"iris.csv: label column "Specis" is not in the header; the columns are "sepal_length", "petal_width", "species"; did you mean "species"?"#
        )
        #expect(
            message { () throws(DataError) in
                try CSV.parse(text, source: "iris.csv", labelColumn: "species", task: .classification, featureColumns: ["petal_wdth"], as: Float.self)
            }.contains(#"feature column "petal_wdth" is not in the header"#))
        #expect(
            message { () throws(DataError) in
                try CSV.parse(text, source: "iris.csv", labelColumn: "species", task: .classification, featureColumns: ["species"], as: Float.self)
            }.contains("columns other than the label column"))
        #expect(
            message { () throws(DataError) in try CSV.parse("y\n1\n", source: "one.csv", labelColumn: "y", task: .regression, as: Float.self) }
                == #"one.csv: no feature columns: the only column is the label column "y""#)
        #expect(
            message { () throws(DataError) in try CSV.parse("x,y,x\n1,2,3\n", source: "d.csv", labelColumn: "y", task: .regression, as: Float.self) }
                == #"d.csv:1: column "x" appears twice in the header (columns 1 and 3); names must be unique"#)
    }

    @Test("Bad rows and values name the line and column (number and name)")
    func badValues() {
        func error(_ text: String, task: CSV.Task = .regression) -> String {
            message { () throws(DataError) in try CSV.parse(text, source: "f.csv", labelColumn: "y", task: task, as: Float.self) }
        }
        // Line numbers count blank lines and the header.
        #expect(error("a,b,y\n1,2,3\n\n4,5\n") == "f.csv:4: expected 3 fields like the header, found 2")
        #expect(error("a,b,y\n1,2,3,\n") == "f.csv:2: expected 3 fields like the header, found 4")
        #expect(error("a,b,y\n1,,3\n") == #"f.csv:2:2: column "b": expected a number, found an empty field"#)
        #expect(error("a,b,y\n1,2,3\n1,x2,3\n") == #"f.csv:3:2: column "b": expected a number, found "x2""#)
        #expect(error("a,b,y\n1,nan,3\n") == #"f.csv:2:2: column "b": expected a finite number (as Float), found "nan""#)
        #expect(error("a,b,y\ninf,1,3\n").contains(#"f.csv:2:1: column "a": expected a finite number"#))
        // Finite as text but beyond Float's range.
        #expect(error("a,b,y\n1e39,1,3\n") == #"f.csv:2:1: column "a": expected a finite number (as Float), found "1e39""#)
        #expect(error("a,b,y\n1,2,three\n") == #"f.csv:2:3: column "y": expected a number, found "three""#)
        #expect(error("a,b,y\n1,2,\n", task: .classification) == #"f.csv:2:3: column "y": expected a class label, found an empty field"#)
        // A quoted field spanning lines moves the line count on.
        #expect(error("a,b,y\n1,\"2\n\",3\n4,?,6\n", task: .classification) == #"f.csv:2:2: column "b": expected a number, found "2\#n""#)
        #expect(error("a,b,y\n\"multi\nline\",1,2\n4,?,6\n").hasPrefix("f.csv:2:1:"))
        #expect(error("a,b,y\n1,\"x\ny\",2\n4,?,6\n").hasPrefix("f.csv:2:2:"))
        #expect(error("a,b,y\n\"1\n\",2,3\n4,?,6\n").hasPrefix("f.csv:2:1:"))
    }

    @Test("Line numbers after a quoted line break; malformed quotes")
    func quotes() {
        func error(_ text: String) -> String {
            message { () throws(DataError) in try CSV.parse(text, source: "q.csv", labelColumn: "y", task: .classification, as: Double.self) }
        }
        #expect(error("x,y\n1,\"two\nlines\"\n?,a\n") == #"q.csv:4:1: column "x": expected a number, found "?""#)
        #expect(error("x,y\n1,\"open\n2,b\n") == "q.csv:2:2: a quoted field is never closed")
        #expect(error("x,y\n1,\"a\"b\n").hasPrefix("q.csv:2:2: unexpected text after the closing quote"))
    }

    @Test("A NUL byte inside a number is an error, not the number before it; long bad values are cut")
    func nulAndLongValues() {
        func error(_ text: String) -> String {
            message { () throws(DataError) in try CSV.parse(text, source: "n.csv", labelColumn: "y", task: .regression, as: Double.self) }
        }
        #expect(error("x,y\n5.1\u{0}garbage,1\n") == "n.csv:2:1: column \"x\": expected a number, found \"5.1\u{0}garbage\"")
        #expect(error("x,y\n1,2\u{0}\n") == "n.csv:2:2: column \"y\": expected a number, found \"2\u{0}\"")
        let long = String(repeating: "z", count: 1_000_000)
        #expect(
            error("x,y\n\(long),1\n") == "n.csv:2:1: column \"x\": expected a number, found \"\(String(repeating: "z", count: 40))… (1000000 bytes)\""
        )
        #expect(error("\(long),y\n?,1\n").count < 300)
    }

    @Test("Test rows read against given classes: a label outside them is an error at its place")
    func givenClasses() throws {
        let d =
            try CSV.parse(
                bytes: Array("x,y\n1,b\n2,b\n".utf8), source: "t.csv", labelColumn: "y", task: .classification,
                featureColumns: nil, classNames: ["a", "b"]) as Dataset<Float>
        #expect(d.classNames == ["a", "b"] && d.labels == [1, 1] && d.targets.rowArrays == [[0, 1], [0, 1]])
        #expect(
            message { () throws(DataError) in
                let _: Dataset<Float> = try CSV.parse(
                    bytes: Array("x,y\n1,b\n2,c\n".utf8), source: "t.csv", labelColumn: "y", task: .classification, featureColumns: nil,
                    classNames: ["a", "b"])
            } == "t.csv:3:2: column \"y\": expected one of the training classes (a, b), found \"c\"")
    }

    @Test("loadFeatures (predict's reader) refuses duplicate header names, as training does")
    func loadFeaturesDuplicates() throws {
        try withTemporaryFile("a,b,a\n1,2,3\n") { path in
            #expect(
                message { () throws(DataError) in _ = try CSV.loadFeatures(path, columns: ["a", "b"], as: Float.self) }
                    == "\(path):1: column \"a\" appears twice in the header (columns 1 and 3); names must be unique")
        }
        try withTemporaryFile("a,b\n1,5.1\u{0}x\n") { path in
            #expect(throws: DataError.self) { try CSV.loadFeatures(path, columns: ["a", "b"], as: Float.self) }
        }
    }

    @Test("Data/iris.csv: 150 rows, 4 features, 3 classes of 50")
    func iris() throws {
        let path = repositoryRoot.appendingPathComponent("Data/iris.csv").path
        let d = try CSV.load(path, labelColumn: "species", task: .classification, as: Float.self)
        #expect(d.count == 150 && d.featureCount == 4 && d.outputCount == 3)
        #expect(d.featureNames == ["sepal_length", "sepal_width", "petal_length", "petal_width"])
        #expect(d.classNames == ["setosa", "versicolor", "virginica"])
        let labels = d.labels ?? []
        #expect((0..<3).map { c in labels.filter { $0 == c }.count } == [50, 50, 50])
        #expect(d.features.rowArrays[0] == [5.1, 3.5, 1.4, 0.2] && labels[0] == 0 && labels[149] == 2)
    }

    @Test("Data/digits.csv: 1,797 rows, 64 pixel features 0–16, 10 classes")
    func digits() throws {
        let path = repositoryRoot.appendingPathComponent("Data/digits.csv").path
        let d = try CSV.load(path, labelColumn: "digit", task: .classification, as: Double.self)
        #expect(d.count == 1797 && d.featureCount == 64 && d.outputCount == 10)
        #expect(d.classNames == (0..<10).map(String.init))
        #expect(d.featureNames.first == "p0" && d.featureNames.last == "p63")
        #expect(d.features.scalars.allSatisfy { $0 >= 0 && $0 <= 16 && $0 == $0.rounded() })
        #expect(Array(d.labels?.prefix(3) ?? []) == [0, 1, 2])
        // The first image's top row, as in the source file.
        #expect(Array(d.features.rowArrays[0][0..<8]) == [0, 0, 5, 13, 9, 1, 0, 0])
    }
}
