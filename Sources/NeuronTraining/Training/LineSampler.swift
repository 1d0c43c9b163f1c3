// A text run's lines drawn at each epoch's end: what a character model has learned, in the form a
// person judges at a glance. Drawn from a generator of their own (the run's seed and the epoch),
// so they neither disturb training's draws nor change when a run is resumed.
import NeuronCore

/// A line a text model drew, and whether it is one of the lines it trained on.
public struct SampledLine: Sendable, Equatable, Codable {
    /// The line, without its boundary tokens.
    public var text: String
    /// Whether it is one of the training lines (a memorized line, not a new one).
    public var inTraining: Bool

    public init(text: String, inTraining: Bool) { (self.text, self.inTraining) = (text, inTraining) }
}

/// What a text run needs to draw lines: the vocabulary, the training lines, how many to draw.
public struct LineSampler: Sendable {
    /// The model's tokens.
    public var vocabulary: Vocabulary
    /// The lines trained on, to mark a drawn line that is one of them.
    public var trainingLines: Set<String>
    /// Lines drawn at each epoch's end (0: none).
    public var count: Int
    /// The run's seed: epoch `e`'s lines are drawn from `seed + 3 + e`.
    public var seed: UInt64
    /// Over a document: instead of lines, one passage of this many characters continuing a
    /// newline (the first character when the text has none), never drawing the boundary token
    /// (`SamplingRule.excludesBoundary`); nil for line data.
    public var passageLength: Int?

    public init(vocabulary: Vocabulary, trainingLines: Set<String>, count: Int, seed: UInt64) {
        (self.vocabulary, self.trainingLines, self.count, self.seed) = (vocabulary, trainingLines, count, seed)
    }

    /// `count` lines drawn from `network` after `epoch` epochs at temperature 1, marked.
    public func draw<Scalar: TensorScalar>(from network: Network<Scalar>, epoch: Int) -> [SampledLine] {
        guard count > 0 else { return [] }
        var network = network
        if let passageLength {
            let start = vocabulary.documentStart
            // A document model's shapes are a sequence model's; a model whose scores are not finite draws nothing.
            guard
                let drawn = try? network.continueText(
                    [start], length: passageLength, rule: try! SamplingRule(excludesBoundary: true), seed: seed &+ 3 &+ UInt64(epoch))
            else { return [] }
            return [SampledLine(text: vocabulary.decode(drawn), inTraining: false)]
        }
        // A text model's shapes are a sequence model's, and the rule's defaults are valid; a model
        // whose scores are not finite draws no line (its loss says why).
        guard let lines = try? network.sampleLines(count: count, rule: try! SamplingRule(), seed: seed &+ 3 &+ UInt64(epoch)) else { return [] }
        return mark(lines)
    }

    /// Token lines as text, each marked when it is a training line.
    public func mark(_ lines: [[Int]]) -> [SampledLine] {
        lines.map { tokens in
            let text = vocabulary.decode(tokens)
            return SampledLine(text: text, inTraining: trainingLines.contains(text))
        }
    }
}
