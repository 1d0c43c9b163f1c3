// Seeing attention: what each head of each causal self-attention layer weighs, for one line a
// person chooses. One forward pass of the line (the boundary token, then its characters, cropped to
// the network's positions as sampling crops); each attention layer keeps its weights of that pass
// (`CausalSelfAttention.attentionWeights`, kept for backward), and the maps are those weights over
// the line's real positions, the padding after them left out. The layer is causal, so what the
// padding holds changes nothing at the positions before it.

/// Every causal self-attention layer's weights on one line of text, e.g. for `cab` a `(4, 4)`
/// matrix per head over `⏎ c a b`: row `t` is the position attending, column `j` a position it
/// attends to, each row sums to 1 and is zero after the diagonal.
///
/// The layers (blocks) are in network order, those nested in a ``Residual`` or a ``Sequential``
/// included, each named as its tensors' names begin (`layers.2.body.1`).
public struct AttentionMaps: Sendable, Equatable, Codable {
    /// One attention layer's maps.
    public struct Block: Sendable, Equatable, Codable {
        /// Where the layer sits, as its tensors' names begin: `layers.2.body.1` is layer 1 of the
        /// body of the network's layer 2.
        public var name: String
        /// `CausalSelfAttention(64, 4 heads, time 16)`.
        public var title: String
        /// `heads[h][t][j]`: how much position `t` takes of position `j`'s value in head `h`,
        /// `(heads, positions, positions)`.
        public var heads: [[[Double]]]
    }

    /// The token at each position shown: the boundary token, then the line's characters (the last
    /// of them only, when the line was cropped).
    public var tokens: [Int]
    /// How each position is shown: its character, ``Vocabulary/boundarySymbol`` for the boundary
    /// (the token index when no vocabulary was given).
    public var labels: [String]
    /// The tokens of `⏎ c1 … cn` (of `c1 … cn` for a document model) left out at the start (the
    /// boundary first) to fit the network's positions; 0 when the line fits.
    public var cropped: Int
    /// Whether the pass read the boundary token first (a line model), or the text alone (a document model).
    public var readsBoundary = true
    /// Each attention layer's maps, in network order.
    public var blocks: [Block]

    /// The shades of ``picture(width:)``, darkest last: a weight below `below` takes `shade`.
    /// Steps of a quarter, with the nearly-zero weights apart from the masked positions (blank).
    public static let shades: [(below: Double, shade: Character)] = [(0.05, "·"), (0.25, "░"), (0.5, "▒"), (0.75, "▓"), (.infinity, "█")]

    /// The maps as text: a block per paragraph, its heads side by side (as many as fit in `width`
    /// columns, then the next row), each a square of shades with the characters on both axes, rows
    /// the positions attending, columns the positions attended to; a legend first.
    public func picture(width: Int = 120) -> String {
        // Two columns a cell: a terminal's cell is about twice as tall as wide, so a map reads square.
        let shown = labels.map { $0 == " " ? "␣" : $0 }
        let rowLabel = shown.map(\.count).max() ?? 1
        let positions = tokens.count
        let mapWidth = rowLabel + 1 + 2 * positions, gap = 4
        let perRow = max(1, (width + gap) / (mapWidth + gap))
        func pad(_ text: String, _ count: Int) -> String { text + String(repeating: " ", count: max(0, count - text.count)) }
        let thresholds = Self.shades.dropLast().map { "\($0.shade) < \($0.below) ≤ " }.joined()
        var lines = [
            "Attention weights: rows are the positions attending, columns the positions attended to.",
            "Shades: blank a later position (masked), \(thresholds)\(Self.shades.last!.shade)",
        ]
        if cropped > 0 && readsBoundary {
            let characters = cropped - 1
            lines.append(
                "Cropped to the network's \(positions) positions, as sampling crops: the boundary ⏎ and the line's first \(characters) character\(characters == 1 ? "" : "s") are left out."
            )
        } else if cropped > 0 {
            lines.append(
                "Cropped to the network's \(positions) positions, as sampling crops: the text's first \(cropped) character\(cropped == 1 ? "" : "s") are left out."
            )
        }
        for (b, block) in blocks.enumerated() {
            lines.append("")
            lines.append("Block \(b): \(block.name) \(block.title)")
            for first in stride(from: 0, to: block.heads.count, by: perRow) {
                let heads = first..<min(first + perRow, block.heads.count)
                var rows = [heads.map { pad(pad("", rowLabel + 1) + "head \($0)", mapWidth) }]
                rows.append(heads.map { _ in pad("", rowLabel + 1) + shown.map { pad($0, 2) }.joined() })
                for t in 0..<positions {
                    rows.append(
                        heads.map { h in
                            pad(shown[t], rowLabel + 1)
                                + (0..<positions).map { j in
                                    let shade = j > t ? " " : Self.shade(block.heads[h][t][j])
                                    return String(repeating: shade, count: 2)
                                }.joined()
                        })
                }
                lines.append(contentsOf: rows.map { $0.joined(separator: String(repeating: " ", count: gap)).trimmingSuffix() })
            }
        }
        return lines.joined(separator: "\n")
    }

    /// The shade of `weight`, from ``shades`` (a NaN the darkest, so that it is not missed).
    static func shade(_ weight: Double) -> Character {
        Self.shades.first { weight < $0.below }?.shade ?? Self.shades.last!.shade
    }
}

extension String {
    /// Without its trailing spaces.
    fileprivate func trimmingSuffix() -> String {
        var text = Substring(self)
        while text.last == " " { text.removeLast() }
        return String(text)
    }
}

extension Network {
    /// The causal self-attention layers in network order, those inside another layer (a
    /// ``Residual``'s body, a ``Sequential``: ``Layer/innerLayers``) included, each with the name
    /// its tensors' names begin with (`layers.2.body.1`).
    public var attentionLayers: [(name: String, layer: CausalSelfAttention<Scalar>)] {
        func search(_ layers: [(path: String, layer: any Layer<Scalar>)], _ prefix: String) -> [(name: String, layer: CausalSelfAttention<Scalar>)] {
            layers.flatMap { path, layer -> [(name: String, layer: CausalSelfAttention<Scalar>)] in
                let name = "\(prefix).\(path)"
                if let attention = layer as? CausalSelfAttention<Scalar> { return [(name, attention)] }
                return search(layer.innerLayers, name)
            }
        }
        return search(layers.enumerated().map { ("\($0)", $1) }, "layers")
    }

    /// Every attention layer's weights on `line`, a line of text as token indices of its
    /// characters (without the boundary token): one forward pass of `⏎ c1 … cn` (of `c1 … cn`
    /// for a document model, which never reads the boundary), cropped to its last `time` tokens
    /// when longer than the network's positions, as sampling crops.
    ///
    ///     // line: n tokens  →  per attention layer: (heads, m, m), m = min(n + 1, time) positions (n for a document)
    ///
    /// - Parameters:
    ///   - line: the line's characters as token indices, without the boundary token.
    ///   - vocabulary: names the positions' characters in ``AttentionMaps/labels``; nil: the token indices.
    ///   - boundary: whether the model reads the boundary token first (a line model) or not (a document model).
    /// - Throws: ``NetworkError/shapeMismatch(_:)`` when the network is not a sequence model;
    ///   ``NetworkError/invalidLayer(_:reason:)`` when it has no attention layer;
    ///   ``NetworkError/invalidValue(_:)`` for an empty line or a token the network does not have.
    public mutating func attentionMaps(line: [Int], vocabulary: Vocabulary? = nil, boundary: Bool = true) throws(NetworkError) -> AttentionMaps {
        guard inputShape.count == 1, outputShape.count == 2 else {
            throw .shapeMismatch("\(self) is not a sequence model (it takes \(TensorError.format(inputShape)), not positions of tokens)")
        }
        guard !attentionLayers.isEmpty else {
            throw .invalidLayer("the network", reason: "it has no causal self-attention layer, so there are no attention weights to show")
        }
        guard !line.isEmpty else { throw .invalidValue("an empty line: its attention maps need at least one character") }
        let time = inputShape[0]
        let whole = boundary ? [Vocabulary.boundary] + line : line
        let tokens = Array(whole.suffix(time))
        // The positions after the line hold the boundary token: causal, they change nothing before them.
        var x = Tensor<Scalar>(zeros: [1, time])
        for (t, token) in tokens.enumerated() { x[0, t] = Scalar(token) }
        try forward(x)
        let m = tokens.count
        let blocks = attentionLayers.map { name, layer in
            // attentionWeights: (batch 1, heads, time, time); the top-left (m, m) of each head.
            let w = layer.attentionWeights
            let heads = (0..<layer.heads).map { h in
                (0..<m).map { t in (0..<m).map { j in Double(w[(h * time + t) * time + j]) } }
            }
            return AttentionMaps.Block(name: name, title: layer.description, heads: heads)
        }
        // A softmax of non-finite scores is NaN: a picture of it would show nothing true.
        for block in blocks where block.heads.contains(where: { $0.contains { $0.contains { !$0.isFinite } } }) {
            throw .invalidValue(
                "\(block.name)'s attention weights on this line are not finite numbers: the model's weights give non-finite scores")
        }
        let labels = tokens.map { vocabulary?.name(of: $0) ?? "\($0)" }
        var maps = AttentionMaps(tokens: tokens, labels: labels, cropped: whole.count - m, blocks: blocks)
        maps.readsBoundary = boundary
        return maps
    }

    /// Every attention layer's weights on `text`, its characters read as `vocabulary`'s tokens (a
    /// tokenizer's vocabulary encodes it): ``attentionMaps(line:vocabulary:boundary:)``.
    /// - Throws: ``NetworkError/invalidValue(_:)`` naming the first character that is not in the
    ///   vocabulary and its place in the text (counted from 0), and as ``attentionMaps(line:vocabulary:boundary:)``.
    public mutating func attentionMaps(text: String, vocabulary: Vocabulary, boundary: Bool = true) throws(NetworkError) -> AttentionMaps {
        if vocabulary.tokenizer != nil, let line = vocabulary.encode(text) {
            return try attentionMaps(line: line, vocabulary: vocabulary, boundary: boundary)
        }
        var line: [Int] = []
        for (i, character) in text.unicodeScalars.enumerated() {
            guard let token = vocabulary.index(of: character) else {
                let shown = character.properties.generalCategory == .control ? character.escaped(asASCII: true) : String(character)
                throw .invalidValue(
                    "'\(shown)' (\(character.codePoint)), character \(i) of \"\(DataError.cut(text))\" (counted from 0), is not in the model's vocabulary: \(vocabulary)"
                )
            }
            line.append(token)
        }
        return try attentionMaps(line: line, vocabulary: vocabulary, boundary: boundary)
    }
}
