import ArgumentParser
import Foundation
import NeuronCore
import NeuronTraining

/// `neuron sample RUN`: lines drawn from a trained text model, marked when they are training lines.
struct Sample: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Draw lines from a trained text model (a run of text data), each continuing --prefix.",
        discussion: """
            Lines the model drew that are among its training lines are marked with '*' after two spaces. \
            The same run, options and seed give the same lines.
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

    @Flag(help: "Print each token's probability after the prefix (CSV: token,probability) instead of drawing lines.")
    var probabilities = false

    /// Lines drawn per batch of forward passes: bounds the memory a large --count takes.
    static let chunk = 256

    func validate() throws {
        guard (1...100_000).contains(count) else { throw ValidationError("--count \(count): expected a whole number from 1 to 100000") }
    }

    func run() throws {
        let saved = try Checkpoint.read(checkpoint)
        guard let vocabulary = saved.state.vocabulary else {
            throw RunError.invalid(
                "\(saved.file): \(saved.state.network) is not a text model (its data is \(saved.state.config.data.kind.rawValue)); only a run of text data draws lines"
            )
        }
        BLAS.threadCount = saved.state.config.training.blasThreads
        let rule = try SamplingRule(temperature: temperature, topK: topK)
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

    private func draw<Scalar: TensorScalar>(
        _: Scalar.Type, _ saved: LoadedCheckpoint, vocabulary: Vocabulary, rule: SamplingRule, prefix: [Int]
    ) throws {
        var network = try Prediction<Scalar>.network(saved)
        if probabilities {
            let p = try network.nextTokenProbabilities(after: [Vocabulary.boundary] + prefix, rule: rule)
            print("token,probability")
            for (token, probability) in p.enumerated() { print("\(Prediction<Scalar>.field(vocabulary.name(of: token))),\(probability)") }
            return
        }
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
