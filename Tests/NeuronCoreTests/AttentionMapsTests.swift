import Testing

@testable import NeuronCore

/// Sets the network's tensor `name` (`layers.1.c_attn.weight`) to `values`, in its buffer order.
private func set<Scalar>(_ network: inout Network<Scalar>, _ name: String, _ values: [Double]) {
    let tensor = network.parameterTensors.first { $0.name == name }!
    precondition(tensor.count == values.count, "\(name) holds \(tensor.count) values")
    for (i, value) in values.enumerated() { network.parameters[tensor.offset + i] = Scalar(value) }
}

/// The softmax of `q_t·k_jᵀ/√size` over `j ≤ t` for one head, by plain loops from the layer's input
/// `x` (`(time, features)` row-major) and `c_attn`'s weight `(3·features, features)` and bias.
private func expectedWeights(
    x: [Double], weight: [Double], bias: [Double], features: Int, heads: Int, head h: Int, positions m: Int
) -> [[Double]] {
    let size = features / heads
    func projection(_ t: Int, _ row: Int) -> Double {
        var sum = bias[row]
        for i in 0..<features { sum += weight[row * features + i] * x[t * features + i] }
        return sum
    }
    return (0..<m).map { t in
        let scores = (0...t).map { j in
            (0..<size).reduce(0.0) { $0 + projection(t, h * size + $1) * projection(j, features + h * size + $1) } / Double(size).squareRoot()
        }
        let e = scores.map { Double.libmExp($0) }, total = e.reduce(0, +)
        return (0..<m).map { j in j <= t ? e[j] / total : 0 }
    }
}

@Suite("Attention maps: every attention layer's weights on one line")
struct AttentionMapsTests {
    /// Embedding(3→2) then one head with `q = √2·ln 2·x`, `k = x`: the scores are `ln 2·(x_t·x_j)`,
    /// so each weight is `2^(x_t·x_j)` over its row's sum. With ⏎ = (1, 0), a = (0, 1), b = (1, 1),
    /// the line "ab" (⏎ a b) gives, by hand: row ⏎ [1]; row a: dots 0, 1 → [1/3, 2/3]; row b: dots
    /// 1, 1, 2 → [2, 2, 4]/8 = [1/4, 1/4, 1/2].
    @Test("A hand-worked head: weights 2^(x_t·x_j) over their row's sum", arguments: [false, true])
    func handWorked(float: Bool) throws {
        if float { try handWorked(Float.self, tolerance: 1e-6) } else { try handWorked(Double.self, tolerance: 1e-15) }
    }

    private func handWorked<Scalar: TensorScalar>(_: Scalar.Type, tolerance: Double) throws {
        var network = try Network<Scalar>(
            [
                try Embedding<Scalar>(vocabulary: 3, features: 2, time: 4), try CausalSelfAttention<Scalar>(time: 4, features: 2, heads: 1),
                try Dense<Scalar>(2, 3, activation: .identity, time: 4),
            ], loss: .sequenceCrossEntropy)
        network.initialize(seed: 1)
        set(&network, "layers.0.weight", [1, 0, 0, 1, 1, 1])
        let c = 2.0.squareRoot() * Double.libmLog(2)
        set(&network, "layers.1.c_attn.weight", [c, 0, 0, c, 1, 0, 0, 1, 1, 0, 0, 1])
        set(&network, "layers.1.c_attn.bias", [0, 0, 0, 0, 0, 0])
        let vocabulary = Vocabulary(characters: "ab".unicodeScalars)
        let maps = try network.attentionMaps(text: "ab", vocabulary: vocabulary)
        #expect(maps.tokens == [0, 1, 2] && maps.labels == ["⏎", "a", "b"] && maps.cropped == 0)
        #expect(maps.blocks.count == 1 && maps.blocks[0].name == "layers.1" && maps.blocks[0].title == "CausalSelfAttention(2, 1 head, time 4)")
        let expected: [[Double]] = [[1, 0, 0], [1.0 / 3, 2.0 / 3, 0], [0.25, 0.25, 0.5]]
        #expect(maps.blocks[0].heads.count == 1 && maps.blocks[0].heads[0].count == 3)
        for (row, want) in zip(maps.blocks[0].heads[0], expected) { expectClose(row, want, tolerance: tolerance) }
    }

    @Test("Weights that make the scores infinite give NaN maps: refused by layer, not drawn")
    func nonFiniteScores() throws {
        var network = try Network<Double>(
            [
                try Embedding<Double>(vocabulary: 3, features: 2, time: 4), try CausalSelfAttention<Double>(time: 4, features: 2, heads: 1),
                try Dense<Double>(2, 3, activation: .identity, time: 4),
            ], loss: .sequenceCrossEntropy)
        network.initialize(seed: 1)
        set(&network, "layers.0.weight", [1, 0, 0, 1, 1, 1])
        set(&network, "layers.1.c_attn.weight", Array(repeating: .greatestFiniteMagnitude, count: 12))
        #expect(
            throws: NetworkError.invalidValue(
                "layers.1's attention weights on this line are not finite numbers: the model's weights give non-finite scores")
        ) {
            try network.attentionMaps(text: "ab", vocabulary: Vocabulary(characters: "ab".unicodeScalars))
        }
    }

    /// Two attention layers, one nested in a residual block, random weights large enough that the
    /// maps are far from uniform: each map is the softmax computed here from the layer's input.
    @Test("Nested and top-level layers, several heads: rows sum to 1, zero after the diagonal, the softmax of q·kᵀ/√size")
    func nested() throws {
        let (time, features, vocabularySize) = (6, 4, 5)
        var network = try Network<Double>(
            [
                try Embedding<Double>(vocabulary: vocabularySize, features: features, time: time),
                try PositionEmbedding<Double>(time: time, features: features),
                try Residual<Double>([
                    try LayerNorm<Double>(shape: [time, features]), try CausalSelfAttention<Double>(time: time, features: features, heads: 2),
                ]),
                try CausalSelfAttention<Double>(time: time, features: features, heads: 1),
                try Dense<Double>(features, vocabularySize, activation: .identity, time: time),
            ], loss: .sequenceCrossEntropy)
        var generator = SeededGenerator(seed: 7)
        for i in network.parameters.indices { network.parameters[i] = generator.normal() }
        #expect(network.attentionLayers.map(\.name) == ["layers.2.body.1", "layers.3"])

        let line = [3, 1, 4]  // ⏎ then three characters: 4 of the 6 positions
        let maps = try network.attentionMaps(line: line)
        #expect(maps.tokens == [0, 3, 1, 4] && maps.labels == ["0", "3", "1", "4"] && maps.cropped == 0)
        #expect(maps.blocks.map(\.name) == ["layers.2.body.1", "layers.3"] && maps.blocks.map { $0.heads.count } == [2, 1])
        // The layers' inputs in that pass: the residual body's LayerNorm output, and the residual's output.
        let residual = network.layers[2] as! Residual<Double>
        let inputs = [residual.body.layers[0].output.scalars, network.layers[2].output.scalars]
        for (b, block) in maps.blocks.enumerated() {
            let name = block.name
            let weight = network.parameter(network.parameterTensors.first { $0.name == name + ".c_attn.weight" }!).scalars
            let bias = network.parameter(network.parameterTensors.first { $0.name == name + ".c_attn.bias" }!).scalars
            for (h, map) in block.heads.enumerated() {
                #expect(map.count == 4 && map.allSatisfy { $0.count == 4 })
                for (t, row) in map.enumerated() {
                    expectClose(row.reduce(0, +), 1, tolerance: 1e-14)
                    #expect(row[(t + 1)...].allSatisfy { $0 == 0 }, "block \(b) head \(h) row \(t): \(row)")
                }
                let want = expectedWeights(
                    x: inputs[b], weight: weight, bias: bias, features: features, heads: block.heads.count, head: h, positions: 4)
                for (row, wanted) in zip(map, want) { expectClose(row, wanted, tolerance: 1e-12) }
                // Far from uniform, so that the comparison means something.
                #expect(map.joined().contains { $0 > 0.6 } || map[3].max()! > 0.4, "block \(b) head \(h) is nearly uniform: \(map)")
            }
        }

        // Causal: a longer line gives the same maps at its first positions.
        let longer = try network.attentionMaps(line: line + [2, 2])
        for (short, long) in zip(maps.blocks, longer.blocks) {
            for (a, b) in zip(short.heads, long.heads) {
                for t in 0..<4 { expectClose(a[t], Array(b[t][..<4]), tolerance: 1e-14) }
            }
        }

        // Cropped as sampling crops: the last `time` tokens of ⏎ c1 … c8 are c3 … c8, read from position 0.
        let long = [1, 2, 3, 4, 1, 2, 3, 4]
        let cropped = try network.attentionMaps(line: long)
        #expect(cropped.tokens == Array(long.suffix(time)) && cropped.cropped == 3)
        #expect(cropped.blocks.allSatisfy { $0.heads.allSatisfy { $0.count == time } })
        #expect(cropped.picture().contains("the boundary ⏎ and the line's first 2 characters are left out."))
        // A document model reads no boundary: of c1 … c8, the first 8 − time characters are left out, and said so.
        let document = try network.attentionMaps(line: long, boundary: false)
        #expect(document.tokens == Array(long.suffix(time)) && document.cropped == long.count - time)
        #expect(document.picture().contains("the text's first \(long.count - time) characters are left out."), "\(document.picture())")
        #expect(!document.picture().contains("boundary"))
        var x = Tensor<Double>(zeros: [1, time])
        for (t, token) in long.suffix(time).enumerated() { x[0, t] = Double(token) }
        try network.forward(x)
        let direct = network.layers[3] as! CausalSelfAttention<Double>
        #expect(cropped.blocks[1].heads[0].joined().elementsEqual(direct.attentionWeights.scalars))
    }

    @Test("Refused: a network without attention, an empty line, a character outside the vocabulary, tokens out of range")
    func refused() throws {
        var recurrent = try Network<Double>(
            [
                try Embedding<Double>(vocabulary: 3, features: 2, time: 4), try RNN<Double>(time: 4, inputs: 2, hidden: 3),
                try Dense<Double>(3, 3, activation: .identity, time: 4),
            ], loss: .sequenceCrossEntropy)
        #expect(message { () throws(NetworkError) in try recurrent.attentionMaps(line: [1]) }.contains("no causal self-attention layer"))
        var tabular = try Network<Double>(features: 2, layers: [(3, .tanh)], loss: .halfSquaredError, seed: 1)
        #expect(message { () throws(NetworkError) in try tabular.attentionMaps(line: [1]) }.contains("is not a sequence model"))

        var network = try Network<Double>(
            [
                try Embedding<Double>(vocabulary: 3, features: 2, time: 4), try CausalSelfAttention<Double>(time: 4, features: 2, heads: 2),
                try Dense<Double>(2, 3, activation: .identity, time: 4),
            ], loss: .sequenceCrossEntropy)
        network.initialize(seed: 2)
        let vocabulary = Vocabulary(characters: "ab".unicodeScalars)
        #expect(message { () throws(NetworkError) in try network.attentionMaps(text: "", vocabulary: vocabulary) }.contains("an empty line"))
        let outside = message { () throws(NetworkError) in try network.attentionMaps(text: "abéa", vocabulary: vocabulary) }
        #expect(
            outside.contains("'é' (U+00E9), character 2 of \"abéa\" (counted from 0), is not in the model's vocabulary: Vocabulary(3 tokens: ⏎ab)"),
            "\(outside)")
        let tab = message { () throws(NetworkError) in try network.attentionMaps(text: "a\tb", vocabulary: vocabulary) }
        #expect(tab.contains(#"'\t' (U+0009), character 1"#), "\(tab)")
        let token = message { () throws(NetworkError) in try network.attentionMaps(line: [1, 3]) }
        #expect(token.contains("position 2 holds 3.0") && token.contains("whole numbers in 0..<3"), "\(token)")
    }

    @Test("The picture: the legend, a block per paragraph, heads side by side, characters on both axes, a shade per weight")
    func picture() {
        let maps = AttentionMaps(
            tokens: [0, 1, 2], labels: ["⏎", "a", " "], cropped: 0,
            blocks: [
                AttentionMaps.Block(
                    name: "layers.1", title: "CausalSelfAttention(2, 2 heads, time 4)",
                    heads: [
                        [[1, 0, 0], [0.3, 0.7, 0], [0.02, 0.2, 0.78]],
                        [[1, 0, 0], [0.5, 0.5, 0], [0.6, 0.1, 0.3]],
                    ])
            ])
        let lines = maps.picture().split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines[1] == "Shades: blank a later position (masked), · < 0.05 ≤ ░ < 0.25 ≤ ▒ < 0.5 ≤ ▓ < 0.75 ≤ █")
        #expect(lines[3] == "Block 0: layers.1 CausalSelfAttention(2, 2 heads, time 4)")
        // Each map is 2 + 2·3 = 8 columns wide, the next 4 columns on; a space shown as ␣.
        #expect(lines[4] == "  head 0      head 1")
        #expect(lines[5] == "  ⏎ a ␣       ⏎ a ␣")
        #expect(lines[6] == "⏎ ██        ⏎ ██")
        #expect(lines[7] == "a ▒▒▓▓      a ▓▓▓▓")
        #expect(lines[8] == "␣ ··░░██    ␣ ▓▓░░▒▒")
        // Too narrow for two heads side by side: one under the other.
        let narrow = maps.picture(width: 10).split(separator: "\n").map(String.init)
        #expect(narrow.filter { $0.hasPrefix("  head") } == ["  head 0", "  head 1"])
    }
}
