// The counted bigram model: how often each token follows each other one in the training lines,
// and from the counts the maximum-likelihood table of next-token probabilities, in closed form.
// It is the baseline a character model must beat, and the loss a bigram network trained by
// gradient descent converges to (its logits are this table's logarithms).

/// Counts of token pairs over lines of text, each line read as `<t> c1 … cn <t>`.
public struct BigramCounts: Sendable, Equatable {
    /// Tokens in the vocabulary: the table is `vocabulary × vocabulary`.
    public let vocabulary: Int
    /// `counts[a · vocabulary + b]`: how often token `b` follows token `a`.
    public private(set) var counts: [Int]

    /// The pairs of `corpus`'s lines at `lines` (every line when nil).
    public init(_ corpus: TextCorpus, lines: [Int]? = nil) {
        vocabulary = corpus.vocabulary.count
        counts = Array(repeating: 0, count: vocabulary * vocabulary)
        for i in lines ?? Array(corpus.lines.indices) {
            // Lines were encoded once when read: every character is in the vocabulary.
            let tokens = [0] + corpus.vocabulary.encode(corpus.lines[i])! + [0]
            for (a, b) in zip(tokens, tokens.dropFirst()) { counts[a * vocabulary + b] += 1 }
        }
    }

    /// The table of logits `log P(b | a)` with `P(b | a) = (count(a, b) + α) / (count(a, ·) + V·α)`,
    /// `α = smoothing > 0`: row `a` is what an embedding's row for token `a` holds in a bigram network.
    ///
    ///     // → (vocabulary, vocabulary), row-major
    public func logits(smoothing α: Double) -> [Double] {
        var table = [Double](repeating: 0, count: counts.count)
        for a in 0..<vocabulary {
            let row = a * vocabulary..<(a + 1) * vocabulary
            // log(count(a, ·) + V·α) as log α + log(count(a, ·)/α + V): finite for every finite
            // α > 0, where V·α itself overflows past 1.8e308 / V (a table of -inf, a NaN loss).
            let logTotal = Double.libmLog(α) + Double.libmLog(Double(counts[row].reduce(0, +)) / α + Double(vocabulary))
            for i in row { table[i] = Double.libmLog(Double(counts[i]) + α) - logTotal }
        }
        return table
    }
}
