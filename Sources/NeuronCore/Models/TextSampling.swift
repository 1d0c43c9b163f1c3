// Drawing lines from a trained character model: every line starts as the boundary token (and a
// prefix, when given), and the model's distribution at the last filled position chooses the next
// token, until the boundary token comes back or the block is full. The models are causal (a
// position sees only itself and the positions before it), so the positions not yet filled, left
// as the boundary token, change nothing that is read.

/// How to turn a model's scores at a position into the next token.
public struct SamplingRule: Sendable, Equatable {
    /// Divides the scores before the softmax: below 1 sharper, above 1 flatter; greater than 0.
    public var temperature: Double
    /// Draw only among the `topK` most likely tokens (nil: all of them).
    public var topK: Int?

    /// A rule.
    /// - Throws: ``NeuronError/invalidHyperparameter(name:value:allowed:)`` for a temperature that
    ///   is not a finite number above 0, or a top-k below 1.
    public init(temperature: Double = 1, topK: Int? = nil) throws(NeuronError) {
        guard temperature.isFinite, temperature > 0 else {
            throw .invalidHyperparameter(name: "temperature", value: "\(temperature)", allowed: "a finite number greater than 0")
        }
        if let topK, topK < 1 { throw .invalidHyperparameter(name: "top-k", value: "\(topK)", allowed: "at least 1") }
        (self.temperature, self.topK) = (temperature, topK)
    }

    /// The probabilities of each token from the `scores` (logits) at one position: the softmax of
    /// `scores / temperature` over the `topK` highest (the others 0), in Double.
    public func probabilities<Scalar: TensorScalar>(_ scores: some Collection<Scalar>) -> [Double] {
        let z = scores.map { Double($0) / temperature }
        var kept = Array(z.indices)
        if let topK, topK < z.count {
            // Ties at the cut keep the lower token indices, so that a draw does not depend on a sort's order.
            kept.sort { z[$0] > z[$1] || (z[$0] == z[$1] && $0 < $1) }
            kept.removeLast(z.count - topK)
        }
        let maximum = kept.map { z[$0] }.max() ?? 0
        var p = [Double](repeating: 0, count: z.count)
        var total = 0.0
        for i in kept {
            p[i] = Double.libmExp(z[i] - maximum)
            total += p[i]
        }
        for i in kept { p[i] /= total }
        return p
    }
}

extension Network {
    /// The model's probabilities for the token after `prefix` (token indices, the boundary token
    /// first), under `rule`: one forward pass of the sequence.
    ///
    ///     // prefix: n tokens, 1 ≤ n ≤ time  →  one probability per token of the vocabulary
    ///
    /// - Throws: ``NetworkError/shapeMismatch(_:)`` when the prefix is empty, longer than the
    ///   network's positions, or not the network's tokens.
    public mutating func nextTokenProbabilities(after prefix: [Int], rule: SamplingRule) throws(NetworkError) -> [Double] {
        let time = inputShape[0]
        guard inputShape.count == 1, outputShape.count == 2 else {
            throw .shapeMismatch("\(self) is not a sequence model (it takes \(TensorError.format(inputShape)), not positions of tokens)")
        }
        guard (1...time).contains(prefix.count) else {
            throw .shapeMismatch("a prefix of \(prefix.count) tokens, but \(self) reads 1 to \(time) positions")
        }
        var x = Tensor<Scalar>(zeros: [1, time])
        for (t, token) in prefix.enumerated() { x[0, t] = Scalar(token) }
        try forward(x)
        let vocabulary = outputShape[1], logits = layers[layers.count - 1].output
        let row = (prefix.count - 1) * vocabulary
        return rule.probabilities(logits.scalars[row..<row + vocabulary])
    }

    /// `count` lines drawn from a character model, each continuing `prefix` (token indices of its
    /// characters, without the boundary token) until the model gives the boundary token or the
    /// block's positions run out; token indices in, token indices out (prefix included).
    ///
    ///     // count lines, drawn together: (count, time) token batches, one forward pass per position
    ///
    /// - Throws: ``NetworkError/shapeMismatch(_:)`` when the network is not a sequence model or the
    ///   prefix leaves no position to fill.
    public mutating func sampleLines(
        count: Int, prefix: [Int] = [], rule: SamplingRule, using generator: inout SeededGenerator
    ) throws(NetworkError) -> [[Int]] {
        guard inputShape.count == 1, outputShape.count == 2 else {
            throw .shapeMismatch("\(self) is not a sequence model (it takes \(TensorError.format(inputShape)), not positions of tokens)")
        }
        let time = inputShape[0], vocabulary = outputShape[1]
        guard prefix.count < time else {
            throw .shapeMismatch("a prefix of \(prefix.count) characters fills the \(time - 1) characters \(self) reads")
        }
        guard count >= 1 else { return [] }
        var x = Tensor<Scalar>(zeros: [count, time])  // the boundary token everywhere: line starts, and positions to come
        var lines = Array(repeating: prefix, count: count), open = Array(repeating: true, count: count)
        for n in 0..<count { for (t, token) in prefix.enumerated() { x[n, t + 1] = Scalar(token) } }
        for t in prefix.count..<time where open.contains(true) {
            try forward(x)
            let logits = layers[layers.count - 1].output
            for n in 0..<count where open[n] {
                let row = (n * time + t) * vocabulary
                let token = Self.draw(rule.probabilities(logits.scalars[row..<row + vocabulary]), using: &generator)
                if token == 0 {
                    open[n] = false
                } else {
                    lines[n].append(token)
                    if t + 1 < time { x[n, t + 1] = Scalar(token) }
                }
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
