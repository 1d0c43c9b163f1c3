import Foundation
import NeuronCore
import Testing

@testable import NeuronTraining

// A document run on a tokenizer's tokens: the tokenizer trained on the training part alone (or read
// from its file), the network sized by its vocabulary, the parts' tokens per character, and the
// config's refusals. The oracles: a tokenizer trained here on the training text cut from the
// scalars by hand, and the parts encoded here one by one.

/// A play of two speakers with an accented name: 1,560 characters, 40 copies.
private let play = String(repeating: "ANNA:\nthe cat sat.\n\nBENÉ:\non the mat!\n\n", count: 40)

/// The run's engine, which a Double config with Adam builds.
private func adamEngine(_ run: Run) throws -> NetworkTrainingEngine<Double, Adam<Double>> {
    try #require(run.engine as? NetworkTrainingEngine<Double, Adam<Double>>)
}

@Suite("Document runs on a tokenizer's tokens")
struct TokenDocumentRunTests {
    /// The config of a one-block transformer over `play.txt` in `directory`, `data` added to its data section.
    private func tokenConfig(_ directory: CheckpointTestDirectory, data: String) throws -> RunConfig {
        try play.write(toFile: directory.file("play.txt"), atomically: true, encoding: .utf8)
        return try config(
            """
            model: {transformer: {blocks: 1, heads: 2, features: 8, tieWeights: true}}
            data: {kind: text, unit: document, path: play.txt, blockSize: 16\(data)}
            optimizer: {kind: adam, learningRate: 0.01}
            training: {steps: 4, evaluateEvery: 2, batchSize: 4, seed: 3, precision: double}
            """, in: directory.path)
    }

    @Test("data.vocabularySize trains the tokenizer on the first 90% of the characters; the parts' tokens and their ratios follow")
    func trained() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let run = try RunBuilder.build(try tokenConfig(directory, data: ", vocabularySize: 270"))
        let engine = try adamEngine(run)
        let scalars = Array(play.unicodeScalars)
        #expect(scalars.count == 1560)
        func text(_ range: Range<Int>) -> String { String(String.UnicodeScalarView(scalars[range])) }
        let expected = try BytePairTokenizer.train(text(0..<1404), vocabularySize: 270)
        let vocabulary = try #require(engine.vocabulary)
        #expect(vocabulary.tokenizer == expected && vocabulary.count == 270)
        // The network scores every token of the tokenizer.
        #expect(engine.network.outputShape == [16, 270])
        let training = expected.encodeOrdinary(text(0..<1404)), validation = expected.encodeOrdinary(text(1404..<1560))
        // Predicted tokens (all but a part's first) per character they hold (the first token's own characters left out).
        func ratio(_ tokens: [Int], _ characters: Int) throws -> Double {
            let first = try expected.decode([tokens[0]]).unicodeScalars.count
            return Double(tokens.count - 1) / Double(characters - first)
        }
        let ratios = try #require(engine.tokensPerCharacter)
        #expect(abs((ratios.training) - (try ratio(training, 1404))) < 1e-12)
        #expect(abs((ratios.validation ?? 0) - (try ratio(validation, 156))) < 1e-12 && ratios.test == nil)
        #expect(ratios.validation! < 1 && ratios.validation! > 0.1)
        // The validation windows are the validation part's tokens.
        let rows = try #require(engine.validation)
        #expect(rows.features.scalars.prefix(16).map { Int($0) } == Array(validation.prefix(16)))
    }

    @Test("data.tokenizer reads a tokenizer file, the same for every part")
    func fromFile() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let tokenizer = try BytePairTokenizer.train(play, vocabularySize: 265)
        try TokenizerFile.write(tokenizer, to: directory.file("play.model"))
        let run = try RunBuilder.build(try tokenConfig(directory, data: ", tokenizer: play.model"))
        let engine = try adamEngine(run)
        #expect(engine.vocabulary?.tokenizer == tokenizer && engine.network.outputShape == [16, 265])
    }

    @Test("A config that mixes a tokenizer's keys wrongly is refused at the key")
    func refusals() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        try Data().write(to: URL(fileURLWithPath: directory.file("empty.model")))
        for (data, expected) in [
            (", tokenizer: none.model", "data.tokenizer: no such file 'none.model'"),
            (", tokenizer: empty.model, vocabularySize: 300", "data.vocabularySize trains a tokenizer, but data.tokenizer gives one"),
            (", pattern: gpt2", "data.pattern gpt2 splits the text for a tokenizer data.vocabularySize trains"),
            (", vocabularySize: 100", "data.vocabularySize"),
            (", vocabularySize: 300, pattern: gpt5", "gpt5"),
        ] {
            #expect(
                anyMessage { try tokenConfig(directory, data: data) }.contains(expected),
                "\(data): \(anyMessage { try tokenConfig(directory, data: data) })")
        }
        // Lines read characters.
        let lines = anyMessage {
            try config(
                """
                model: {layers: [{kind: embedding, features: 4}]}
                data: {kind: text, path: words-small.txt, vocabularySize: 300}
                training: {epochs: 1}
                """)
        }
        #expect(lines.contains("data.vocabularySize does not apply to a text of lines"), "\(lines)")
        // A training part that cannot make the vocabulary asked for, and a tokenizer file that does not parse, at build.
        let big = anyMessage { try RunBuilder.build(try tokenConfig(directory, data: ", vocabularySize: 100000")) }
        #expect(big.contains("data.vocabularySize 100000 on its training part"), "\(big)")
        try "not a model\n".write(toFile: directory.file("bad.model"), atomically: true, encoding: .utf8)
        let bad = anyMessage { try RunBuilder.build(try tokenConfig(directory, data: ", tokenizer: bad.model")) }
        #expect(bad.contains("bad.model:2: expected the header lines of a minbpe model"), "\(bad)")
    }
}
