import Foundation
import NeuronCore
import Testing

@testable import NeuronTraining

@Suite("Preprocessing: the transform a network's inputs went through, saved with it")
struct PreprocessingTests {
    @Test("none, scale and standardize, by hand")
    func byHand() throws {
        var x = try Tensor<Double>(shape: [2, 2], scalars: [3, 0, -1, 10])
        try Preprocessing.none.apply(to: &x)
        #expect(x.scalars == [3, 0, -1, 10])
        try Preprocessing.scale(0.5).apply(to: &x)
        #expect(x.scalars == [1.5, 0, -0.5, 5])
        // (x - mean) / deviation per column: mean [1.5, 5], deviation [2, 5].
        try Preprocessing.standardize(mean: [1.5, 5], standardDeviation: [2, 5]).apply(to: &x)
        #expect(x.scalars == [0, -1, -1, 0])
    }

    @Test("Standardizing features of another width is refused")
    func wrongWidth() throws {
        var x = Tensor<Float>(zeros: [1, 3])
        #expect(throws: DataError.self) { try Preprocessing.standardize(mean: [0, 0], standardDeviation: [1, 1]).apply(to: &x) }
    }

    @Test(
        "It survives the checkpoint's JSON unchanged",
        arguments: [Preprocessing.none, .scale(1.0 / 255), .standardize(mean: [0.1, -2], standardDeviation: [3, 0.5])])
    func codable(preprocessing: Preprocessing) throws {
        #expect(try JSONDecoder().decode(Preprocessing.self, from: try JSONEncoder().encode(preprocessing)) == preprocessing)
    }
}

@Suite("Preprocessing's JSON: readable, and the earlier form still read")
struct PreprocessingJSONTests {
    private func json(_ preprocessing: Preprocessing) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(preprocessing), as: UTF8.self)
    }

    @Test("Each kind is one key; a scale is its factor, a number")
    func readable() throws {
        #expect(try json(.none) == #"{"none":{}}"#)
        #expect(try json(.scale(0.5)) == #"{"scale":0.5}"#)
        #expect(try json(.standardize(mean: [1, 2], standardDeviation: [3, 4])) == #"{"standardize":{"mean":[1,2],"standardDeviation":[3,4]}}"#)
    }

    @Test("A scale saved as {\"_0\": factor} by earlier versions decodes to the same factor")
    func earlierScale() throws {
        let factor = 1.0 / 255
        let decoded = try JSONDecoder().decode(Preprocessing.self, from: Data(#"{"scale":{"_0":\#(factor)}}"#.utf8))
        #expect(decoded == .scale(factor))
        #expect(try JSONDecoder().decode(Preprocessing.self, from: Data(#"{"scale":\#(factor)}"#.utf8)) == .scale(factor))
    }

    @Test("No kind, two kinds, or an unknown one are refused", arguments: [#"{}"#, #"{"none":{},"scale":1}"#, #"{"rescale":2}"#])
    func refused(text: String) {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Preprocessing.self, from: Data(text.utf8)) }
    }
}
