// Continuing a text: a prompt of tokens in, as many tokens as asked for out, each drawn from the
// model's distribution at the last position, the boundary token drawn like any other. The model
// reads the sequence's last `time` tokens (nanoGPT's crop), as `nextTokenProbabilities` reads a
// prefix; the two ways of computing that distribution below give the same numbers up to rounding.
//
// The reference recomputes the whole window for every token. Decoding with a cache computes each
// new position once: while the sequence fits in the block, the positions already read do not
// change, and a causal model's layers at a new position need only that position's input and, in
// attention, the keys and values of the positions before it, which the layers' caches keep from
// the passes before (`Layer.forward(position:_:parameters:state:)`, `Kernels/DecodingKernels.swift`).
// A full block is another matter: the model adds a learned vector for each absolute position
// (`PositionEmbedding`), so when the window slides by one every token sits at a new position, and
// every key and value changes. Past the block each token then costs one whole pass of the window, as
// in the reference; the cache saves the work of the first block.

extension Network {
    /// `length` tokens drawn one after another to continue `context`, each from the model's
    /// probabilities at the last position under `rule`, and fed back; the boundary token is drawn
    /// like any other and ends nothing. The model reads the sequence's last `time` tokens (the
    /// crop of ``nextTokenProbabilities(after:rule:)``), so the text may run past the block.
    ///
    ///     // context: n ≥ 1 tokens  →  length tokens; each read: the last min(n + drawn, time) tokens
    ///
    /// With `cache` (the default), each token costs one position's work while the sequence fits in
    /// the block: the context is read in one pass, then each new token runs through every layer at
    /// its own position alone, attention reading the keys and values of the earlier positions from
    /// its caches (``Layer/forward(position:_:parameters:state:)``). Once the sequence fills the
    /// block, each token costs one pass over its last `time` tokens: the learned position
    /// embedding is absolute, so sliding the window moves every token to a new position and
    /// changes every key and value. A network with a layer that does not run by position (a
    /// recurrent layer, a context window; ``Layer/runsByPosition``) takes the reference path.
    /// Without `cache`, the reference: one pass over the cropped window per token. The two give the
    /// same probabilities up to rounding, so the same tokens for the same seed.
    ///
    /// - Parameters:
    ///   - context: the tokens to continue (at least one): for a line model the boundary token
    ///     then a prefix, for a document model the prompt's characters.
    ///   - length: the number of tokens to draw (0 or more).
    ///   - rule: how a token is drawn from the model's scores.
    ///   - seed: the seed of the draws: one ``SeededGenerator`` stream, a uniform draw per token
    ///     (as ``sampleLines(count:prefix:rule:maximumLength:seed:firstLine:)`` draws).
    ///   - cache: whether to decode with the layers' caches (the default) or by whole passes.
    ///   - each: called with each token as it is drawn (a sampler prints them as they come).
    /// - Returns: the `length` tokens drawn, without the context.
    /// - Throws: ``NetworkError/shapeMismatch(_:)`` when the network is not a sequence model over
    ///   token indices or the context is empty; ``NetworkError/invalidValue(_:)`` for a context
    ///   token outside the vocabulary (naming it and its place), a negative length, or a score that
    ///   is not finite.
    public mutating func continueText(
        _ context: [Int], length: Int, rule: SamplingRule, seed: UInt64, cache: Bool = true, each: (Int) -> Void = { _ in }
    ) throws(NetworkError) -> [Int] {
        var generator = SeededGenerator(seed: seed)
        return try continueText(context, length: length, rule: rule, cache: cache) { p, _ in
            let token = Self.draw(p, using: &generator)
            each(token)
            return token
        }
    }

    /// ``continueText(_:length:rule:seed:cache:each:)`` with the choice of each token left to `choose`,
    /// handed the probabilities and the number of tokens chosen before: a draw, or a given text
    /// whose probabilities a test reads.
    mutating func continueText(
        _ context: [Int], length: Int, rule: SamplingRule, cache: Bool, choose: (_ probabilities: [Double], _ drawn: Int) -> Int
    ) throws(NetworkError) -> [Int] {
        guard inputShape.count == 1, outputShape.count == 2, let vocabulary = tokenVocabulary else {
            throw .shapeMismatch(
                "\(self) is not a sequence model over tokens (it takes \(TensorError.format(inputShape)), not positions of token indices)")
        }
        guard outputShape[1] <= vocabulary else {
            throw .shapeMismatch("\(self) scores \(outputShape[1]) tokens but reads \(vocabulary): a token it draws could not be read back")
        }
        guard !context.isEmpty else { throw .shapeMismatch("an empty context, but \(self) needs at least one token to read") }
        if let place = context.firstIndex(where: { !(0..<vocabulary).contains($0) }) {
            throw .invalidValue("the context's token \(place) is \(context[place]), outside the vocabulary: token indices are 0..<\(vocabulary)")
        }
        guard length >= 0 else { throw .invalidValue("a length of \(length) tokens: the number of tokens to draw is 0 or more") }
        var drawn: [Int] = []
        drawn.reserveCapacity(length)
        guard cache, layers.allSatisfy(\.runsByPosition) else {
            var text = context
            for _ in 0..<length {
                let token = choose(try nextTokenProbabilities(after: text, rule: rule), drawn.count)
                text.append(token)
                drawn.append(token)
            }
            return drawn
        }
        guard length > 0 else { return [] }
        // x holds the window the layers have computed: its first `filled` positions, the rest zeros
        // as the reference leaves them (a causal model does not read them).
        let time = inputShape[0], scores = outputShape[1]
        var x = Tensor<Scalar>(zeros: [1, time]), text = context, filled = 0
        text.reserveCapacity(context.count + length)
        /// One pass over the last `time` tokens of the text.
        func readWindow() {
            filled = min(time, text.count)
            for (t, token) in text.suffix(filled).enumerated() { x[0, t] = Scalar(token) }
            forwardUnchecked(x, mode: .evaluation)
        }
        readWindow()
        while true {
            let logits = layers[layers.count - 1].output, row = (filled - 1) * scores
            let token = choose(try rule.probabilities(logits.scalars[row..<row + scores]), drawn.count)
            drawn.append(token)
            text.append(token)
            guard drawn.count < length else { return drawn }
            if filled < time {
                x[0, filled] = Scalar(token)
                forwardUnchecked(position: filled, x)
                filled += 1
            } else {
                readWindow()
            }
        }
    }

    /// Position `position` of every layer's output for a batch of one (``Layer/forward(position:_:parameters:state:)``),
    /// the earlier positions as the passes before left them; the network's ``output`` stays the
    /// last whole pass's.
    ///
    ///     // x: (1, time) token indices, positions 0...position read  →  every layer's position `position`
    mutating func forwardUnchecked(position: Int, _ x: Tensor<Scalar>) {
        let parameters = self.parameters
        var state: [Scalar] = []
        swap(&state, &self.state)  // borrowed out of `self` (no copy) while layers are mutated
        defer { swap(&state, &self.state) }
        parameters.withUnsafeBufferPointer { p in
            state.withUnsafeMutableBufferPointer { s in
                for i in layers.indices {
                    let input = i == 0 ? x : layers[i - 1].output
                    layers[i].forward(
                        position: position, input, parameters: UnsafeBufferPointer(rebasing: p[layerRanges[i]]),
                        state: UnsafeMutableBufferPointer(rebasing: s[stateRanges[i]]))
                }
            }
        }
    }
}
