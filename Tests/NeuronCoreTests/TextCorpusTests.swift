import Foundation
import Testing

@testable import NeuronCore

/// The repository root: three levels up from Tests/NeuronCoreTests/TextCorpusTests.swift.
private let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// Writes `bytes` to a fresh file in the temporary directory, runs `body` with its path, removes it.
private func withTemporaryFile<T>(_ bytes: [UInt8], _ body: (String) throws -> T) throws -> T {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-text-\(UUID().uuidString).txt")
    try Data(bytes).write(to: url)
    defer { try? FileManager.default.removeItem(at: url) }
    return try body(url.path)
}

/// The message `TextCorpus.load` throws for `path`, or "no error".
private func loadMessage(_ path: String) -> String {
    do throws(DataError) {
        _ = try TextCorpus.load(path, maximumBytes: 1 << 30)
        return "no error"
    } catch {
        return error.description
    }
}

@Test("A device or a FIFO as a text file is refused before it is opened: /dev/zero would read to the cap, a FIFO block forever")
func textFromDeviceOrFIFO() throws {
    #expect(loadMessage("/dev/zero") == "/dev/zero: cannot be read: it is a device, not a regular file")
    #expect(loadMessage("/dev/urandom") == "/dev/urandom: cannot be read: it is a device, not a regular file")
    let fifo = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-fifo-\(UUID().uuidString)").path
    try #require(mkfifo(fifo, 0o600) == 0)
    defer { try? FileManager.default.removeItem(atPath: fifo) }
    // No writer ever opens it: before the check, this load blocked in open(2).
    #expect(loadMessage(fifo) == "\(fifo): cannot be read: it is a FIFO (a named pipe), not a regular file")
    // A symbolic link to a regular file is read as the file.
    try withTemporaryFile("ab\ncd\n") { path in
        let link = path + ".link"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: path)
        defer { try? FileManager.default.removeItem(atPath: link) }
        #expect(loadMessage(link) == "no error")
    }
}

private func withTemporaryFile<T>(_ text: String, _ body: (String) throws -> T) throws -> T {
    try withTemporaryFile(Array(text.utf8), body)
}

/// The corpus of `text` written to a file, or the message of the error its load throws.
private func load(
    _ bytes: [UInt8], lowercase: Bool = false, keep: String? = nil, blockSize: Int? = nil, maximumBytes: Int = 1 << 20
) throws -> (corpus: TextCorpus?, message: String, path: String) {
    try withTemporaryFile(bytes) { path in
        do throws(DataError) {
            let filter: CharacterClass? = if let keep { try CharacterClass(keep) } else { nil }
            let corpus = try TextCorpus.load(path, lowercase: lowercase, keep: filter, blockSize: blockSize, maximumBytes: maximumBytes)
            return (corpus, "no error", path)
        } catch {
            return (nil, error.description, path)
        }
    }
}

private func load(
    _ text: String, lowercase: Bool = false, keep: String? = nil, blockSize: Int? = nil, maximumBytes: Int = 1 << 20
) throws -> (corpus: TextCorpus?, message: String, path: String) {
    try load(Array(text.utf8), lowercase: lowercase, keep: keep, blockSize: blockSize, maximumBytes: maximumBytes)
}

@Suite("TextCorpus: lines of text as samples for a character model")
struct TextCorpusTests {
    @Test("Three lines by hand: features ⏎ c1 … cn then 0, targets c1 … cn ⏎ then −1")
    func encoding() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            let corpus = try #require(try load("cab\nab\n\nbca\n").corpus)
            #expect(corpus.lines == ["cab", "ab", "bca"] && corpus.lineNumbers == [1, 2, 4] && corpus.droppedCount == 0)
            #expect(corpus.vocabulary.characters == ["a", "b", "c"] && corpus.blockSize == 4)
            // ⏎ = 0, a = 1, b = 2, c = 3
            let d = corpus.dataset(as: Scalar.self)
            #expect(d.features.rowArrays == [[0, 3, 1, 2], [0, 1, 2, 0], [0, 2, 3, 1]])
            #expect(d.targets.rowArrays == [[3, 1, 2, 0], [1, 2, 0, -1], [2, 3, 1, 0]])
            #expect(d.featureNames == ["t0", "t1", "t2", "t3"] && d.labels == nil && d.classNames == nil)
            let picked = corpus.dataset([2, 0], as: Scalar.self)
            #expect(picked.features.rowArrays == [[0, 2, 3, 1], [0, 3, 1, 2]] && picked.targets.rowArrays == [[2, 3, 1, 0], [3, 1, 2, 0]])
            #expect(corpus.dataset([], as: Scalar.self).count == 0)

            // A given block size pads further.
            let wide = try #require(try load("cab\nab\n\nbca\n", blockSize: 6).corpus)
            #expect(wide.blockSize == 6)
            let w = wide.dataset([0], as: Scalar.self)
            #expect(w.features.rowArrays == [[0, 3, 1, 2, 0, 0]] && w.targets.rowArrays == [[3, 1, 2, 0, -1, -1]])
            // Exactly full: a line of blockSize − 1 characters.
            #expect(try load("cab\n", blockSize: 4).corpus?.dataset(as: Scalar.self).targets.rowArrays == [[3, 1, 2, 0]])
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("Each features row decodes to its line; the description says what was loaded")
    func roundTrip() throws {
        let corpus = try #require(try load("héllo\nwörld\n日本\n").corpus)
        let d = corpus.dataset(as: Double.self)
        #expect(d.features.rowArrays.map { corpus.vocabulary.decode($0.map { Int($0) }) } == corpus.lines)
        #expect(d.targets.rowArrays.map { corpus.vocabulary.decode($0.map { Int($0) }) } == corpus.lines)
        #expect(corpus.description == "TextCorpus(\(corpus.path): 3 samples, 11 tokens, block size 6)")
    }

    @Test("Lowercase, then keep: lines with a character outside the class are dropped and counted")
    func lowercaseAndKeep() throws {
        let text = "Anna\nBOB'S\nzoë\nX-1\n\nİz\nÀÉ\n"
        let kept = try #require(try load(text, lowercase: true, keep: "a-z'").corpus)
        // "zoë" (ë), "x-1" (- and 1), "i̇z" (İ lowercases to i and U+0307) and "àé" are dropped.
        #expect(kept.lines == ["anna", "bob's"] && kept.lineNumbers == [1, 2] && kept.droppedCount == 4)
        #expect(kept.vocabulary.characters == ["'", "a", "b", "n", "o", "s"] && kept.blockSize == 6)
        #expect(kept.description.hasSuffix("2 samples, 4 dropped, 7 tokens, block size 6)"))

        let all = try #require(try load(text, lowercase: true).corpus)
        #expect(all.lines == ["anna", "bob's", "zoë", "x-1", "i\u{307}z", "àé"] && all.droppedCount == 0)
        #expect(all.vocabulary.index(of: "\u{307}") != nil && all.vocabulary.index(of: "A") == nil)

        let cased = try #require(try load(text, keep: "A-Za-z'").corpus)
        #expect(cased.lines == ["Anna", "BOB'S"] && cased.droppedCount == 4)
        #expect(cased.vocabulary.characters.first == "'" && cased.vocabulary.index(of: "B") != nil)
    }

    @Test("CRLF, a byte-order mark, spaces and tabs kept, a last line without a newline")
    func lineEndings() throws {
        let crlf = try #require(try load("ab\r\ncd\r\n\r\nef").corpus)
        #expect(crlf.lines == ["ab", "cd", "ef"] && crlf.lineNumbers == [1, 2, 4])
        let marked = try #require(try load([0xEF, 0xBB, 0xBF] + Array("x\n\n".utf8)).corpus)
        #expect(marked.lines == ["x"] && marked.vocabulary.count == 2)
        let spaced = try #require(try load(" a b \n\tc\n").corpus)
        #expect(spaced.lines == [" a b ", "\tc"] && spaced.blockSize == 6 && spaced.vocabulary.characters == ["\t", " ", "a", "b", "c"])
    }

    @Test("Character classes: ranges, literals, - first or last, escapes; errors for what is not a class")
    func characterClass() throws {
        func members(_ text: String, _ candidates: String = "-'09AZ_`az{éλ\\]^.") throws -> String {
            let c = try CharacterClass(text)
            #expect(c.description == text)
            return String(String.UnicodeScalarView(candidates.unicodeScalars.filter(c.contains)))
        }
        #expect(try members("a-z") == "az")
        #expect(try members("a-z'") == "'az")
        #expect(try members("A-Za-z0-9_-") == "-09AZ_az")
        #expect(try members("-a") == "-a" && members("a-") == "-a")
        #expect(try members("a\\-z") == "-az")  // an escaped - makes no range
        #expect(try members("\\\\\\]\\^") == "\\]^" && members("a^") == "a^")
        #expect(try members("--/") == "-.")  // - to /: U+2D…U+2F
        #expect(try members("a-z-9") == "-9az")  // as in PCRE: a range, then - and 9
        #expect(try members("α-ω") == "λ" && members("é") == "é")

        func error(_ text: String) -> String {
            message { () throws(DataError) in try CharacterClass(text) }
        }
        #expect(
            error("z-a")
                == #"character class = "z-a" is not allowed; expected ranges from the lower code point to the higher; z-a runs backwards (U+007A > U+0061)"#
        )
        #expect(error("") == #"character class = "" is not allowed; expected at least one character, such as a-z"#)
        #expect(error("a\\").contains("after the final \\"))
        #expect(error("[a-z]").contains("without the brackets around it"))
        #expect(error("^a-z").contains("cannot be negated"))
        #expect(error("\\d").contains("\\d is none"))
    }

    @Test("File errors: missing, a directory, too large (by its size, or read past the limit)")
    func fileErrors() throws {
        func error(_ path: String, maximumBytes: Int = 1000) -> String {
            message { () throws(DataError) in try TextCorpus.load(path, maximumBytes: maximumBytes) }
        }
        let missing = "/nonexistent/neuron-\(UUID().uuidString).txt"
        #expect(error(missing) == "\(missing): no such file")
        #expect(error(FileManager.default.temporaryDirectory.path).hasSuffix("cannot be read: it is a directory"))
        let large = try load("abcdefghi\n", maximumBytes: 4)
        #expect(large.message == "\(large.path): the file is too large (10 bytes); expected at most 4 bytes")
        #expect(try load("abcdefghi\n", maximumBytes: 10).corpus?.lines == ["abcdefghi"])
        // A device reports size 0 and has no end: refused before it is opened (textFromDeviceOrFIFO).
        #expect(error("/dev/zero") == "/dev/zero: cannot be read: it is a device, not a regular file")
        #expect(error(missing, maximumBytes: 0) == "maximum bytes = 0 is not allowed; expected at least 1")
    }

    @Test("Invalid UTF-8 names the line and the byte offset in the file")
    func invalidUTF8() throws {
        let bad = try load(Array("ab\ncd".utf8) + [0xFF] + Array("e\n".utf8))
        #expect(bad.message == "\(bad.path):2: invalid UTF-8 at byte offset 5 (0xFF); expected UTF-8 text")
        // An overlong "/" (C0 AF), a surrogate (ED A0 80), a sequence cut by the end of the file.
        let overlong = try load(Array("é\n".utf8) + [0xC0, 0xAF])
        #expect(overlong.message == "\(overlong.path):2: invalid UTF-8 at byte offset 3 (0xC0); expected UTF-8 text")
        let surrogate = try load(Array("a\n\nbc".utf8) + [0xED, 0xA0, 0x80])
        #expect(surrogate.message.hasPrefix("\(surrogate.path):3: invalid UTF-8 at byte offset 5 (0xED"))
        let cut = try load(Array("€\n€".utf8) + [0xE2, 0x82])
        #expect(cut.message == "\(cut.path):2: invalid UTF-8 at byte offset 7 (0xE2 0x82); expected UTF-8 text")
        // Checked in lines the filter drops too.
        let dropped = try load(Array("ok\n1".utf8) + [0xFF], keep: "a-z")
        #expect(dropped.message.hasPrefix("\(dropped.path):2: invalid UTF-8 at byte offset 4"))
    }

    @Test("Control characters other than tab name the line and column")
    func controlCharacters() throws {
        let nul = try load("ab\nc\u{0}d\n")
        #expect(
            nul.message
                == "\(nul.path):2:2: control character U+0000 (NUL); expected printable text (tab is the one control character allowed)")
        let cr = try load("a\rb\n")
        #expect(cr.message.hasPrefix("\(cr.path):1:2: control character U+000D (carriage return)"))
        let c1 = try load("x\né\u{85}\n", keep: "a-z")
        #expect(c1.message.hasPrefix("\(c1.path):2:2: control character U+0085;"))
        #expect(try load("a\u{7F}\n").message.contains(":1:2: control character U+007F (delete)"))
    }

    @Test("No sample: an empty file, or every line dropped (how many said)")
    func noSamples() throws {
        for text in ["", "\n\r\n\n", "\u{FEFF}\n"] {
            let empty = try load(text)
            #expect(empty.message == "\(empty.path): the file is empty; expected one sample per line, in UTF-8")
        }
        let none = try load("123\n\n456\n", keep: "a-z")
        #expect(
            none.message
                == "\(none.path): no line kept: all 2 of its lines were dropped for a character outside [a-z]; expected at least one line of those characters only"
        )
        let one = try load("ABC1\n", lowercase: true, keep: "a-z")
        #expect(one.message.hasPrefix("\(one.path): no line kept: its one line was dropped for a character outside [a-z] (after lowercasing);"))
    }

    @Test("Block size: derived from the longest line, or given and checked at each kept line")
    func blockSize() throws {
        #expect(try load("a\nabcde\nab\n").corpus?.blockSize == 6)
        let long = try load("ab\nabc\n", blockSize: 3)
        #expect(long.message == "\(long.path):2: a line of 3 characters; block size 3 holds lines of at most 2 characters")
        // Counted after lowercasing (İ is two characters then), and not for a dropped line.
        let lowered = try load("xİ\n", lowercase: true, blockSize: 3)
        #expect(lowered.message.hasSuffix(":1: a line of 3 characters; block size 3 holds lines of at most 2 characters"))
        #expect(try load("ab\nabc1\n", keep: "a-z", blockSize: 3).corpus?.lines == ["ab"])
        // One line of 3 MB: refused at its length, its characters not kept past the block.
        let huge = try load(String(repeating: "a", count: 3_000_000) + "\n", blockSize: 16, maximumBytes: 4_000_000)
        #expect(huge.message.hasSuffix(":1: a line of 3000000 characters; block size 16 holds lines of at most 15 characters"))
        #expect(try load("ab\n", blockSize: 1).message == "block size = 1 is not allowed; expected at least 2 (the boundary token and one character)")
        #expect(try load("a\n", blockSize: 2).corpus?.dataset(as: Float.self).features.rowArrays == [[0, 1]])
    }

    @Test("Split: seeded, deterministic, disjoint, test last in the shuffled order")
    func split() throws {
        let corpus = try #require(try load((0..<20).map { "w\($0)" }.joined(separator: "\n")).corpus)
        var g = SeededGenerator(seed: 3)
        let parts = try corpus.split(validationFraction: 0.2, testFraction: 0.1, generator: &g)
        #expect(parts.training.count == 14 && parts.validation.count == 4 && parts.test.count == 2)
        #expect((parts.training + parts.validation + parts.test).sorted() == Array(0..<20))
        var same = SeededGenerator(seed: 3), other = SeededGenerator(seed: 4), rows = SeededGenerator(seed: 3)
        #expect(try corpus.split(validationFraction: 0.2, testFraction: 0.1, generator: &same) == parts)
        #expect(try corpus.split(validationFraction: 0.2, testFraction: 0.1, generator: &other) != parts)
        let order = try Dataset<Float>.splitRows(count: 20, validationCount: 6, generator: &rows)
        #expect(parts.training + parts.validation + parts.test == order.training + order.validation)
        var none = SeededGenerator(seed: 1)
        let whole = try corpus.split(validationFraction: 0, testFraction: 0, generator: &none)
        #expect(whole.training.count == 20 && whole.validation.isEmpty && whole.test.isEmpty)

        func error(_ corpus: TextCorpus, _ validation: Double, _ test: Double) -> String {
            var g = SeededGenerator(seed: 1)
            return message { () throws(DataError) in try corpus.split(validationFraction: validation, testFraction: test, generator: &g) }
        }
        #expect(error(corpus, 1, 0) == "validation fraction = 1.0 is not allowed; expected a number in [0, 1)")
        #expect(error(corpus, 0, -0.1) == "test fraction = -0.1 is not allowed; expected a number in [0, 1)")
        #expect(error(corpus, 0.5, 0.5).contains("leave at least one of the 20 samples for training (they take 10 and 10)"))
        let two = try #require(try load("a\nb\n").corpus)
        #expect(error(two, 0.1, 0.1).contains("(they take 1 and 1)"))
    }

    @Test("Data/words-small.txt: 999 words of a–z, 27 tokens, block size the longest + 1")
    func wordsSmall() throws {
        let path = repositoryRoot.appendingPathComponent("Data/words-small.txt").path
        let corpus = try TextCorpus.load(path, keep: try CharacterClass("a-z"), maximumBytes: 1 << 20)
        #expect(corpus.count == 999 && corpus.droppedCount == 0 && corpus.lineNumbers == Array(1...999))
        #expect(corpus.vocabulary.count == 27 && corpus.vocabulary.description == "Vocabulary(27 tokens: ⏎abcdefghijklmnopqrstuvwxyz)")
        let longest = corpus.lines.map(\.unicodeScalars.count).max() ?? 0
        #expect(longest == 17 && corpus.blockSize == longest + 1)
        #expect(corpus.lines.first == "a" && corpus.lines.contains("industrialization"))
        let d = corpus.dataset(as: Float.self)
        #expect(d.features.shape == [999, 18] && d.targets.shape == [999, 18])
    }

    @Test("Fuzz: 240 seeded byte files (text, random scalars, raw bytes, huge lines) load or throw DataError")
    func fuzz() throws {
        var g = SeededGenerator(seed: 2024)
        let letters = Array("abcXYZ é'-1 ".unicodeScalars)
        let scalarRanges: [ClosedRange<UInt32>] = [0x20...0x7E, 0xA0...0x24F, 0x391...0x3C9, 0x4E00...0x4E40, 0x1F600...0x1F64F]
        let classes = [nil, "a-z", "a-zA-Z'", "a-c é", "\\-a-z0-9"]
        var loaded = [0, 0, 0, 0], refused = 0  // loaded: by kind of file
        for i in 0..<240 {
            var bytes = [UInt8]()
            switch i % 4 {
            case 0:  // text of a few letters, CRLF or LF, empty lines
                for _ in 0..<g.index(below: 30) {
                    bytes += Array(
                        String(String.UnicodeScalarView((0..<g.index(below: 12)).map { _ in letters[g.index(below: letters.count)] })).utf8)
                    bytes += g.index(below: 4) == 0 ? [0x0D, 0x0A] : [0x0A]
                }
            case 1:  // valid UTF-8 of scalars from several scripts, a control character now and then
                var text = String.UnicodeScalarView()
                for _ in 0..<g.index(below: 400) {
                    let range = scalarRanges[g.index(below: scalarRanges.count)]
                    text.append(Unicode.Scalar(range.lowerBound + UInt32(g.index(below: range.count)))!)
                    if g.index(below: 8) == 0 { text.append("\n") }
                }
                if g.index(below: 4) == 0 {  // a control character, in one file of four
                    text.insert(Unicode.Scalar(UInt8(g.index(below: 32))), at: text.index(text.startIndex, offsetBy: g.index(below: text.count + 1)))
                }
                bytes = Array(String(text).utf8)
            case 2:  // raw bytes, newlines among them
                bytes = (0..<g.index(below: 600)).map { _ in g.index(below: 6) == 0 ? 0x0A : UInt8(g.index(below: 256)) }
            default:  // one huge line, sometimes broken at its end
                bytes = [UInt8](repeating: UInt8(ascii: "a") + UInt8(g.index(below: 3)), count: 50_000 + g.index(below: 250_000))
                if g.index(below: 2) == 0 { bytes.append(0xC3) }
                bytes += Array("\nshort\n".utf8)
            }
            let keep = classes[g.index(below: classes.count)]
            let blockSize = g.index(below: 2) == 0 ? nil : 1 + g.index(below: 60)
            let maximumBytes = g.index(below: 8) == 0 ? 1 + g.index(below: max(1, bytes.count)) : 1 << 20
            let lowercase = g.index(below: 2) == 0
            // Typed throws: the only way out besides a corpus is a DataError.
            let result = try load(bytes, lowercase: lowercase, keep: keep, blockSize: blockSize, maximumBytes: maximumBytes)
            guard let corpus = result.corpus else {
                #expect(result.message.hasPrefix(result.path) || result.message.hasPrefix("block size"), "\(result.message)")
                refused += 1
                continue
            }
            loaded[i % 4] += 1
            let filter = try keep.map { try CharacterClass($0) }
            #expect(corpus.count > 0 && corpus.lineNumbers.count == corpus.count && corpus.lineNumbers == corpus.lineNumbers.sorted())
            #expect(blockSize == nil || corpus.blockSize == blockSize)
            let characters = Set(corpus.lines.flatMap(\.unicodeScalars))
            #expect(corpus.vocabulary.count == characters.count + 1 && characters.allSatisfy { corpus.vocabulary.index(of: $0) != nil })
            #expect(corpus.lines.allSatisfy { !$0.isEmpty && $0.unicodeScalars.count < corpus.blockSize })
            #expect(filter == nil || characters.allSatisfy { filter!.contains($0) })
            #expect(!lowercase || characters.allSatisfy { !$0.properties.isUppercase || $0.properties.lowercaseMapping == String($0) })
            let d = corpus.dataset(as: Float.self)
            #expect(d.features.shape == [corpus.count, corpus.blockSize])
            #expect(d.features.rowArrays.map { corpus.vocabulary.decode($0.map { Int($0) }) } == corpus.lines)
        }
        print("Text fuzzing: 240 files, \(loaded) loaded (text, scalars, bytes, huge lines), \(refused) refused with a DataError; no crash")
        #expect(loaded[0] >= 10 && loaded[1] >= 10 && loaded[3] >= 5 && refused >= 30)
    }
}

@Suite("TextCorpus: a line longer than the block, cut into windows")
struct TextCorpusWindowTests {
    @Test("abcde at block 4: the first 4 positions, then one window per later target, only it counted")
    func handWorked() throws {
        let corpus = try TextCorpus.parse(
            bytes: Array("abcde\nab\n".utf8), source: "t.txt", lowercase: false, keep: nil, blockSize: 4, longLines: .window)
        #expect(corpus.lines == ["abcde", "ab"] && corpus.longLines == .window)
        // ⏎ = 0, a = 1, b = 2, c = 3, d = 4, e = 5; inputs ⏎ a b c d e, targets a b c d e ⏎
        let d = corpus.dataset(as: Double.self)
        #expect(
            d.features.rowArrays == [
                [0, 1, 2, 3],  // the first block
                [1, 2, 3, 4],  // the 4 inputs before target e
                [2, 3, 4, 5],  // the 4 inputs before the closing boundary
                [0, 1, 2, 0],  // ab fits
            ])
        #expect(d.targets.rowArrays == [[1, 2, 3, 4], [-1, -1, -1, 5], [-1, -1, -1, 0], [1, 2, 0, -1]])
        #expect(corpus.lineOfEachSample([0, 1]) == [0, 0, 0, 1] && corpus.lineOfEachSample([1, 0]) == [1, 0, 0, 0])
        // The lines' samples follow the order asked for.
        #expect(corpus.dataset([1, 0], as: Double.self).targets.rowArrays.first == [1, 2, 0, -1])
    }

    @Test("Every target of every line is counted exactly once, whatever the block")
    func eachTargetOnce() throws {
        let text = "a\nabcdefghij\nabc\nabcdefg\n"
        for block in 2...12 {
            let corpus = try TextCorpus.parse(
                bytes: Array(text.utf8), source: "t.txt", lowercase: false, keep: nil, blockSize: block, longLines: .window)
            let d = corpus.dataset(as: Double.self)
            // Counted targets in order, line by line: each line's characters and its boundary, once.
            let counted = d.targets.scalars.filter { $0 >= 0 }
            let expected: [Double] = corpus.lines.flatMap { line -> [Double] in corpus.vocabulary.encode(line)!.map { Double($0) } + [0] }
            #expect(counted == expected, "block \(block)")
            #expect(d.count == corpus.lineOfEachSample(Array(corpus.lines.indices)).count)
        }
    }

    @Test("Without windows the same line is still an error; a line that fits makes one sample either way")
    func errorByDefault() throws {
        #expect(throws: DataError.self) {
            try TextCorpus.parse(bytes: Array("abcde\n".utf8), source: "t.txt", lowercase: false, keep: nil, blockSize: 4)
        }
        let fits = try TextCorpus.parse(
            bytes: Array("abc\n".utf8), source: "t.txt", lowercase: false, keep: nil, blockSize: 4, longLines: .window)
        #expect(fits.dataset(as: Float.self).targets.rowArrays == [[1, 2, 3, 0]])
    }
}
