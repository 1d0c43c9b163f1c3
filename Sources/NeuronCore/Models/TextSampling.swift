// Drawing lines from a trained character model: every line starts as the boundary token (and a
// prefix, when given), and the model's distribution at the last filled position chooses the next
// token, until the boundary token comes back or the line reaches its most characters. Past the
// block, the model reads the line's last `time` tokens (nanoGPT's crop). The models are causal (a
// position sees only itself and the positions before it), so the positions not yet filled, left
// as the boundary token, change nothing that is read.

/// How to turn a model's scores at a position into the next token.
public struct SamplingRule: Sendable, Equatable {
    /// Divides the scores before the softmax: below 1 sharper, above 1 flatter; greater than 0.
    public var temperature: Double
    /// Draw only among the `topK` most likely tokens (nil: all of them).
    public var topK: Int?
    /// Leave the boundary token (``Vocabulary/boundary``) out before the draw, its probability 0
    /// and the others renormalized: a document model never reads the boundary, so drawing it
    /// would put a token in the text that the text never holds.
    public var excludesBoundary = false

    /// A rule.
    /// - Throws: ``NeuronError/invalidHyperparameter(name:value:allowed:)`` for a temperature that
    ///   is not a finite number above 0, or a top-k below 1.
    public init(temperature: Double = 1, topK: Int? = nil, excludesBoundary: Bool = false) throws(NeuronError) {
        guard temperature.isFinite, temperature > 0 else {
            throw .invalidHyperparameter(name: "temperature", value: "\(temperature)", allowed: "a finite number greater than 0")
        }
        if let topK, topK < 1 { throw .invalidHyperparameter(name: "top-k", value: "\(topK)", allowed: "at least 1") }
        (self.temperature, self.topK, self.excludesBoundary) = (temperature, topK, excludesBoundary)
    }

    /// The probabilities of each token from the `scores` (logits) at one position: the softmax of
    /// `scores / temperature` over the `topK` highest (the others 0; the boundary token left out
    /// first when ``excludesBoundary``), in Double. The largest score
    /// is subtracted before dividing, so every exponent is at most 0 for any temperature: a
    /// temperature so small that `score / temperature` overflows (1e-309) gives the greedy choice,
    /// not `inf − inf`.
    /// - Throws: ``NetworkError/invalidValue(_:)`` when a score is not finite (weights that
    ///   overflow): the probabilities would be NaN.
    public func probabilities<Scalar: TensorScalar>(_ scores: some Collection<Scalar>) throws(NetworkError) -> [Double] {
        let s = scores.map { Double($0) }
        if let bad = s.firstIndex(where: { !$0.isFinite }) {
            throw .invalidValue("the model's score for token \(bad) is \(s[bad]), not a finite number: its weights give non-finite outputs")
        }
        var kept = Array(s.indices)
        if excludesBoundary, s.count > 1 { kept.removeAll { $0 == Vocabulary.boundary } }
        if let topK, topK < kept.count {
            // Ties at the cut keep the lower token indices, so that a draw does not depend on a sort's order.
            kept.sort { s[$0] > s[$1] || (s[$0] == s[$1] && $0 < $1) }
            kept.removeLast(kept.count - topK)
        }
        let maximum = kept.map { s[$0] }.max() ?? 0
        var p = [Double](repeating: 0, count: s.count)
        var total = 0.0
        for i in kept {
            p[i] = Double.libmExp((s[i] - maximum) / temperature)
            total += p[i]
        }
        for i in kept { p[i] /= total }
        return p
    }
}

extension Network {
    /// The model's probabilities for the token after `prefix` (token indices, the boundary token
    /// first), under `rule`: one forward pass of the prefix's last `time` tokens (a longer prefix
    /// is cropped to the context the network reads, as nanoGPT crops it).
    ///
    ///     // prefix: n ≥ 1 tokens, the last min(n, time) read  →  one probability per token of the vocabulary
    ///
    /// - Throws: ``NetworkError/shapeMismatch(_:)`` when the prefix is empty or the network is
    ///   not a sequence model.
    public mutating func nextTokenProbabilities(after prefix: [Int], rule: SamplingRule) throws(NetworkError) -> [Double] {
        guard inputShape.count == 1, outputShape.count == 2 else {
            throw .shapeMismatch("\(self) is not a sequence model (it takes \(TensorError.format(inputShape)), not positions of tokens)")
        }
        let time = inputShape[0]
        guard !prefix.isEmpty else { throw .shapeMismatch("an empty prefix, but \(self) needs at least the boundary token to read") }
        let context = prefix.suffix(time)
        var x = Tensor<Scalar>(zeros: [1, time])
        for (t, token) in context.enumerated() { x[0, t] = Scalar(token) }
        try forward(x)
        let vocabulary = outputShape[1], logits = layers[layers.count - 1].output
        let row = (context.count - 1) * vocabulary
        return try rule.probabilities(logits.scalars[row..<row + vocabulary])
    }

    /// `count` lines drawn from a character model, each continuing `prefix` (token indices of its
    /// characters, without the boundary token) until the model gives the boundary token or the
    /// line holds `maximumLength` characters; token indices in, token indices out (prefix
    /// included). Once a line fills the block, the model reads its last `time` tokens: lines may
    /// be longer than the block.
    ///
    ///     // count lines, drawn together: (count, time) token batches, one forward pass per character
    ///
    /// - Parameters:
    ///   - count: the number of lines, drawn together.
    ///   - prefix: the characters every line starts with, as token indices.
    ///   - rule: how a character is drawn from the model's probabilities.
    ///   - maximumLength: the most characters a line holds, prefix included, so that a
    ///     model that never closes a line still ends; default four blocks.
    ///   - seed: the seed of every draw: line `firstLine + n` draws from stream `firstLine + n` of
    ///     it (``SeededGenerator/init(seed:stream:)``), so a line depends on the seed and its index
    ///     alone (the first of 5 lines is the line of 1), however many are drawn together.
    ///   - firstLine: the index of the first line drawn, for lines drawn in groups.
    /// - Throws: ``NetworkError/shapeMismatch(_:)`` when the network is not a sequence model or the
    ///   prefix leaves no character to draw; ``NetworkError/invalidValue(_:)`` when the model gives
    ///   a score that is not finite.
    public mutating func sampleLines(
        count: Int, prefix: [Int] = [], rule: SamplingRule, maximumLength: Int? = nil, seed: UInt64, firstLine: Int = 0
    ) throws(NetworkError) -> [[Int]] {
        guard inputShape.count == 1, outputShape.count == 2 else {
            throw .shapeMismatch("\(self) is not a sequence model (it takes \(TensorError.format(inputShape)), not positions of tokens)")
        }
        let time = inputShape[0], vocabulary = outputShape[1], maximumLength = maximumLength ?? 4 * time
        guard prefix.count < maximumLength else {
            throw .shapeMismatch("a prefix of \(prefix.count) characters leaves none to draw in lines of at most \(maximumLength)")
        }
        guard count >= 1 else { return [] }
        // Every open line has the same length (one token per pass), so all read the same window.
        var x = Tensor<Scalar>(zeros: [count, time])
        var lines = Array(repeating: prefix, count: count), open = Array(repeating: true, count: count)
        var generators = (0..<count).map { SeededGenerator(seed: seed, stream: firstLine + $0) }
        for length in prefix.count..<maximumLength where open.contains(true) {
            // The window: the last `time` tokens of `⏎ line` (position i of it is the boundary
            // for i = 0, else the line's token i − 1); positions past it hold what they held,
            // which a causal model does not read.
            let window = min(time, length + 1), start = length + 1 - window, read = window - 1
            for n in 0..<count where open[n] {
                for t in 0..<window {
                    let i = start + t
                    x[n, t] = Scalar(i == 0 ? Vocabulary.boundary : lines[n][i - 1])
                }
            }
            try forward(x)
            let logits = layers[layers.count - 1].output
            for n in 0..<count where open[n] {
                let row = (n * time + read) * vocabulary
                let token = Self.draw(try rule.probabilities(logits.scalars[row..<row + vocabulary]), using: &generators[n])
                if token == Vocabulary.boundary { open[n] = false } else { lines[n].append(token) }
            }
        }
        return lines
    }

    /// An index drawn with probability `p[i]` (which sum to 1): the first whose running sum passes
    /// a uniform draw; the last non-zero one when rounding leaves the draw past the total.
    static func draw(_ p: [Double], using generator: inout SeededGenerator) -> Int {
        let u = generator.nextUnit()
        var sum = 0.0
        for (i, probability) in p.enumerated() where probability > 0 {
            sum += probability
            if u < sum { return i }
        }
        return p.lastIndex { $0 > 0 } ?? 0
    }
}
