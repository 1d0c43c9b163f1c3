import ArgumentParser
import Foundation
import NeuronCore
import NeuronTraining

/// `neuron sample RUN`: lines drawn from a trained text model, marked when they are training lines.
struct Sample: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Draw lines from a trained text model (a run of text data), each continuing --prefix, or continue a --prompt.",
        discussion: """
            Lines the model drew that are among its training lines are marked with '*' after two spaces. \
            With --prompt (a document model's default, from a newline), one text continues the prompt by --length characters \
            (tokens, for a model of a tokenizer's tokens) and is printed with it as it is drawn; standard error says how fast \
            they came. The same run, options and seed give the same text.
            """)

    @Argument(help: "The run directory or its checkpoint file.")
    var checkpoint: String

    @Option(help: "Lines to draw (1 to 100000).")
    var count = 10

    @Option(help: "Divides the model's scores before the softmax: below 1 sharper, above 1 flatter.")
    var temperature = 1.0

    @Option(name: .customLong("top-k"), help: "Draw each character only among the K most likely.")
    var topK: Int?

    @Option(help: "The seed of the draws (default: the run's seed).")
    var seed: UInt64?

    @Option(help: "The characters every line starts with.")
    var prefix = ""

    @Flag(help: "Print each token's probability after the prefix, or after --prompt (CSV: id,token,probability), instead of drawing.")
    var probabilities = false

    @Option(help: "Continue this text instead of drawing lines (a document model's default: a newline).")
    var prompt: String?

    @Option(help: "Characters (a token model's tokens) to draw after --prompt (1 to 1000000; default 500).")
    var length: Int?

    @Flag(help: "With --prompt: compute every character by a whole pass over its window, without the key/value cache (for comparison).")
    var noCache = false

    /// Lines drawn per batch of forward passes: bounds the memory a large --count takes.
    static let chunk = 256

    func validate() throws {
        guard (1...100_000).contains(count) else { throw ValidationError("--count \(count): expected a whole number from 1 to 100000") }
        if let length, !(1...1_000_000).contains(length) {
            throw ValidationError("--length \(length): expected a whole number from 1 to 1000000")
        }
        if prompt != nil {
            for (given, option) in [(!prefix.isEmpty, "--prefix"), (count != 10, "--count")] where given {
                throw ValidationError("--prompt continues one text; \(option) applies to drawing lines")
            }
            if probabilities, length != nil || noCache {
                throw ValidationError(
                    "--probabilities prints the next character's probabilities after --prompt; \(length != nil ? "--length" : "--no-cache") applies to continuing it"
                )
            }
        } else if length != nil || noCache, !prefix.isEmpty || probabilities {
            throw ValidationError("\(length != nil ? "--length" : "--no-cache") applies to continuing a --prompt")
        }
    }

    func run() throws {
        let saved = try Checkpoint.read(checkpoint)
        guard let vocabulary = saved.state.vocabulary else {
            throw RunError.invalid(
                "\(saved.file): \(saved.state.network) is not a text model (its data is \(saved.state.config.data.kind.rawValue)); only a run of text data draws lines"
            )
        }
        BLAS.threadCount = saved.state.config.training.blasThreads
        let isDocument = saved.state.config.data.unit == .document
        // A document model never read the boundary token, so it never draws it.
        let rule = try SamplingRule(temperature: temperature, topK: topK, excludesBoundary: isDocument)
        if !isDocument, prompt == nil, length != nil || noCache {
            throw ValidationError(
                "\(length != nil ? "--length" : "--no-cache") applies to continuing a --prompt (a line model draws lines otherwise)")
        }
        if isDocument {
            // A document is one text, with no lines to draw or start.
            for (given, option) in [(!prefix.isEmpty, "--prefix"), (count != 10, "--count")] where given {
                throw ValidationError(
                    "\(option) applies to a line model's lines; \(saved.state.network) is a document model, which continues one text: give --prompt and --length"
                )
            }
        }
        if prompt != nil || isDocument {
            // A document's default start is where the run's passages start.
            let text = prompt ?? vocabulary.decode([vocabulary.documentStart])
            guard let tokens = vocabulary.encode(text) else {
                let (place, unknown) = text.unicodeScalars.enumerated().first { vocabulary.index(of: $0.element) == nil }!
                throw ValidationError(
                    "--prompt '\(text)': the character '\(unknown.escaped(asASCII: false))' (\(unknown.codePoint)), character \(place) of the prompt (counted from 0), is not in the model's vocabulary: \(vocabulary)"
                )
            }
            // A line model reads the boundary first; a document model never saw it.
            let context = isDocument ? tokens : [Vocabulary.boundary] + tokens
            guard !context.isEmpty else {
                throw ValidationError(
                    "--prompt '': a document model needs at least one \(vocabulary.tokenizer == nil ? "character" : "token") to continue")
            }
            if probabilities {
                switch saved.state.precision {
                case .float: try printProbabilities(Float.self, saved, vocabulary: vocabulary, rule: rule, context: context)
                case .double: try printProbabilities(Double.self, saved, vocabulary: vocabulary, rule: rule, context: context)
                }
                return
            }
            switch saved.state.precision {
            case .float: try continueText(Float.self, saved, vocabulary: vocabulary, rule: rule, prompt: text, context: context)
            case .double: try continueText(Double.self, saved, vocabulary: vocabulary, rule: rule, prompt: text, context: context)
            }
            return
        }
        guard let tokens = vocabulary.encode(prefix) else {
            let unknown = prefix.unicodeScalars.first { vocabulary.index(of: $0) == nil }!
            throw ValidationError(
                "--prefix '\(prefix)': the character '\(unknown.escaped(asASCII: false))' (\(unknown.codePoint)) is not in the model's vocabulary: \(vocabulary)"
            )
        }
        switch saved.state.precision {
        case .float: try draw(Float.self, saved, vocabulary: vocabulary, rule: rule, prefix: tokens)
        case .double: try draw(Double.self, saved, vocabulary: vocabulary, rule: rule, prefix: tokens)
        }
    }

    /// Prints `prompt` and `--length` characters drawn to continue it, and the speed on standard error.
    private func continueText<Scalar: TensorScalar>(
        _: Scalar.Type, _ saved: LoadedCheckpoint, vocabulary: Vocabulary, rule: SamplingRule, prompt: String, context: [Int]
    ) throws {
        var network = try Prediction<Scalar>.network(saved)
        let seed = self.seed ?? saved.state.progress.seed ?? 0, length = self.length ?? 500
        let clock = ContinuousClock(), start = clock.now
        // Printed as drawn: a tokenizer's token may end inside a character, whose bytes wait for the rest.
        func write(_ text: String) { if !text.isEmpty { FileHandle.standardOutput.write(Data(text.utf8)) } }
        write(prompt)
        var stream = vocabulary.tokenizer.map(TokenTextStream.init)
        _ = try network.continueText(context, length: length, rule: rule, seed: seed, cache: !noCache) { token in
            if stream != nil {
                // A drawn token is below the network's scores, which are the tokenizer's ids.
                write((try? stream!.append(token)) ?? "\u{FFFD}")
            } else {
                // A line model's boundary token ends nothing here: it is shown as a newline (a document model never draws it).
                write(token == Vocabulary.boundary ? "\n" : String(vocabulary.characters[token - 1]))
            }
        }
        write((stream?.finish() ?? "") + "\n")
        let seconds = (clock.now - start) / .seconds(1)
        let unit = vocabulary.tokenizer == nil ? "character" : "token"
        let how = noCache ? "a whole pass over the window per \(unit)" : "the key/value cache"
        let speed = String(format: "%.3f s: %.0f \(unit)s/s", seconds, Double(length) / max(seconds, 1e-9))
        FileHandle.standardError.write(Data("\(length) \(unit)s drawn with seed \(seed) in \(speed) (\(how))\n".utf8))
    }

    /// Prints the probability of each token after `context` (CSV: id,token,probability).
    private func printProbabilities<Scalar: TensorScalar>(
        _: Scalar.Type, _ saved: LoadedCheckpoint, vocabulary: Vocabulary, rule: SamplingRule, context: [Int]
    ) throws {
        var network = try Prediction<Scalar>.network(saved)
        let p = try network.nextTokenProbabilities(after: context, rule: rule)
        print("id,token,probability")
        for (token, probability) in p.enumerated() { print("\(token),\(Prediction<Scalar>.field(vocabulary.name(of: token))),\(probability)") }
    }

    private func draw<Scalar: TensorScalar>(
        _: Scalar.Type, _ saved: LoadedCheckpoint, vocabulary: Vocabulary, rule: SamplingRule, prefix: [Int]
    ) throws {
        if probabilities {
            try printProbabilities(Scalar.self, saved, vocabulary: vocabulary, rule: rule, context: [Vocabulary.boundary] + prefix)
            return
        }
        var network = try Prediction<Scalar>.network(saved)
        let seed = self.seed ?? saved.state.progress.seed ?? 0
        var drawn: [[Int]] = []
        while drawn.count < count {
            drawn += try network.sampleLines(
                count: min(Self.chunk, count - drawn.count), prefix: prefix, rule: rule, seed: seed, firstLine: drawn.count)
        }
        // The training lines are the run's data split again by its seed; without the file the lines go unmarked.
        var training = Set<String>()
        var note = "* marks a line of the training data"
        do {
            let (corpus, parts) = try TextCorpus.read(saved.state.config.data, seed: saved.state.progress.seed ?? 0)
            training = Set(parts.training.map { corpus.lines[$0] })
        } catch {
            note = "lines are not marked: the training data cannot be read (\(error))"
        }
        let lines = LineSampler(vocabulary: vocabulary, trainingLines: training, count: count, seed: seed).mark(drawn)
        for line in lines { print(line.inTraining ? "\(line.text)  *" : line.text) }
        let new = lines.filter { !$0.inTraining }.count
        FileHandle.standardError.write(Data("\(lines.count) lines drawn with seed \(seed), \(new) new; \(note)\n".utf8))
    }
}
