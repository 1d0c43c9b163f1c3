import Foundation
import Testing

@testable import NeuronCore

/// The message `TextDocument.parse` throws for `bytes`, or "no error".
private func parseMessage(_ bytes: [UInt8]) -> String {
    do throws(DataError) {
        _ = try TextDocument.parse(bytes: bytes, source: "play.txt")
        return "no error"
    } catch {
        return error.description
    }
}

@Suite("A text document: the whole file one sequence, split into contiguous parts, read in windows")
struct TextDocumentTests {
    @Test("Every character is a token, newlines and carriage returns included, the vocabulary in code-point order after the boundary")
    func tokens() throws {
        let document = try TextDocument.parse(bytes: Array("ba\r\nab a\n".utf8), source: "play.txt")
        // Python: sorted(set("ba\r\nab a\n")) == ['\n', '\r', ' ', 'a', 'b'], after token 0 (the boundary)
        #expect(document.vocabulary.characters == ["\n", "\r", " ", "a", "b"])
        #expect(Array(document.tokens) == [5, 4, 2, 1, 4, 5, 3, 4, 1])
        #expect(document.count == 9 && document.tokens.bytesPerToken == 1)
        // A byte-order mark is no character; multi-byte characters are one token each.
        let accented = try TextDocument.parse(bytes: [0xEF, 0xBB, 0xBF] + Array("é\u{1F600}é".utf8), source: "play.txt")
        #expect(accented.vocabulary.characters == ["é", "\u{1F600}"])
        #expect(Array(accented.tokens) == [1, 2, 1])
    }

    /// Python's tokens of `text`: `[sorted(set(text)).index(c) + 1 for c in text]`, by hand.
    private static func pythonTokens(_ text: String) -> [Int] {
        let characters = Array(Set(text.unicodeScalars)).sorted()
        var index = [Unicode.Scalar: Int]()
        for (i, character) in characters.enumerated() { index[character] = i + 1 }
        return text.unicodeScalars.map { index[$0]! }
    }

    @Test(
        "Tokens take one byte each up to 256 tokens, two up to 65,536, four above, and are the same tokens",
        arguments: [(200, 1), (256, 1), (257, 2), (65_536, 2), (65_537, 4), (70_000, 4)])
    func compactTokens(distinct: Int, bytes: Int) throws {
        // Letters from four scripts (no control character among them), each once, then in a shuffled
        // order again, so that every token both opens and follows others.
        let letters = Array(
            [0x100..<0x250, 0x4E00..<0xA000, 0xAC00..<0xD7A4, 0x20000..<0x2A6E0].joined().prefix(distinct - 1).map { Unicode.Scalar(UInt32($0))! })
        #expect(letters.count == distinct - 1)  // with the boundary, `distinct` tokens
        var generator = SeededGenerator(seed: 5), shuffled = letters
        generator.shuffle(&shuffled)
        var text = String.UnicodeScalarView()
        text.append(contentsOf: letters + shuffled.prefix(1000))
        let document = try TextDocument.parse(bytes: Array(String(text).utf8), source: "letters.txt")
        #expect(document.vocabulary.count == distinct)
        #expect(document.tokens.bytesPerToken == bytes)
        #expect(Array(document.tokens) == Self.pythonTokens(String(text)))
        // A part shares the tokens; widening copies them exactly, even above 2²⁴ in Float (none here).
        let part = document.tokens.part(3..<distinct - 3)
        #expect(Array(part) == Array(document.tokens[3..<distinct - 3]))
        var widened = [Double](repeating: -1, count: 5)
        widened.withUnsafeMutableBufferPointer { part.copy(10..<15, into: $0.baseAddress!) }
        #expect(widened == (13..<18).map { Double(document.tokens[$0]) })
        #expect(part.largest == part.max())
    }

    @Test("Bad bytes are refused with the file, the line and the place")
    func errors() throws {
        #expect(parseMessage(Array("ab\ncd".utf8) + [0xFF]) == "play.txt:2: invalid UTF-8 at byte offset 5 (0xFF); expected UTF-8 text")
        #expect(parseMessage(Array("ab\nc".utf8) + [0x00]).hasPrefix("play.txt:2:2: control character U+0000 (NUL); expected text"))
        #expect(parseMessage([]) == "play.txt: the file is empty; expected a text of at least two distinct characters, in UTF-8")
        #expect(parseMessage([0xEF, 0xBB, 0xBF]).hasPrefix("play.txt: the file is empty"))
        #expect(parseMessage(Array("aaaa".utf8)).contains("one distinct character leaves nothing to predict"))
        // Tab, form feed, vertical tab and CR are text.
        #expect(parseMessage(Array("a\tb\u{0C}c\u{0B}d\r".utf8)) == "no error")
        // A device is refused before it is opened, a large file before it is read.
        do throws(DataError) {
            _ = try TextDocument.load("/dev/zero", maximumBytes: 1 << 20)
            Issue.record("/dev/zero was read")
        } catch {
            #expect(error.description == "/dev/zero: cannot be read: it is a device, not a regular file")
        }
        // A regular file whose size `stat` gives as 0 and that reads without end: stopped at the cap.
        do throws(DataError) {
            _ = try TextDocument.load("/proc/self/pagemap", maximumBytes: 1 << 20)
            Issue.record("/proc/self/pagemap was read whole")
        } catch {
            #expect(error == .fileTooLarge(path: "/proc/self/pagemap", bytes: nil, limit: 1 << 20), "\(error)")
        }
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-document-\(UUID().uuidString).txt")
        try Data(repeating: UInt8(ascii: "a"), count: 100).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        do throws(DataError) {
            _ = try TextDocument.load(url.path, maximumBytes: 99)
            Issue.record("a file of 100 bytes read under a limit of 99")
        } catch {
            #expect(error.description.contains("100 bytes") && error.description.contains("99"), "\(error)")
        }
    }

    @Test("The parts are contiguous, training first, nanoGPT's split; too little to train on is refused")
    func parts() throws {
        let document = try TextDocument.parse(bytes: Array(String(repeating: "abcde", count: 20).utf8), source: "play.txt")
        let parts = try document.parts(validationFraction: 0.1, testFraction: 0)
        #expect(parts.training == 0..<90 && parts.validation == 90..<100 && parts.test == 100..<100)
        let three = try document.parts(validationFraction: 0.125, testFraction: 0.105)
        // training ⌊100 · 0.77⌋ = 77, test 100 · 0.105 = 10.5 → 11 (half away from zero), validation the 12 left
        #expect(three.training == 0..<77 && three.validation == 77..<89 && three.test == 89..<100)
        // nanoGPT's split of its Shakespeare: train = data[:int(n*0.9)], 1,003,854 of 1,115,394
        let shakespeare = try TextDocument.parse(bytes: Array(repeating: UInt8(ascii: "a"), count: 1_115_393) + [UInt8(ascii: "b")], source: "s")
        #expect(try shakespeare.parts(validationFraction: 0.1, testFraction: 0).training == 0..<1_003_854)
        // A share above 0 holds at least one character to read and one to predict.
        #expect(try document.parts(validationFraction: 0.001, testFraction: 0).validation == 98..<100)
        #expect(throws: DataError.self) { try document.parts(validationFraction: 0.5, testFraction: 0.4, minimumTraining: 11) }
        #expect(throws: DataError.self) { try document.parts(validationFraction: 1, testFraction: 0) }
    }

    @Test("Consecutive windows predict every character of a part but its first once, padding the last window")
    func windows() throws {
        let document = try TextDocument.parse(bytes: Array("abcdefghij".utf8), source: "play.txt")
        // a…j are tokens 1…10; the part 1..<9 is "bcdefgh i": 7 characters predicted after b
        let exact = document.windows(1..<9, blockSize: 3, as: Double.self)
        #expect(exact.features.shape == [3, 3])
        #expect(exact.features.scalars == [2, 3, 4, 5, 6, 7, 8, 0, 0])
        #expect(exact.targets.scalars == [3, 4, 5, 6, 7, 8, 9, -1, -1])
        // 6 characters predicted at block 3: two full windows, no padding.
        let full = document.windows(0..<7, blockSize: 3, as: Float.self)
        #expect(full.features.scalars == [1, 2, 3, 4, 5, 6])
        #expect(full.targets.scalars == [2, 3, 4, 5, 6, 7])
        #expect(full.featureNames == ["t0", "t1", "t2"])
    }

    @Test("Windows drawn for training: starts drawn in order from the generator, each window its block and the next characters")
    func drawnWindows() throws {
        let document = try TextDocument.parse(bytes: Array("abcdefghij".utf8), source: "play.txt")
        let tokens = document.tokens
        var batches = try MiniBatches(windows: 10 - 4, count: 6, batchSize: 4)
        var generator = SeededGenerator(seed: 9), oracle = SeededGenerator(seed: 9)
        batches.draw(using: &generator)
        #expect(batches.order == (0..<6).map { _ in oracle.index(below: 6) })
        #expect(batches.batchesPerEpoch == 2)
        var x = Tensor<Double>(zeros: [0, 0]), t = Tensor<Double>(zeros: [0, 0])
        batches.fill(windows: batches.range(ofBatch: 1), from: tokens, blockSize: 4, features: &x, targets: &t)
        #expect(x.shape == [2, 4] && t.shape == [2, 4])
        for (row, start) in batches.order[4..<6].enumerated() {
            // start s reads s+1 … s+4 (tokens are 1-based letters) and predicts s+2 … s+5
            #expect(Array(x.scalars[row * 4..<row * 4 + 4]) == (1...4).map { Double(start + $0) })
            #expect(Array(t.scalars[row * 4..<row * 4 + 4]) == (2...5).map { Double(start + $0) })
        }
    }

    @Test("A document whose tokens a network cannot read is refused at the first such token")
    func tokensCheckedWhole() throws {
        let text = try TextDocument.parse(bytes: Array("abcabcabcabcabcz".utf8), source: "t.txt")
        // A network over the tokens of "abc" and the boundary: 4 of them; "z" is token 4.
        let network = try Network<Double>(
            [Embedding<Double>(vocabulary: 4, features: 3, time: 4), Dense<Double>(3, 4, activation: .identity, time: 4)], loss: .sequenceCrossEntropy
        )
        let windows = text.windows(0..<5, blockSize: 4, as: Double.self)
        #expect {
            _ = try MiniBatchTraining(
                network: network, optimizer: try SGD<Double>(learningRate: 0.1), document: text.tokens, windows: windows, batchSize: 2,
                stepsPerEpoch: 1, seed: 1)
        } throws: { error in
            "\(error)".contains("the document's token 15 is 4") && "\(error)".contains("0..<4")
        }
    }

    @Test("Saved window starts decode only within their windows; saved rows without the key decode as rows")
    func coding() throws {
        var batches = try MiniBatches(windows: 50, count: 8, batchSize: 4)
        var generator = SeededGenerator(seed: 3)
        batches.draw(using: &generator)
        let data = try JSONEncoder().encode(batches)
        #expect(try JSONDecoder().decode(MiniBatches.self, from: data) == batches)
        let outside = #"{"order": [0, 1, 2, 50], "count": 4, "batchSize": 2, "windows": 50}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(MiniBatches.self, from: Data(outside.utf8)) }
        let rows = #"{"order": [2, 0, 1], "count": 3, "batchSize": 2}"#
        #expect(try JSONDecoder().decode(MiniBatches.self, from: Data(rows.utf8)).windows == nil)
        // Rows must still be a permutation: a repeated row is refused as before.
        let repeated = #"{"order": [0, 0, 1], "count": 3, "batchSize": 2}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(MiniBatches.self, from: Data(repeated.utf8)) }
    }
}
