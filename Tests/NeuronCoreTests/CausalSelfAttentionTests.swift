import Testing

@testable import NeuronCore

/// A realistic mistake in causal self-attention, planted by ``PlantedAttention``: the first three in
/// the heads' backward pass of either path, the last three in the tiled path's own steps.
enum AttentionBug: String, Sendable, CaseIterable {
    /// The score gradient without forward's `1/√size`: `dq` and `dk` come out `√size` times too large.
    case scoreScaleMissing
    /// The mask left out of backward: the scores above the diagonal keep `datt`, the full product's,
    /// as though the later keys had been seen, and pass it on to `dq` and `dk`.
    case maskNotApplied
    /// The softmax backward's row sum `Σ_j att_j·datt_j` taken from the row above (the previous
    /// query's), not the query's own; the first row keeps its own.
    case softmaxWrongRow
    /// Tiled backward: the diagonal tile's weights recomputed without the mask, so that a query
    /// takes `e^(s - lse)` of the later keys of its own tile into `dv`, `dq` and `dk`.
    case diagonalUnmasked
    /// Tiled forward: the online softmax's partial sum of values not rescaled by `e^(m - m')` when a
    /// later key tile raises a row's maximum (its sum `l` is): the earlier tiles weigh `e^(m' - m)`
    /// too much. Backward, from the right log-sum-exps, is the right function's.
    case rescaleMissing
    /// Tiled forward: the log-sum-exp kept as `log l`, without the row's maximum `m`: backward's
    /// recomputed weights come out `e^m` times too large.
    case logSumExpWithoutMaximum

    /// Whether the bug is in a step of the tiled path alone.
    var isTiledOnly: Bool { [.diagonalUnmasked, .rescaleMissing, .logSumExpWithoutMaximum].contains(self) }
}

/// A causal self-attention layer with a bug planted: forward is the real layer's, then, for a bug
/// in forward (``AttentionBug/rescaleMissing``), what the bug changes in the heads' sums carried on
/// through `c_proj`; backward the real one's, then what a bug in backward changes in `[dq | dk |
/// dv]` carried on as the kernel would carry it, into `c_attn`'s gradients and `dx`.
struct PlantedAttention<Scalar: TensorScalar>: Layer {
    var layer: CausalSelfAttention<Scalar>
    let bug: AttentionBug
    var damaged = Tensor<Scalar>(zeros: [0, 0, 0])
    var damagedOutput = Tensor<Scalar>(zeros: [0, 0, 0])

    var inputShape: [Int] { layer.inputShape }
    var outputShape: [Int] { layer.outputShape }
    var parameterShapes: [(name: String, shape: [Int])] { layer.parameterShapes }
    var description: String { "Planted(\(bug), \(layer))" }
    var output: Tensor<Scalar> { damagedOutput }
    var inputGradient: Tensor<Scalar> { damaged }

    func initialize(parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>, using generator: inout SeededGenerator)
    {
        layer.initialize(parameters: parameters, state: state, using: &generator)
    }
    mutating func forward(_ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>, mode: LayerMode) {
        layer.forward(x, parameters: parameters, state: state, mode: mode)
        damagedOutput = layer.output
        guard bug == .rescaleMissing else { return }
        // y += Δa·W_projᵀ
        let delta = attendedDamage(), features = layer.features, at = AttentionParameters(features: features)
        for r in 0..<delta.count / features {
            for o in 0..<features {
                var sum: Scalar = 0
                for j in 0..<features { sum += delta[r * features + j] * parameters[at.projectionWeight + o * features + j] }
                damagedOutput[r * features + o] += sum
            }
        }
    }
    func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        PlantedAttention<Other>(layer: layer.converted(to: Other.self) as! CausalSelfAttention<Other>, bug: bug)
    }

    /// The tiled path's tile, or the whole block for the full path.
    var tile: Int {
        if case .tiled(let tile) = layer.path { return min(tile, layer.time) }
        return layer.time
    }

    /// Every head's scaled scores `q_t·k_u/√size`, `[b][h][t][u]` over every pair, from the layer's `[q | k | v]`.
    func scores() -> [[[[Scalar]]]] {
        let c = layer.cache
        let (time, features, heads, size) = (layer.time, layer.features, layer.heads, layer.headSize)
        let width = 3 * features, scale = 1 / Scalar(size).squareRoot()
        func score(_ b: Int, _ h: Int, _ t: Int, _ u: Int) -> Scalar {
            let q = (b * time + t) * width + h * size, k = (b * time + u) * width + features + h * size
            return (0..<size).reduce(Scalar(0)) { $0 + c.qkv[q + $1] * c.qkv[k + $1] } * scale
        }
        return (0..<c.qkv.count / (time * width)).map { b in (0..<heads).map { h in (0..<time).map { t in (0..<time).map { score(b, h, t, $0) } } } }
    }

    /// What ``AttentionBug/rescaleMissing`` adds to the heads' sums, `(batch·time, features)`: per
    /// query, with `M` its maximum over keys `0...t`, `l = Σ_u e^(s_u - M)` and `m_c` the running
    /// maximum after key tile `c`, the partial sums `Σ_(u in c) e^(s_u - m_c)·v_u` summed without
    /// rescaling, over `l`, less the right sum.
    func attendedDamage() -> [Scalar] {
        let c = layer.cache, s = scores()
        let (time, features, heads, size) = (layer.time, layer.features, layer.heads, layer.headSize)
        var delta = [Scalar](repeating: 0, count: c.attended.count)
        for b in s.indices {
            for h in 0..<heads {
                for t in 0..<time {
                    let row = s[b][h][t], largest = row[0...t].max()!
                    let l = row[0...t].reduce(Scalar(0)) { $0 + Scalar.libmExp($1 - largest) }
                    for u in 0...t {
                        // The running maximum after u's key tile: keys up to the tile's end, or t.
                        let running = row[0...min(t, (u / tile + 1) * tile - 1)].max()!
                        let excess = Scalar.libmExp(largest - running) - 1
                        let weight = Scalar.libmExp(row[u] - largest) / l
                        for i in 0..<size {
                            delta[(b * time + t) * features + h * size + i] +=
                                excess * weight * c.qkv[(b * time + u) * 3 * features + 2 * features + h * size + i]
                        }
                    }
                }
            }
        }
        return delta
    }

    mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>, computeInputGradient: Bool
    ) {
        layer.backward(input: x, outputGradient: dy, parameters: parameters, gradients: gradients, computeInputGradient: computeInputGradient)
        damaged = layer.inputGradient
        let delta = damage()
        // What the kernel does with [dq | dk | dv] after the heads: dW_attn += Δᵀ·x, db_attn += Σ Δ, dx += Δ·W_attn.
        let (features, width) = (layer.features, 3 * layer.features)
        let at = AttentionParameters(features: features)
        for r in 0..<delta.count / width {
            for o in 0..<width {
                let d = delta[r * width + o]
                gradients[at.attentionBias + o] += d
                for i in 0..<features {
                    gradients[at.attentionWeight + o * features + i] += d * x[r * features + i]
                    if computeInputGradient { damaged[r * features + i] += d * parameters[at.attentionWeight + o * features + i] }
                }
            }
        }
    }

    /// What the bug adds to the right `[dq | dk | dv]`, `(batch·time, 3·features)`, from the
    /// layer's caches (nothing for a bug in forward).
    func damage() -> [Scalar] {
        let c = layer.cache, weights = layer.attentionWeights
        let (time, features, heads, size) = (layer.time, layer.features, layer.heads, layer.headSize)
        let width = 3 * features, scale = 1 / Scalar(size).squareRoot()
        var delta = [Scalar](repeating: 0, count: c.qkvGradient.count)
        if bug == .rescaleMissing { return delta }
        let s = bug == .diagonalUnmasked || bug == .logSumExpWithoutMaximum ? scores() : []
        if bug == .scoreScaleMissing {
            // dq, dk without the 1/√size are √size times the right ones.
            for r in 0..<delta.count / width {
                for j in 0..<2 * features { delta[r * width + j] = c.qkvGradient[r * width + j] * (Scalar(size).squareRoot() - 1) }
            }
            return delta
        }
        for b in 0..<c.qkv.count / (time * width) {
            for h in 0..<heads {
                func qkv(_ t: Int, _ part: Int, _ i: Int) -> Int { (b * time + t) * width + part * features + h * size + i }
                func att(_ t: Int, _ u: Int) -> Scalar { weights[((b * heads + h) * time + t) * time + u] }
                // datt[t][u] = Σ_i da[t, i]·v[u, i] over every key, and each row's Σ_u att·datt
                let datt = (0..<time).map { t in
                    (0..<time).map { u in
                        (0..<size).reduce(Scalar(0)) { $0 + c.attendedGradient[(b * time + t) * features + h * size + $1] * c.qkv[qkv(u, 2, $1)] }
                    }
                }
                let dot = (0..<time).map { t in (0...t).reduce(Scalar(0)) { $0 + att(t, $1) * datt[t][$1] } }
                for t in 0..<time {
                    for u in 0..<time {
                        // The weight the bug adds (into dv and, times datt - D, into ds), and what it adds to ds.
                        var extra: Scalar = 0
                        let wrong: Scalar
                        switch bug {
                        case .maskNotApplied: wrong = u > t ? datt[t][u] : 0
                        case .softmaxWrongRow: wrong = t > 0 && u <= t ? att(t, u) * (dot[t] - dot[t - 1]) : 0
                        case .diagonalUnmasked:
                            // Keys after t within t's own (diagonal) tile: e^(s - lse) where the mask leaves 0.
                            if u > t && u < (t / tile + 1) * tile { extra = Scalar.libmExp(s[b][h][t][u] - c.logSumExp[(b * heads + h) * time + t]) }
                            wrong = extra * (datt[t][u] - dot[t])
                        case .logSumExpWithoutMaximum:
                            // e^(s - log l) = e^m·e^(s - lse): (e^m - 1)·att more than right.
                            if u <= t { extra = (Scalar.libmExp(s[b][h][t][0...t].max()!) - 1) * att(t, u) }
                            wrong = extra * (datt[t][u] - dot[t])
                        case .scoreScaleMissing, .rescaleMissing: wrong = 0
                        }
                        for i in 0..<size {
                            delta[qkv(u, 2, i)] += extra * c.attendedGradient[(b * time + t) * features + h * size + i]
                            delta[qkv(t, 0, i)] += wrong * c.qkv[qkv(u, 1, i)] * scale
                            delta[qkv(u, 1, i)] += wrong * c.qkv[qkv(t, 0, i)] * scale
                        }
                    }
                }
            }
        }
        return delta
    }
}

@Suite("Causal self-attention: forward and backward against the naive loops, by hand, and gradient-checked")
struct CausalSelfAttentionTests {
    /// The naive references' operands, read out of a layer's parameter slice (nn.Linear's layout).
    static func tensors<Scalar>(_ p: [Scalar], features: Int) throws -> (
        attentionWeight: Tensor<Scalar>, attentionBias: Tensor<Scalar>, projectionWeight: Tensor<Scalar>, projectionBias: Tensor<Scalar>
    ) {
        let at = AttentionParameters(features: features)
        return (
            try Tensor(shape: [3 * features, features], scalars: Array(p[at.attentionWeight..<at.attentionBias])),
            Tensor(vector: Array(p[at.attentionBias..<at.projectionWeight])),
            try Tensor(shape: [features, features], scalars: Array(p[at.projectionWeight..<at.projectionBias])),
            Tensor(vector: Array(p[at.projectionBias..<at.count]))
        )
    }

    // MARK: Worked by hand

    /// The paths a small case runs on: full; tiled with tiles of one row (every key tile before the
    /// diagonal one rescales), of two and of the default.
    static let paths: [AttentionPath] = [.full, .tiled(tile: 1), .tiled(tile: 2), .tiled(tile: AttentionPath.defaultTile)]

    @Test("Time 2, features 2, one head, q = k = v = x and c_proj the identity, worked by hand, on each path", arguments: paths)
    func handWorked(path: AttentionPath) throws {
        // W_attn = [I; I; I], W_proj = I, biases 0; x_0 = [1, 0], x_1 = [0, 1]; size 2, scale 1/√2.
        // Position 0 sees only itself: att_0 = [1, 0], y_0 = v_0 = [1, 0].
        // Position 1: scores [x_1·x_0, x_1·x_1]/√2 = [0, 1/√2], att_1 = [a, 1 - a] with
        // a = 1/(1 + e^(1/√2)) = 0.3302384506733431; y_1 = a·v_0 + (1 - a)·v_1 = [a, 1 - a].
        // With tiles of one row, position 1's key 0 is a tile before its diagonal one: its running
        // maximum goes from 0 to 1/√2, and its partial sum v_0 is rescaled by e^(-1/√2) = a/(1 - a).
        var layer = try CausalSelfAttention<Double>(time: 2, features: 2, heads: 1, path: path)
        let identity: [Double] = [1, 0, 0, 1]
        let parameters = identity + identity + identity + [0, 0, 0, 0, 0, 0] + identity + [0, 0]
        let x = try Tensor<Double>(shape: [1, 2, 2], scalars: [1, 0, 0, 1])
        // The loss y_1[0] = a·x_0[0] + (1 - a)·x_1[0] (dy = [[0, 0], [1, 0]]): ∂/∂a = 1, so the scores
        // get ds_1 = a(1 - a)·[1, -1], and with c = a(1 - a)/√2 = 0.1563985965451104:
        //   dq_1 = c·(k_0 - k_1) = [c, -c]    dk_0 = c·q_1 = [0, c]    dk_1 = -c·q_1 = [0, -c]
        //   dv_0 = a·[1, 0]    dv_1 = (1 - a)·[1, 0]    (position 0's row gets nothing: its softmax is constant)
        // dW_attn[o] = [dqkv_0[o], dqkv_1[o]] (x is the identity), db_attn = Σ_t dqkv_t: the key's bias
        // gets 0, as it must (a constant added to a row's scores leaves its softmax unchanged).
        // dx_t = dq_t + dk_t + dv_t: dx_0 = [a, c], dx_1 = [1 - a + c, -2c].
        let run = runLayer(&layer, x: x, parameters: parameters, dy: try Tensor(shape: [1, 2, 2], scalars: [0, 0, 1, 0]))
        let (a, c) = (0.3302384506733431, 0.1563985965451104)
        let tolerance = 8 * Double.ulpOfOne  // a few roundings of numbers below 2
        expectClose(run.output.scalars, [1, 0, a, 1 - a], tolerance: tolerance)
        expectClose(layer.attentionWeights.scalars, [1, 0, a, 1 - a], tolerance: tolerance)
        #expect(layer.attentionWeights.shape == [1, 1, 2, 2])
        let attentionWeight: [Double] = [0, c, 0, -c, 0, 0, c, -c, a, 1 - a, 0, 0]
        let attentionBias: [Double] = [c, -c, 0, 0, 1, 0]
        let projectionWeight: [Double] = [a, 1 - a, 0, 0]  // dy_1 ⊗ attended_1
        let projectionBias: [Double] = [1, 0]
        expectClose(run.gradients, attentionWeight + attentionBias + projectionWeight + projectionBias, tolerance: tolerance)
        expectClose(run.inputGradient.scalars, [a, c, 1 - a + c, -2 * c], tolerance: tolerance)
        if path != .full {
            // lse_0 = s_00 = x_0·x_0/√2 = 1/√2; lse_1 = log(1 + e^(1/√2)) = 1/√2 - log(1 - a).
            expectClose(
                layer.cache.logSumExp.scalars, [Double(0.5).squareRoot(), Double(0.5).squareRoot() - Double.libmLog(1 - a)], tolerance: tolerance)
            #expect(layer.cache.attention.count == 0)
        }
    }

    // MARK: Fast against naive

    /// Runs the layer and the naive definitions on random parameters, inputs and output gradients,
    /// and compares the output, the attention weights, every parameter's gradient and the input's.
    static func compareWithNaive<Scalar: TensorScalar>(
        _: Scalar.Type, batch: Int, time: Int, features: Int, heads: Int, path: AttentionPath = .full, tolerance: Scalar
    ) throws {
        var g = SeededGenerator(seed: UInt64(batch * 1000 + time * 100 + features * 10 + heads))
        var layer = try CausalSelfAttention<Scalar>(time: time, features: features, heads: heads, path: path)
        let parameters: [Scalar] = randomScalars(layer.parameterCount, using: &g)
        let x = Tensor<Scalar>.random([batch, time, features], using: &g)
        let dy = Tensor<Scalar>.random([batch, time, features], using: &g)
        let p = try tensors(parameters, features: features)
        let run = runLayer(&layer, x: x, parameters: parameters, dy: dy)
        let forward = Naive.causalSelfAttentionForward(
            x, attentionWeight: p.attentionWeight, attentionBias: p.attentionBias, projectionWeight: p.projectionWeight,
            projectionBias: p.projectionBias, heads: heads)
        let d = Naive.causalSelfAttentionBackward(
            x, attentionWeight: p.attentionWeight, attentionBias: p.attentionBias, projectionWeight: p.projectionWeight,
            projectionBias: p.projectionBias, heads: heads, outputGradient: dy)
        // Each quantity within `tolerance` times its largest entry (at least 1): a gradient summed
        // over 256 positions reaches 33 where the outputs stay below 5.
        func expectNear(_ fast: [Scalar], _ naive: [Scalar], sourceLocation: SourceLocation = #_sourceLocation) {
            expectClose(fast, naive, tolerance: tolerance * max(1, naive.map(abs).max() ?? 0), sourceLocation: sourceLocation)
        }
        expectNear(run.output.scalars, forward.output.scalars)
        #expect(run.output.shape == [batch, time, features])
        expectNear(layer.attentionWeights.scalars, forward.attention.scalars)
        #expect(layer.attentionWeights.shape == [batch, heads, time, time])
        expectNear(run.gradients, [d.attentionWeight, d.attentionBias, d.projectionWeight, d.projectionBias].flatMap(\.scalars))
        expectNear(run.inputGradient.scalars, d.input.scalars)
        #expect(run.inputGradient.shape == x.shape)
    }

    /// Odd sizes (batch 3, time 5, features 6 in 1, 2, 3 and 6 heads), one position, one sample.
    static let sizes = [(3, 5, 6, 2), (3, 5, 6, 3), (3, 5, 6, 1), (3, 5, 6, 6), (2, 1, 6, 3), (1, 7, 4, 2), (1, 1, 1, 1)]

    @Test("Fast and naive agree on the output, the attention weights and every gradient, Float and Double", arguments: sizes)
    func matchesNaive(batch: Int, time: Int, features: Int, heads: Int) throws {
        // The two sum the same terms in different orders (BLAS's blocks against one loop), the
        // softmax shifted by the row's maximum in one and not in the other: at most 1.8e-15 apart
        // in Double and 9.5e-7 in Float on these sizes, on values up to 7.5: at most 6.1e-16 and
        // 2.6e-7 of each quantity's largest entry (or of 1). The tolerances leave 15× that and more.
        try Self.compareWithNaive(Double.self, batch: batch, time: time, features: features, heads: heads, tolerance: 1e-14)
        try Self.compareWithNaive(Float.self, batch: batch, time: time, features: features, heads: heads, tolerance: 5e-6)
    }

    /// The tiled path at tiles of 4: times 1 and 2 (inside one tile), 3 (tile - 1), 4, 5 (tile + 1)
    /// and 11 (two whole tiles and a ragged one), in 1, 2, 3 and 6 heads; at tiles of 3 and time 9
    /// (three whole); and at the default tile of 64: 63, 64, 65, 150 (ragged) and nanoGPT's block of 256.
    static let tiledSizes = [
        (2, 1, 6, 2, 4), (2, 2, 6, 3, 4), (3, 3, 6, 1, 4), (2, 4, 6, 6, 4), (2, 5, 6, 2, 4), (3, 11, 6, 3, 4), (2, 11, 6, 6, 4),
        (1, 9, 4, 2, 3), (1, 63, 8, 2, 64), (1, 64, 8, 4, 64), (2, 65, 6, 3, 64), (1, 150, 6, 2, 64), (1, 256, 8, 2, 64),
    ]

    @Test("The tiled path and the naive loops agree on the output, the weights and every gradient, Float and Double", arguments: tiledSizes)
    func tiledMatchesNaive(batch: Int, time: Int, features: Int, heads: Int, tile: Int) throws {
        // As the full path's: the same terms summed in other orders, each row shifted by its running
        // maximum against the naive loops' unshifted sums over up to 256 keys. Relative to each
        // quantity's largest entry (up to 33, a weight's gradient at time 256), at most 1.3e-15
        // apart in Double and 1.2e-6 in Float (dx at time 150). The tolerances leave about 4× that.
        let path = AttentionPath.tiled(tile: tile)
        try Self.compareWithNaive(Double.self, batch: batch, time: time, features: features, heads: heads, path: path, tolerance: 5e-15)
        try Self.compareWithNaive(Float.self, batch: batch, time: time, features: features, heads: heads, path: path, tolerance: 5e-6)
    }

    // MARK: The causal mask

    @Test(
        "Changing the input at position t changes no output before t, and changes t's, on each path",
        arguments: [1, 2, 3], [AttentionPath.full, .tiled(tile: 2), .tiled(tile: 4)])
    func causal(heads: Int, path: AttentionPath) throws {
        var g = SeededGenerator(seed: UInt64(heads))
        let (batch, time, features) = (2, 6, 6)
        var layer = try CausalSelfAttention<Double>(time: time, features: features, heads: heads, path: path)
        let parameters: [Double] = randomScalars(layer.parameterCount, using: &g)
        let x = Tensor<Double>.random([batch, time, features], using: &g)
        let y = runLayer(&layer, x: x, parameters: parameters, dy: nil).output
        for t in 0..<time {
            var changed = x
            for b in 0..<batch { for i in 0..<features { changed[(b * time + t) * features + i] += 0.5 } }
            let z = runLayer(&layer, x: changed, parameters: parameters, dy: nil).output
            for b in 0..<batch {
                let row = { (y: Tensor<Double>, s: Int) in Array(y.scalars[(b * time + s) * features..<(b * time + s + 1) * features]) }
                // Before t, bit for bit: a later key's weight is an exact 0, and its value adds exactly nothing.
                for s in 0..<t { #expect(row(z, s) == row(y, s), "sample \(b), position \(s) changed by position \(t)") }
                #expect(row(z, t) != row(y, t), "sample \(b), position \(t) did not see its own input")
            }
        }
    }

    @Test(
        "The attention weights: each row sums to 1, nonnegative, and 0 above the diagonal, kept or recomputed",
        arguments: [(1, 1), (5, 2), (8, 4)].flatMap { size in [AttentionPath.full, .tiled(tile: 3)].map { (size.0, size.1, $0) } })
    func attentionWeights(time: Int, heads: Int, path: AttentionPath) throws {
        var g = SeededGenerator(seed: 5)
        var layer = try CausalSelfAttention<Float>(time: time, features: 8, heads: heads, path: path)
        let parameters: [Float] = randomScalars(layer.parameterCount, using: &g)
        _ = runLayer(&layer, x: Tensor<Float>.random([3, time, 8], using: &g), parameters: parameters, dy: nil)
        let att = layer.attentionWeights
        #expect(att.shape == [3, heads, time, time])
        for row in 0..<3 * heads * time {
            let t = row % time, weights = att.scalars[row * time..<(row + 1) * time]
            // time terms of at most 1, each within an ulp: the sum within time ulps of 1.
            expectClose(weights.reduce(0, +), 1, tolerance: Float(time) * Float.ulpOfOne)
            #expect(weights.allSatisfy { $0 >= 0 })
            #expect(weights.dropFirst(t + 1).allSatisfy { $0 == 0 }, "row \(row): \(Array(weights))")
        }
    }

    // MARK: The layer's buffers

    @Test("Backward adds into the gradient buffer; dx only when asked", arguments: [AttentionPath.full, .tiled(tile: 2)])
    func accumulates(path: AttentionPath) throws {
        var g = SeededGenerator(seed: 4)
        var h = LayerHarness(try CausalSelfAttention<Double>(time: 3, features: 4, heads: 2, path: path), seed: 2)
        let x = Tensor<Double>.random([2, 3, 4], using: &g), dy = Tensor<Double>.random([2, 3, 4], using: &g)
        _ = h.forward(x)
        h.backward(x, dy, inputGradient: true)
        let once = h.gradients, dx = h.layer.inputGradient
        h.backward(x, dy, inputGradient: false)
        expectClose(h.gradients, once.map { 2 * $0 }, tolerance: 1e-15)
        #expect(h.layer.inputGradient == dx)
    }

    @Test("Caches are sized on the first batch and reused after: no buffer is reallocated", arguments: [AttentionPath.full, .tiled(tile: 2)])
    func cachesReused(path: AttentionPath) throws {
        var g = SeededGenerator(seed: 1)
        var h = LayerHarness(try CausalSelfAttention<Float>(time: 5, features: 6, heads: 3, path: path), seed: 3)
        func addresses() -> [UnsafeRawPointer?] {
            let mirror = Mirror(reflecting: h.layer.cache)
            return mirror.children.map { ($0.value as! Tensor<Float>).withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) } }
        }
        let x = Tensor<Float>.random([4, 5, 6], using: &g), dy = Tensor<Float>.random([4, 5, 6], using: &g)
        _ = h.forward(x)
        h.backward(x, dy, inputGradient: true)
        let first = addresses()
        #expect(first.count == 10)
        for _ in 0..<3 {
            _ = h.forward(x)
            h.backward(x, dy, inputGradient: true)
        }
        #expect(addresses() == first)
        // Each path sizes its own buffers and leaves the other's empty.
        let c = h.layer.cache
        if path == .full {
            #expect(c.attention.count == 4 * 3 * 25 && c.scoreGradient.count == 25 && c.logSumExp.count == 0 && c.tiles.count == 0)
        } else {
            #expect(c.attention.count == 0 && c.scoreGradient.count == 0 && c.logSumExp.count == 4 * 3 * 5)
            #expect(c.tiles.count == AttentionTiles(tile: 2, time: 5).count)
        }
    }

    @Test("Attention maps read the tiled path's weights, recomputed: the full path's maps, within rounding")
    func attentionMapsOnTheTiledPath() throws {
        // Embedding(5→4) → attention (2 heads, block 6) → Dense(4→5), the same parameters on both paths.
        func network(_ path: AttentionPath) throws -> Network<Double> {
            var network = try Network<Double>(
                [
                    try Embedding<Double>(vocabulary: 5, features: 4, time: 6),
                    try CausalSelfAttention<Double>(time: 6, features: 4, heads: 2, path: path),
                    try Dense<Double>(4, 5, activation: .identity, time: 6),
                ], loss: .sequenceCrossEntropy)
            network.initialize(seed: 3)
            var g = SeededGenerator(seed: 3)
            Self.sharpen(&network, using: &g)
            return network
        }
        var full = try network(.full), tiled = try network(.tiled(tile: 4))
        for line in [[1, 2, 3], [4, 3, 2, 1, 4, 3, 2]] {  // four of the six positions; cropped to the block
            let expected = try full.attentionMaps(line: line), maps = try tiled.attentionMaps(line: line)
            #expect(maps.tokens == expected.tokens && maps.blocks.map(\.name) == expected.blocks.map(\.name))
            for (block, wanted) in zip(maps.blocks, expected.blocks) {
                // Weights of at most 1: e^(s - lse) against the full path's e^(s - max)/Σ, a few ulps apart.
                expectClose(Array(block.heads.joined().joined()), Array(wanted.heads.joined().joined()), tolerance: 1e-15)
            }
        }
    }

    @Test("The memory estimate: the full path's weights grow with time², the tiled path's caches with time")
    func cacheCount() throws {
        // Time 3, 8 features, 2 heads: [q | k | v] and its gradient, the heads' sums and theirs, 8·3·8 = 192.
        // Full: the weights 2·3² and the score gradient 3²: 27 + 192 = 219.
        #expect(try CausalSelfAttention<Float>(time: 3, features: 8, heads: 2, path: .full).cacheCount == 219)
        // Tiled, tiles of 2: the log-sum-exps 2·3; the tiles 2·2² + 2 (the scores with their rescale
        // column, the gradient), 2 + 2 (maxima, sums), 3 (the row sums D): 6 + 17 + 192 = 215.
        #expect(try CausalSelfAttention<Float>(time: 3, features: 8, heads: 2, path: .tiled(tile: 2)).cacheCount == 215)
        // nanoGPT's size, per sample: full 256²·7 + 8·256·384 = 1,245,184; tiled (64) 6·256 + 8,640 + 786,432 = 796,608.
        let full = try CausalSelfAttention<Float>(time: 256, features: 384, heads: 6, path: .full)
        let tiled = try CausalSelfAttention<Float>(time: 256, features: 384, heads: 6)
        #expect(tiled.path == .tiled(tile: 64) && full.cacheCount == 1_245_184 && tiled.cacheCount == 796_608)
    }

    @Test("The path: measured (full below AttentionPath.tiledFromTime, tiled from it), kept by conversion; a tile below 1 refused")
    func pathChoice() throws {
        let from = AttentionPath.tiledFromTime
        #expect(try CausalSelfAttention<Float>(time: from - 1, features: 8, heads: 2).path == .full)
        #expect(try CausalSelfAttention<Float>(time: from, features: 8, heads: 2).path == .tiled(tile: AttentionPath.defaultTile))
        let layer = try CausalSelfAttention<Float>(time: 4, features: 8, heads: 2, path: .tiled(tile: 3))
        #expect((layer.converted(to: Double.self) as! CausalSelfAttention<Double>).path == .tiled(tile: 3))
        #expect("\(layer)" == "CausalSelfAttention(8, 2 heads, time 4)" && "\(layer.path)" == "tiled (3)")
        #expect(
            message { () throws(NetworkError) in try CausalSelfAttention<Float>(time: 4, features: 8, heads: 2, path: .tiled(tile: 0)) }
                == "CausalSelfAttention(8, 2 heads, time 4): a tile must be at least 1 row, got 0")
    }

    // MARK: The layer's declarations

    @Test("nanoGPT's parameter names, nn.Linear's shapes and layout (no permutation), in order")
    func parameterLayout() throws {
        let layer = try CausalSelfAttention<Float>(time: 16, features: 64, heads: 4)
        #expect(layer.parameterShapes.map(\.name) == ["c_attn.weight", "c_attn.bias", "c_proj.weight", "c_proj.bias"])
        #expect(layer.parameterShapes.map(\.shape) == [[192, 64], [192], [64, 64], [64]])
        #expect(layer.parameterShapes.allSatisfy { layer.pytorchOrder(of: $0.name) == nil })
        #expect(layer.parameterCount == 4 * 64 * 64 + 4 * 64 && layer.headSize == 16)
        #expect(layer.inputShape == [16, 64] && layer.outputShape == [16, 64])
        #expect("\(layer)" == "CausalSelfAttention(64, 4 heads, time 16)")
        #expect("\(try CausalSelfAttention<Float>(time: 3, features: 5, heads: 1))" == "CausalSelfAttention(5, 1 head, time 3)")
        let network = try Network<Float>([try PositionEmbedding<Float>(time: 16, features: 64), layer], loss: .halfSquaredError)
        #expect(network.parameterTensors.map(\.name).suffix(2) == ["layers.1.c_proj.weight", "layers.1.c_proj.bias"])
        #expect(network.parameterTensors.allSatisfy { $0.pytorchOrder == nil })
    }

    @Test("nanoGPT's initialization: every weight N(0, 0.02²), every bias zero")
    func initialization() throws {
        let layer = try CausalSelfAttention<Double>(time: 2, features: 48, heads: 4)
        let p = LayerHarness(layer, seed: 1).parameters, at = AttentionParameters(features: 48)
        let weights = Array(p[at.attentionWeight..<at.attentionBias] + p[at.projectionWeight..<at.projectionBias])
        let mean = weights.reduce(0, +) / Double(weights.count)
        let deviation = (weights.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(weights.count)).squareRoot()
        // 9,216 draws: the sample deviation within 2% of 0.02 and the mean within 5 standard errors of 0.
        expectClose(deviation, 0.02, tolerance: 0.0004)
        expectClose(mean, 0, tolerance: 5 * 0.02 / Double(weights.count).squareRoot())
        #expect(p[at.attentionBias..<at.projectionWeight].allSatisfy { $0 == 0 } && p[at.projectionBias...].allSatisfy { $0 == 0 })
        #expect(LayerHarness(layer, seed: 1).parameters == p && LayerHarness(layer, seed: 2).parameters != p)
    }

    @Test("Sizes below 1, features not a multiple of heads, and counts past what can be held are refused")
    func badSizes() throws {
        #expect(
            message { () throws(NetworkError) in try CausalSelfAttention<Float>(time: 4, features: 6, heads: 4) }
                == "CausalSelfAttention(6, 4 heads, time 4): features (6) must be a multiple of heads (4): each head takes features / heads of them")
        #expect(
            message { () throws(NetworkError) in try CausalSelfAttention<Float>(time: 0, features: 6, heads: 2) }
                == "CausalSelfAttention(6, 2 heads, time 0): time, features and heads must be at least 1, got 0, 6 and 2")
        #expect(throws: NetworkError.self) { try CausalSelfAttention<Float>(time: 3, features: 0, heads: 1) }
        #expect(throws: NetworkError.self) { try CausalSelfAttention<Float>(time: 3, features: 4, heads: 0) }
        #expect(message { () throws(NetworkError) in try CausalSelfAttention<Float>(time: 1 << 20, features: 2, heads: 2) }.contains("can be held"))
        #expect(message { () throws(NetworkError) in try CausalSelfAttention<Float>(time: 1, features: 1 << 21, heads: 1) }.contains("can be held"))
    }

    // MARK: Whole networks, gradient-checked

    /// Redraws every attention tensor of `network` from U(±0.6): nanoGPT's N(0, 0.02²) leaves the
    /// attention all but uniform, where the score gradients are too small for a check to see a bug.
    static func sharpen(_ network: inout Network<Double>, using g: inout SeededGenerator) {
        for tensor in network.parameterTensors where tensor.tensor.hasPrefix("c_") || tensor.tensor.contains(".c_") {
            for i in tensor.range { network.parameters[i] = g.uniform(-0.6, 0.6) }
        }
    }

    /// `Embedding(vocabulary→features) → PositionEmbedding → attention → Dense(features→vocabulary,
    /// identity, per position)` with ``Loss/sequenceCrossEntropy``, a batch of tokens and targets
    /// with padding; `attention` is the layer to place (the real one, or one with a planted bug).
    static func sequenceCase(
        seed: UInt64, batch: Int, time: Int, features: Int, vocabulary: Int, attention: any Layer<Double>
    ) throws -> (Network<Double>, Tensor<Double>, Tensor<Double>) {
        var g = SeededGenerator(seed: seed)
        let layers: [any Layer<Double>] = [
            try Embedding<Double>(vocabulary: vocabulary, features: features, time: time),
            try PositionEmbedding<Double>(time: time, features: features), attention,
            try Dense<Double>(features, vocabulary, activation: .identity, time: time),
        ]
        var network = try Network<Double>(layers, loss: .sequenceCrossEntropy)
        network.initialize(seed: seed)
        sharpen(&network, using: &g)
        let x = SequenceNetworkGradientCheckTests.randomTokens(batch: batch, time: time, vocabulary: vocabulary, using: &g)
        let t = SequenceNetworkGradientCheckTests.randomTargets(batch: batch, time: time, vocabulary: vocabulary, using: &g)
        return (network, x, t)
    }

    @Test(
        "Sequence networks pass the gradient check: Embedding → PositionEmbedding → attention → Dense, padding in the targets",
        arguments: [(1, 6, 1), (2, 6, 2), (3, 6, 3), (4, 6, 6), (5, 4, 2), (6, 8, 4)].flatMap { size in
            [AttentionPath.full, .tiled(tile: 2)].map { (size.0, size.1, size.2, $0) }
        })
    func sequenceNetworks(seed: Int, features: Int, heads: Int, path: AttentionPath) throws {
        var g = SeededGenerator(seed: UInt64(seed))
        let (batch, time, vocabulary) = (2 + g.index(below: 2), 2 + g.index(below: 5), 3 + g.index(below: 4))
        let attention = try CausalSelfAttention<Double>(time: time, features: features, heads: heads, path: path)
        let (network, x, t) = try Self.sequenceCase(
            seed: UInt64(seed), batch: batch, time: time, features: features, vocabulary: vocabulary, attention: attention)
        let report = try GradientCheck().run(on: network, inputs: x, targets: t)
        #expect(report.passed, "\(network): \(report)")
        #expect(report.tensors.map(\.checked).reduce(0, +) == network.parameterCount)
    }

    @Test(
        "Continuous-input networks pass the gradient check, every parameter and input (central differences, Double)",
        arguments: ["attention", "attention, one position", "attention → attention", "PositionEmbedding → attention, 3 heads"],
        [AttentionPath.full, .tiled(tile: 2)])
    func continuousNetworks(_ name: String, path: AttentionPath) throws {
        let layers: [any Layer<Double>]
        switch name {
        case "attention": layers = [try CausalSelfAttention<Double>(time: 4, features: 4, heads: 2, path: path)]
        case "attention, one position": layers = [try CausalSelfAttention<Double>(time: 1, features: 4, heads: 2, path: path)]
        case "attention → attention":
            layers = [
                try CausalSelfAttention<Double>(time: 5, features: 4, heads: 1, path: path),
                try CausalSelfAttention<Double>(time: 5, features: 4, heads: 4, path: path),
            ]
        default:
            layers = [
                try PositionEmbedding<Double>(time: 3, features: 6), try CausalSelfAttention<Double>(time: 3, features: 6, heads: 3, path: path),
            ]
        }
        var network = try Network<Double>(layers, loss: .halfSquaredError)
        network.initialize(seed: 11)
        var g = SeededGenerator(seed: 11)
        Self.sharpen(&network, using: &g)
        // Inputs (batch, time, features), targets (batch, time·features).
        let x = Tensor<Double>.random([3] + network.inputShape, using: &g)
        let t = randomTargets(batch: 3, outputs: network.outputCount, loss: .halfSquaredError, using: &g)
        let report = try GradientCheck(checkInputs: true).run(on: network, inputs: x, targets: t)
        #expect(report.passed, "\(report)")
        #expect(report.tensors.map(\.checked).reduce(0, +) == network.parameterCount + x.count)
    }

    /// Each planted bug on each path it can be planted in: the heads' backward bugs on both, the
    /// tiled path's own on tiles of 2 (time 5: two whole tiles and one of a row).
    static let plantedCases: [(AttentionBug, AttentionPath)] = AttentionBug.allCases.flatMap { bug in
        ((bug.isTiledOnly ? [] : [AttentionPath.full]) + [.tiled(tile: 2)]).map { (bug, $0) }
    }

    @Test("A bug planted in attention is caught, and the report names its tensors", arguments: plantedCases)
    func plantedBug(_ bug: AttentionBug, path: AttentionPath) throws {
        // Layer 2 of Embedding → PositionEmbedding → attention (6 features, 2 heads of 3) → Dense.
        let attention = PlantedAttention(layer: try CausalSelfAttention<Double>(time: 5, features: 6, heads: 2, path: path), bug: bug)
        let (network, x, t) = try Self.sequenceCase(seed: 7, batch: 3, time: 5, features: 6, vocabulary: 5, attention: attention)
        let report = try GradientCheck(worstCount: network.parameterCount).run(on: network, inputs: x, targets: t)
        #expect(!report.passed, "\(bug) on the \(path) path went unnoticed: \(report)")
        // A bug in the scores' gradient: c_attn fails, and every tensor before it, which it hands a
        // wrong gradient; c_proj (before the scores, in backward's order) and the layer after stay
        // clean. A bug in forward's heads' sums: c_proj's weight too, whose gradient backward forms
        // from the right sums; the layer after is handed the wrong output and differentiates it right.
        let before = ["layers.0.weight", "layers.1.weight", "layers.2.c_attn.weight", "layers.2.c_attn.bias"]
        #expect(report.failingTensors.map(\.name) == before + (bug == .rescaleMissing ? ["layers.2.c_proj.weight"] : []), "\(report)")
        // Within c_attn.weight, the query's and the key's rows (0..<12) alone when the values' gradient
        // is right; the tiled path's own bugs change the weights themselves, and reach the values' rows too.
        let failingRows = Set(report.worst.filter { $0.tensor == "c_attn.weight" && !$0.passed }.map { $0.position[0] })
        #expect(!failingRows.isEmpty, "\(report)")
        if bug.isTiledOnly {
            #expect(failingRows.contains { $0 >= 12 }, "rows \(failingRows.sorted())")
        } else {
            #expect(failingRows.allSatisfy { $0 < 12 }, "rows \(failingRows.sorted())")
        }
    }

    @Test(
        "Each planted bug is wrong only where it should be: the real layer's gradients pass on the same case",
        arguments: [AttentionPath.full, .tiled(tile: 2)])
    func plantedCaseIsClean(path: AttentionPath) throws {
        let attention = try CausalSelfAttention<Double>(time: 5, features: 6, heads: 2, path: path)
        let (network, x, t) = try Self.sequenceCase(seed: 7, batch: 3, time: 5, features: 6, vocabulary: 5, attention: attention)
        #expect(try GradientCheck().run(on: network, inputs: x, targets: t).passed)
    }

    @Test("A bug planted in the tiled forward's online softmax is caught by the naive loops too", arguments: [2, 3])
    func plantedForwardAgainstNaive(tile: Int) throws {
        var g = SeededGenerator(seed: 3)
        let (time, features, heads) = (7, 6, 2)
        var planted = PlantedAttention(
            layer: try CausalSelfAttention<Double>(time: time, features: features, heads: heads, path: .tiled(tile: tile)), bug: .rescaleMissing)
        let parameters: [Double] = (0..<planted.parameterCount).map { _ in g.uniform(-0.6, 0.6) }
        let x = Tensor<Double>.random([2, time, features], using: &g)
        let y = runLayer(&planted, x: x, parameters: parameters, dy: nil).output
        let p = try Self.tensors(parameters, features: features)
        let naive = Naive.causalSelfAttentionForward(
            x, attentionWeight: p.attentionWeight, attentionBias: p.attentionBias, projectionWeight: p.projectionWeight,
            projectionBias: p.projectionBias, heads: heads
        ).output
        // The real layer agrees with the naive loops within 1e-14 (tiledMatchesNaive); the planted one is off by far more.
        let gap = zip(y.scalars, naive.scalars).map { abs($0 - $1) }.max()!
        #expect(gap > 1e-3, "the missing rescale moved the output by only \(gap)")
        expectClose(planted.layer.output.scalars, naive.scalars, tolerance: 1e-14)
    }

    // MARK: A small GPT at nanoGPT's block

    /// `Embedding(10→8) → PositionEmbedding(256) → 2 × (Residual[LayerNorm, attention (2 heads)],
    /// Residual[LayerNorm, Dense(8→32), GELU, Dense(32→8)]) → LayerNorm → Dense(8→10)`, every
    /// layer at each of 256 positions, with ``Loss/sequenceCrossEntropy``; its attention tensors
    /// sharpened, a batch of 2 rows of tokens and targets with padding.
    static func smallGPT(path: AttentionPath) throws -> (Network<Double>, Tensor<Double>, Tensor<Double>) {
        let (time, features, vocabulary) = (256, 8, 10), sequence = [256, 8]
        var layers: [any Layer<Double>] = [
            try Embedding<Double>(vocabulary: vocabulary, features: features, time: time),
            try PositionEmbedding<Double>(time: time, features: features),
        ]
        for _ in 0..<2 {
            layers.append(
                try Residual<Double>([
                    try LayerNorm<Double>(shape: sequence), try CausalSelfAttention<Double>(time: time, features: features, heads: 2, path: path),
                ]))
            layers.append(
                try Residual<Double>([
                    try LayerNorm<Double>(shape: sequence), try Dense<Double>(features, 4 * features, activation: .identity, time: time),
                    try GELU<Double>(shape: [time, 4 * features]), try Dense<Double>(4 * features, features, activation: .identity, time: time),
                ]))
        }
        layers += [try LayerNorm<Double>(shape: sequence), try Dense<Double>(features, vocabulary, activation: .identity, time: time)]
        var network = try Network<Double>(layers, loss: .sequenceCrossEntropy)
        network.initialize(seed: 5)
        var g = SeededGenerator(seed: 5)
        sharpen(&network, using: &g)
        let x = SequenceNetworkGradientCheckTests.randomTokens(batch: 2, time: time, vocabulary: vocabulary, using: &g)
        let t = SequenceNetworkGradientCheckTests.randomTargets(batch: 2, time: time, vocabulary: vocabulary, using: &g)
        return (network, x, t)
    }

    @Test(
        "A small GPT at block 256 passes the gradient check on each path: 2 blocks of 2 heads over 8 features, vocabulary 10",
        arguments: [AttentionPath.full, .tiled(tile: 64), .tiled(tile: 48)])
    func smallGPTAtBlock256(path: AttentionPath) throws {
        let (network, x, t) = try Self.smallGPT(path: path)
        #expect(network.attentionLayers.map(\.layer.path) == [path, path])
        // 12 entries of each of the 31 tensors, central differences in Double (PyTorch gradcheck's
        // tolerances): a check of every entry would take 2 forward passes for each of 4,156.
        let report = try GradientCheck(samplesPerTensor: 12).run(on: network, inputs: x, targets: t)
        #expect(report.passed, "\(report)")
        #expect(report.tensors.allSatisfy { $0.checked == min(12, $0.total) })
    }

    @Test("The small GPT at block 256: the tiled path's loss and gradients are the full path's")
    func smallGPTPathsAgree() throws {
        var (full, x, t) = try Self.smallGPT(path: .full)
        var (tiled, _, _) = try Self.smallGPT(path: .tiled(tile: 64))
        #expect(tiled.parameters == full.parameters)
        let lossFull = try full.lossAndGradients(x, targets: t), lossTiled = try tiled.lossAndGradients(x, targets: t)
        // The same sums in other orders through 2 blocks: 1e-15 relative on the loss, 2e-15 on gradients up to 0.06.
        expectClose(lossTiled, lossFull, tolerance: 1e-13)
        expectClose(tiled.gradients, full.gradients, tolerance: 1e-13)
    }
}
