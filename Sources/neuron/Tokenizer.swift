import ArgumentParser
import Foundation
import NeuronCore
import NeuronTraining

/// `neuron tokenizer train|encode|decode`: a byte-level BPE trained on a text, and texts through it.
struct Tokenizer: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Train a byte-level BPE tokenizer on a text, encode a text to ids, or decode ids to text.",
        subcommands: [TrainTokenizer.self, EncodeText.self, DecodeIds.self])
}

extension SplitPattern: ExpressibleByArgument {}

/// A UTF-8 text file's contents, refused by its size, before it is read, past `share` of the machine's memory
/// (what the work on it may take per byte of text).
func readText(_ path: String, share: Int) throws -> String {
    try TokenizerFile.text(at: path, maximumBytes: PhysicalMemory.bytes / share)
}

struct TrainTokenizer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "train",
        abstract: "Train a byte-level BPE on a UTF-8 text, merging as minbpe's RegexTokenizer does.",
        discussion: """
            The output's name gives its format: .model is minbpe's (a .vocab beside it, for reading), .json Hugging \
            Face's tokenizer.json. Special tokens take the ids from --vocab-size on. Standard error shows progress.
            """)

    @Argument(help: "The UTF-8 text to train on.")
    var text: String

    @Option(help: "256 (the bytes) plus the number of merges.")
    var vocabSize: Int

    @Option(help: "The split pattern: gpt4 (minbpe's default), cl100k, gpt2 or none.")
    var pattern: SplitPattern = .gpt4

    @Option(name: .customLong("special"), help: "A special token's name (repeatable), e.g. <|endoftext|>.")
    var specials: [String] = []

    @Option(help: "The tokenizer file to write (.model or .json).")
    var output: String

    func validate() throws {
        guard (256..<Int(Int32.max)).contains(vocabSize) else {
            throw ValidationError("--vocab-size \(vocabSize): expected 256 (the bytes) or more")
        }
        let suffix = URL(fileURLWithPath: output).pathExtension
        guard suffix == "model" || suffix == "json" else {
            throw ValidationError("--output \(output): expected a name ending .model (minbpe) or .json (Hugging Face)")
        }
    }

    func run() throws {
        // Training holds each distinct chunk, its tokens (4 bytes a byte) and every pair's slot: 64 bytes a byte at most.
        let text = try readText(text, share: 64)
        let progress = TokenizerProgress()
        let started = ContinuousClock.now
        let tokenizer = try BytePairTokenizer.train(text, vocabularySize: vocabSize, pattern: pattern, specialTokens: specials) {
            progress.report($0)
        }
        progress.finish()
        try TokenizerFile.write(tokenizer, to: output)
        let seconds = (ContinuousClock.now - started) / .seconds(1)
        FileHandle.standardError.write(
            Data(
                "trained \(tokenizer.merges.count) merges on \(text.utf8.count) bytes in \(String(format: "%.2f", seconds)) s; wrote \(output)\n".utf8
            ))
    }
}

/// The progress line of tokenizer training on standard error: redrawn in place on a terminal (ten times a second at
/// most), a line every five seconds elsewhere.
final class TokenizerProgress {
    private let live = isatty(STDERR_FILENO) != 0
    private var drawn = ContinuousClock.now
    /// The first merge's time: the rate counts from it, not from the splitting and counting before it.
    private var first: ContinuousClock.Instant?
    private var last: BytePairTokenizer.TrainingProgress?

    func report(_ progress: BytePairTokenizer.TrainingProgress) {
        last = progress
        let now = ContinuousClock.now
        if first == nil { first = now }
        guard now - drawn >= (live ? .milliseconds(100) : .seconds(5)) else { return }
        drawn = now
        draw(progress)
    }

    func finish() {
        if let last { draw(last) }
        if live { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    private func draw(_ progress: BytePairTokenizer.TrainingProgress) {
        let text = String(decoding: progress.bytes, as: UTF8.self).debugDescription
        var line =
            "merge \(progress.merges)/\(progress.total)  token \(progress.merge.token) \(text) = \(progress.merge.left) + "
            + "\(progress.merge.right), \(progress.occurrences) times"
        if let first, progress.merges > 1 {
            let seconds = (ContinuousClock.now - first) / .seconds(1)
            if seconds > 0 { line += "  \(Int(Double(progress.merges - 1) / seconds)) merges/s" }
        }
        FileHandle.standardError.write(Data((live ? "\r\u{1B}[K" + line : line + "\n").utf8))
    }
}

/// The `--pattern` and `--special` options of reading a tokenizer file.
struct TokenizerOptions: ParsableArguments {
    @Argument(help: "The tokenizer file: .model (minbpe), .tiktoken (tiktoken's ranks), tokenizer.json, or vocab.json (GPT-2).")
    var tokenizer: String

    @Option(
        help:
            "For a ranks file or GPT-2's vocab.json, which carry none: the split pattern (gpt4, cl100k, gpt2 or none; default cl100k for ranks, gpt2 for vocab.json)."
    )
    var pattern: SplitPattern?

    @Option(
        name: .customLong("special"),
        help: "For a ranks file: a special token as NAME=ID (repeatable; cl100k_base's own are known by its file name).")
    var specials: [String] = []

    func read() throws -> BytePairTokenizer {
        var tokens: [BytePairTokenizer.SpecialToken] = []
        for special in specials {
            guard let equals = special.lastIndex(of: "="), let id = Int(special[special.index(after: equals)...]) else {
                throw ValidationError("--special \(special): expected NAME=ID")
            }
            tokens.append(.init(name: String(special[..<equals]), id: id))
        }
        if tokens.isEmpty, URL(fileURLWithPath: tokenizer).lastPathComponent == "cl100k_base.tiktoken" {
            tokens = TokenizerFile.cl100kSpecialTokens
        }
        return try TokenizerFile.read(tokenizer, pattern: pattern, specialTokens: tokens)
    }
}

struct EncodeText: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encode", abstract: "Print a UTF-8 text file's ids as a JSON array.",
        discussion: "A special token in the text is an error unless --allow-special is given.")

    @OptionGroup var options: TokenizerOptions

    @Argument(help: "The UTF-8 text file to encode.")
    var text: String

    @Flag(help: "Encode the tokenizer's special tokens in the text as their ids.")
    var allowSpecial = false

    func run() throws {
        let tokenizer = try options.read()
        // The text, its bytes, the ids (4 and 8 bytes each) and their JSON: 16 bytes a byte at most.
        let text = try readText(text, share: 16)
        let ids: [Int]
        do { ids = try tokenizer.encode(text, allowedSpecial: allowSpecial ? .all : .none) } catch let error as TokenizerError {
            throw RunError.invalid("\(self.text): \(error) (--allow-special encodes them)")
        }
        var out = "["
        out.reserveCapacity(ids.count * 6 + 2)
        for (i, id) in ids.enumerated() {
            if i > 0 { out += "," }
            out += String(id)
        }
        out += "]\n"
        FileHandle.standardOutput.write(Data(out.utf8))
    }
}

struct DecodeIds: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode", abstract: "Print the text of token ids (bytes that are not UTF-8 print as U+FFFD).")

    @OptionGroup var options: TokenizerOptions

    @Argument(help: "The ids, each a whole number.")
    var ids: [Int]

    func run() throws {
        let tokenizer = try options.read()
        FileHandle.standardOutput.write(Data(try tokenizer.decode(ids).utf8))
    }
}
