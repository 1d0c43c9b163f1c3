import Foundation
import Testing

@testable import NeuronCore

@Suite("Tokenizer files: minbpe's, tiktoken's, Hugging Face's and GPT-2's, read, written and refused")
struct TokenizerFileTests {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tokenizer-files-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func file(_ name: String, _ text: String) throws -> String {
        let url = directory.appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        return url.path
    }

    @Test("A minbpe .model and .vocab written as minbpe writes them (its 512 on tiny Shakespeare), read back the same")
    func minbpeModel() throws {
        let oracle = BytePairOracle.fixture.shakespeare512
        let tokenizer = try BytePairTokenizer(pattern: .gpt4, merges: oracle.merges.map { ($0[0], $0[1]) })
        let path = directory.appendingPathComponent("shakespeare.model").path
        try TokenizerFile.write(tokenizer, to: path)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == oracle.model)
        let vocab = try String(contentsOfFile: directory.appendingPathComponent("shakespeare.vocab").path, encoding: .utf8)
        #expect(vocab == oracle.vocab)
        let read = try TokenizerFile.read(path)
        #expect(read.merges == tokenizer.merges && read.pattern == .gpt4)
    }

    @Test("Special tokens survive minbpe's .model and Hugging Face's tokenizer.json", arguments: ["t.model", "tokenizer.json"])
    func roundTrip(name: String) throws {
        let text = tieProneText(length: 2000, seed: 3)
        let tokenizer = try BytePairTokenizer.train(text, vocabularySize: 300, specialTokens: ["<|endoftext|>"])
        let path = directory.appendingPathComponent(name).path
        try TokenizerFile.write(tokenizer, to: path)
        let read = try TokenizerFile.read(path)
        #expect(read.merges == tokenizer.merges)
        #expect(read.specialTokens == tokenizer.specialTokens)
        #expect(read.pattern == tokenizer.pattern)
        let sample = text + "<|endoftext|>" + text.prefix(100)
        #expect(try read.encode(sample, allowedSpecial: .all) == tokenizer.encode(sample, allowedSpecial: .all))
    }

    @Test("GPT-2's vocab.json and merges.txt, by the byte-to-unicode table")
    func gpt2() throws {
        // Ġ is the space (byte 32 is U+0120), so "Ġa" is " a".
        var vocabulary: [String: Int] = [:]
        for byte in 0..<256 { vocabulary[String(TokenizerFile.byteCharacters[byte])] = byte }
        vocabulary["Ġa"] = 256
        vocabulary["Ġab"] = 257
        vocabulary["<|endoftext|>"] = 258
        let json = String(decoding: try JSONSerialization.data(withJSONObject: vocabulary), as: UTF8.self)
        _ = try file("vocab.json", json)
        _ = try file("merges.txt", "#version: 0.2\nĠ a\nĠa b\n")
        let tokenizer = try TokenizerFile.read(directory.appendingPathComponent("vocab.json").path)
        #expect(tokenizer.pattern == .gpt2)
        #expect(try tokenizer.encode(" ab a<|endoftext|>", allowedSpecial: .all) == [257, 256, 258])
    }

    @Test(
        "Hostile files: each a clear error naming the file and line",
        arguments: [
            ("a.model", "minbpe v2\n\n0\n", 1, "expected \"minbpe v1\""),
            ("a.model", "minbpe v1\n[a-z]+\n0\n", 2, "none of GPT-4's"),
            ("a.model", "minbpe v1\n\nmany\n", 3, "the number of special tokens"),
            ("a.model", "minbpe v1\n\n1\n<|x|>\n", 4, "a special token's name and id"),
            ("a.model", "minbpe v1\n\n0\n97 98\n97 x\n", 5, "two token ids"),
            ("a.model", "minbpe v1\n\n0\n97 98\n97 258\n", 5, "258 is no token made before token 257"),
            ("a.model", "minbpe v1\n\n0\n97 98\n97 98\n", 5, "merged earlier too"),
            ("a.model", "minbpe v1\n\n1\n<|x|> 97\n", 4, "ordinary token"),
            ("a.model", "minbpe v1\n\n0\n97 97\n" + (256..<300).map { "\($0) \($0)\n" }.joined(), 30, "more than 256 MiB by token 282"),
            ("a.tiktoken", "YQ== 0\nYg== x\n", 2, "not in 0..<2³¹"),
            (
                "a.tiktoken",
                (0..<256).map { "\(Data([UInt8($0)]).base64EncodedString()) \($0)\n" }.joined()
                    + "\(Data(repeating: 97, count: 1025).base64EncodedString()) 256\n", 257, "1025 bytes long; a ranked token has at most 1024"
            ),
            ("a.tiktoken", "YQ== 0\nYg== 4294967296\n", 2, "not in 0..<2³¹"),
            ("a.tiktoken", "YQ== 0\n!!!! 1\n", 2, "not the base64"),
            ("a.tiktoken", "YQ== 0\nYQ== 1\n", 2, "token 1: its bytes \"a\" are token 0's"),
            ("a.tiktoken", "YQ== 0\nYg== 0\n", 2, "the rank 0 is line 1's too"),
            ("a.tiktoken", "YQ== 0\nYg== 5\n", 2, "leaves a gap"),
            ("a.tiktoken", "YQ== 0\nYg==\n", 2, "a base64 token and its rank"),
            ("a.tiktoken", "YQ== 0\nYg== 1\n", 0, "the byte 0 has no token"),
            ("merges.txt", "#version: 0.2\nĠ a\nĠ zz\n", 3, "\"zz\" is no token"),
            ("merges.txt", "#version: 0.2\nĠ a\nĠ\n", 3, "expected two tokens"),
            ("merges.txt", "#version: 0.2\na b\n", 2, "together are \"ab\", which is no token"),
            ("tokenizer.json", "{\"model\": {\"type\": \"WordPiece\"}}", 0, "model: expected a byte-pair model"),
            ("tokenizer.json", "{\"model\": ", 0, "not JSON"),
            ("a.txt", "", 0, "expected a tokenizer file named"),
        ] as [(String, String, Int, String)])
    func hostile(name: String, text: String, line: Int, reason: String) throws {
        if name == "merges.txt" {
            var vocabulary: [String: Int] = [:]
            for byte in 0..<256 { vocabulary[String(TokenizerFile.byteCharacters[byte])] = byte }
            vocabulary["Ġa"] = 256
            _ = try file("vocab.json", String(decoding: try JSONSerialization.data(withJSONObject: vocabulary), as: UTF8.self))
        }
        let path = try file(name, text)
        let read = name == "merges.txt" ? directory.appendingPathComponent("vocab.json").path : path
        do {
            _ = try TokenizerFile.read(read)
            Issue.record("\(name): \(text.debugDescription) was read")
        } catch let error as TokenizerError {
            guard case .invalidFile(let errorPath, let errorLine, let errorReason) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(errorPath == path)
            #expect(errorLine == line, "\(error)")
            #expect(errorReason.contains(reason), "\(error)")
        }
    }

    @Test("A file past the size limit and a missing file are refused before reading")
    func limits() throws {
        #expect(anyMessage { try TokenizerFile.read(directory.appendingPathComponent("none.model").path) }.hasSuffix("none.model: no such file"))
        let path = directory.appendingPathComponent("big.tiktoken").path
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.truncate(atOffset: UInt64(TokenizerFile.maximumBytes + 1))
        try handle.close()
        #expect(anyMessage { try TokenizerFile.read(path) }.contains("past the 256 MiB"))
    }

    @Test("Coded as JSON (a checkpoint's form): minbpe's kind, a merge list with its own tokens, ranks, all the same after")
    func coding() throws {
        let minbpe = try BytePairTokenizer.train(tieProneText(length: 1500, seed: 5), vocabularySize: 290, specialTokens: ["<|end|>"])
        let base = (0..<256).map { [UInt8(255 - $0)] }
        let ownTokens = try BytePairTokenizer(pattern: .gpt2, tokens: base + [[97, 98]], merges: [(158, 157)])
        let ranks = try BytePairTokenizer(pattern: .cl100k, ranks: (0..<256).map { [UInt8($0)] } + [[97, 98], [97, 98, 99]])
        let sample = tieProneText(length: 500, seed: 6) + "abc ab"
        for tokenizer in [minbpe, ownTokens, ranks] {
            let data = try JSONEncoder().encode(tokenizer)
            let read = try JSONDecoder().decode(BytePairTokenizer.self, from: data)
            #expect(read.rule == tokenizer.rule && read.pattern == tokenizer.pattern && read.merges == tokenizer.merges)
            #expect(read.specialTokens == tokenizer.specialTokens)
            #expect(read.encodeOrdinary(sample) == tokenizer.encodeOrdinary(sample))
        }
        #expect(String(decoding: try JSONEncoder().encode(minbpe), as: UTF8.self).contains("\"tokens\"") == false)
        let corrupt = #"{"pattern": "gpt4", "specialTokens": [], "merges": [[97, 300]]}"#
        #expect(
            anyMessage { try JSONDecoder().decode(BytePairTokenizer.self, from: Data(corrupt.utf8)) }.contains(
                "300 is no token made before token 256"))
        let badPattern = #"{"pattern": "gpt5", "specialTokens": [], "merges": []}"#
        #expect(anyMessage { try JSONDecoder().decode(BytePairTokenizer.self, from: Data(badPattern.utf8)) }.contains("no split pattern"))
    }

    @Test("A tokenizer whose tokens repeat bytes cannot be Hugging Face's, and says so")
    func repeatedBytes() throws {
        // (b, c) (a, b) (a, bc) (ab, c): tokens 258 and 259 are both "abc".
        let tokenizer = try BytePairTokenizer(pattern: .gpt4, merges: [(98, 99), (97, 98), (97, 256), (257, 99)])
        #expect(
            anyMessage { try TokenizerFile.write(tokenizer, to: directory.appendingPathComponent("t.json").path) }.contains(
                "tokens 258 and 259 have the same bytes"))
        try TokenizerFile.write(tokenizer, to: directory.appendingPathComponent("t.model").path)
        #expect(try TokenizerFile.read(directory.appendingPathComponent("t.model").path).merges == tokenizer.merges)
    }
}
