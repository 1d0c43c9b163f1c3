import Foundation
import Testing

@testable import NeuronCore

@Suite("The reference table of one unit at one position of a sequence")
struct SequenceUnitExplanationTests {
    @Test("§1's neuron at every position of a per-position dense layer: each position's table is §1's, the buffer twice its share")
    func referenceAtEveryPosition() throws {
        var network = try Network<Double>([try Dense<Double>(1, 1, activation: .tanh, time: 2)], loss: .halfSquaredError)
        network.parameters = [0.5, 0.6]
        for position in 0..<2 {
            let e = try UnitExplanation(network: network, sample: [0.4, 0.4], target: [0.7, 0.7], layer: 0, unit: 0, position: position)
            #expect(e.position == position && e.inputs == [0.4] && e.weights == [0.5] && e.bias == 0.6 && e.target == 0.7 && e.isOutput)
            expectClose(e.net, 0.8, tolerance: 1e-15)
            expectClose(e.output, 0.6640367702678491, tolerance: 1e-15)
            // The loss is the sample's, both positions: twice §1's.
            expectClose(e.loss, 2 * 0.0006466769463837285, tolerance: 1e-17)
            expectClose(try #require(e.gradients.output), -0.035963229732150825, tolerance: 1e-16)
            expectClose(e.gradients.net, -0.020105429430100793, tolerance: 1e-16)
            expectClose(e.gradients.bias, -0.020105429430100793, tolerance: 1e-16)
            expectClose(e.gradients.weights, [-0.008042171772040318], tolerance: 1e-16)
            expectClose(e.gradients.inputs, [-0.010052714715050396], tolerance: 1e-16)
            // §2's forward differences, tiny 1e-4: the other position's term is a constant of the nudged
            // loss, which costs the difference about ε·L / tiny ≈ 1e-15.
            expectClose(try #require(e.faux.output), -0.03591322973214633, tolerance: 1e-11)
            expectClose(e.faux.net, -0.020088469318535994, tolerance: 1e-11)
            expectClose(e.faux.bias, -0.020088469318535994, tolerance: 1e-11)
            expectClose(e.faux.weights, [-0.008039457952816777], tolerance: 1e-11)
            expectClose(e.faux.inputs, [-0.01004847442496147], tolerance: 1e-11)
            // The network's own backward pass: the position's share is §1's, its buffer both positions'.
            let share = try #require(e.backpropagatedAtPosition)
            expectClose(share.net, -0.020105429430100793, tolerance: 1e-16)
            expectClose(share.weights, [-0.008042171772040318], tolerance: 1e-16)
            expectClose(e.backpropagatedWeights, [2 * -0.008042171772040318], tolerance: 1e-16)
            expectClose(e.backpropagatedBias, 2 * -0.020105429430100793, tolerance: 1e-16)
        }
    }

    /// `Network[RNN(1→1, time 2)]` under half the squared error: w_ih = w_hh = 0.5, b_ih = 0.6,
    /// b_hh = 0, h0 = 0, x = (0.4, 0.4), t = (0.7, 0.7). Position 0 is §1's neuron.
    private func tinyRecurrent(at position: Int) throws -> UnitExplanation {
        var network = try Network<Double>([try RNN<Double>(time: 2, inputs: 1, hidden: 1)], loss: .halfSquaredError)
        network.parameters = [0.5, 0.5, 0.6, 0, 0]  // weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0, h0
        return try UnitExplanation(
            network: network, sample: [0.4, 0.4], target: [0.7, 0.7], layer: 0, unit: 0, position: position,
            difference: try FiniteDifference(.central, tiny: 1e-6))
    }

    // Worked by hand, in this order, in Python 3 with math.tanh:
    //   net0 = 0.5*0.4 + 0.6 + 0.5*0.0 + 0.0;  h0 = tanh(net0)
    //   net1 = 0.5*0.4 + 0.6 + 0.5*h0 + 0.0;   h1 = tanh(net1)
    //   L = ((h0 - 0.7)**2 + (h1 - 0.7)**2) / 2
    //   dnet1 = (1 - h1*h1)*(h1 - 0.7)
    //   dh0 = (h0 - 0.7) + 0.5*dnet1          (the loss at 0, and the next step through w_hh)
    //   dnet0 = (1 - h0*h0)*dh0
    @Test("An RNN unit worked by hand: position 0 is §1's neuron, whose output also reaches position 1 through w_hh")
    func recurrentByHand() throws {
        let at0 = try tinyRecurrent(at: 0), at1 = try tinyRecurrent(at: 1)
        #expect(at0.weightNames == ["w_ih[0]", "w_hh[0]"] && at0.inputNames == ["x[0]", "h[0]"] && at0.biasNames == ["b_ih", "b_hh"])
        #expect(at0.inputs == [0.4, 0] && at0.weights == [0.5, 0.5] && at0.biases == [0.6, 0] && at0.bias == 0.6)
        expectClose(at0.net, 0.8, tolerance: 1e-15)
        expectClose(at0.output, 0.6640367702678491, tolerance: 1e-15)
        expectClose(at1.inputs, [0.4, 0.6640367702678491], tolerance: 1e-15)
        expectClose(at1.net, 1.1320183851339247, tolerance: 1e-15)
        expectClose(at1.output, 0.8117089200120164, tolerance: 1e-15)
        for e in [at0, at1] { expectClose(e.loss, 0.0068861183515092775, tolerance: 1e-17) }

        // The last position: the loss alone; nothing comes from a next step.
        #expect(at1.outputGradientFromNextStep == 0)
        expectClose(try #require(at1.gradients.output), 0.11170892001201649, tolerance: 1e-15)
        expectClose(at1.localNet, 0.34112862917292586, tolerance: 1e-15)
        expectClose(at1.gradients.net, 0.03810711075008721, tolerance: 1e-16)
        expectClose(at1.gradients.weights, [0.015242844300034884, 0.02530452274672714], tolerance: 1e-16)
        expectClose(at1.gradients.inputs, [0.019053555375043604, 0.019053555375043604], tolerance: 1e-16)
        // Position 0: the loss there plus 0.5·dnet1 through the next step.
        expectClose(try #require(at0.outputGradientFromNextStep), 0.019053555375043604, tolerance: 1e-16)
        expectClose(try #require(at0.gradients.output), -0.016909674357107222, tolerance: 1e-16)
        expectClose(at0.localNet, 0.5590551677322437, tolerance: 1e-15)
        expectClose(at0.gradients.net, -0.009453440834010198, tolerance: 1e-16)
        expectClose(at0.gradients.weights, [-0.0037813763336040796, 0], tolerance: 1e-16)
        expectClose(at0.gradients.inputs, [-0.004726720417005099, -0.004726720417005099], tolerance: 1e-16)
        // The buffer sums the two positions' shares: dwih = 0.4*dnet0 + 0.4*dnet1, dwhh = 0*dnet0 + h0*dnet1.
        expectClose(at0.backpropagatedWeights, [0.011461467966430805, 0.02530452274672714], tolerance: 1e-16)
        expectClose(at0.backpropagatedBiases, [0.02865366991607701, 0.02865366991607701], tolerance: 1e-16)
        // Central differences (tiny 1e-6) err by O(tiny²) and by rounding, ε·L / tiny ≈ 1e-17 here.
        for e in [at0, at1] {
            for (quantity, c) in e.comparisons {
                #expect(c.absoluteError <= 1e-10, "position \(e.position!) \(quantity): \(c.analytic) vs \(c.faux)")
            }
        }
    }

    // MARK: Against the whole network

    /// Embedding(6→3) → `recurrent` (3→4, an RNN by default) → Dense(4→6, identity, per position)
    /// under the sequence loss, seeded, with a learned h0 off zero; five tokens, token 0 twice, the
    /// last target padding.
    private func recurrentTextNetwork(
        _ recurrent: (any Layer<Double>)? = nil, seed: UInt64 = 7
    ) throws -> (network: Network<Double>, sample: [Double], target: [Double]) {
        var network = try Network<Double>(
            [
                try Embedding<Double>(vocabulary: 6, features: 3, time: 5), try recurrent ?? RNN<Double>(time: 5, inputs: 3, hidden: 4),
                try Dense<Double>(4, 6, activation: .identity, time: 5),
            ], loss: .sequenceCrossEntropy)
        network.initialize(seed: seed)
        let h0 = network.parameterTensors.first { $0.tensor == "h0" }!
        network.parameters.replaceSubrange(h0.range, with: [0.3, -0.2, 0.1, 0.5])
        return (network, [0, 2, 3, 1, 0], [2, 3, 1, 0, -1])
    }

    /// Bengio's MLP: Embedding(6→3) → ContextWindow(2) → Dense(6→4, tanh, per position) → Dense(4→6, identity, per position).
    private func contextTextNetwork() throws -> (network: Network<Double>, sample: [Double], target: [Double]) {
        var network = try Network<Double>(
            [
                try Embedding<Double>(vocabulary: 6, features: 3, time: 5), try ContextWindow<Double>(time: 5, features: 3, size: 2),
                try Dense<Double>(6, 4, activation: .tanh, time: 5), try Dense<Double>(4, 6, activation: .identity, time: 5),
            ], loss: .sequenceCrossEntropy)
        network.initialize(seed: 8)
        return (network, [0, 2, 3, 1, 0], [2, 3, 1, 0, -1])
    }

    /// ∂L/∂parameters[index] of the whole network on the sample, by central differences (tiny 1e-6):
    /// truncation O(tiny²) ≈ 1e-12, rounding ε·L / tiny ≈ 1e-10; an independent oracle for the sum
    /// of a parameter's shares over positions.
    private func wholeNetworkDerivative(_ network: Network<Double>, _ sample: [Double], _ target: [Double], _ index: Int) throws -> Double {
        var n = network
        let x = try Tensor(shape: [1, sample.count], scalars: sample), t = try Tensor(shape: [1, target.count], scalars: target)
        let saved = n.parameters[index], tiny = 1e-6
        n.parameters[index] = saved + tiny
        let up = try n.loss(x, targets: t)
        n.parameters[index] = saved - tiny
        let down = try n.loss(x, targets: t)
        return (up - down) / (2 * tiny)
    }

    @Test("Every RNN unit at every position: chain rule = the network's backward there ≈ faux; shares add up to the whole network's gradients")
    func recurrentAgainstWholeNetwork() throws {
        let (network, sample, target) = try recurrentTextNetwork()
        let central = try FiniteDifference<Double>(.central, tiny: 1e-6)
        func tensor(_ layer: Int, _ name: String) -> ParameterTensor { network.parameterTensors.first { $0.layer == layer && $0.tensor == name }! }
        let (wih, whh, bih, bhh, h0, table) = (
            tensor(1, "weight_ih_l0"), tensor(1, "weight_hh_l0"), tensor(1, "bias_ih_l0"), tensor(1, "bias_hh_l0"), tensor(1, "h0"),
            tensor(0, "weight")
        )
        func whole(_ index: Int) throws -> Double { try wholeNetworkDerivative(network, sample, target, index) }
        var h0Sums = [Double](repeating: 0, count: 4), tableSums = [Double](repeating: 0, count: 18)
        for unit in 0..<4 {
            var weightSums = [Double](repeating: 0, count: 7), biasSum = 0.0, networkSums = [Double](repeating: 0, count: 7)
            var buffer: [Double] = []
            for position in 0..<5 {
                let e = try UnitExplanation(
                    network: network, sample: sample, target: target, layer: 1, unit: unit, position: position, difference: central)
                #expect(e.position == position && !e.isOutput && e.target == nil)
                // Two routes to ∂L/∂net at P: (dy + W_hhᵀ·da_{P+1})·tanh'(net) here, the kernel's da there.
                let share = try #require(e.backpropagatedAtPosition)
                expectClose(e.gradients.net, share.net, tolerance: 1e-15)
                expectClose(e.gradients.weights, share.weights, tolerance: 1e-15)
                for (quantity, c) in e.comparisons {
                    #expect(
                        c.absoluteError <= 1e-9 + 1e-6 * abs(c.analytic), "unit \(unit) position \(position) \(quantity): \(c.analytic) vs \(c.faux)")
                }
                for j in 0..<7 {
                    weightSums[j] += e.gradients.weights[j]
                    networkSums[j] += share.weights[j]
                }
                biasSum += e.gradients.bias
                for j in 0..<3 { tableSums[Int(sample[position]) * 3 + j] += e.gradients.inputs[j] }
                if position == 0 { for k in 0..<4 { h0Sums[k] += e.gradients.inputs[3 + k] } }
                buffer = e.backpropagatedWeights
            }
            // The buffer is the sum of the positions' shares.
            expectClose(networkSums, buffer, tolerance: 1e-15)
            // Each weight's and bias's gradient is the sum of its shares: the whole network nudged agrees.
            for j in 0..<3 { expectClose(weightSums[j], try whole(wih.offset + unit * 3 + j), tolerance: 1e-8) }
            for k in 0..<4 { expectClose(weightSums[3 + k], try whole(whh.offset + unit * 4 + k), tolerance: 1e-8) }
            expectClose(biasSum, try whole(bih.offset + unit), tolerance: 1e-8)
            expectClose(biasSum, try whole(bhh.offset + unit), tolerance: 1e-8)
        }
        // At position 0 the state input h[k] is h0[k]: its gradient sums that row over the units.
        for k in 0..<4 { expectClose(h0Sums[k], try whole(h0.offset + k), tolerance: 1e-8) }
        // The input x at P is the embedding's row of the token there: a row's gradient sums every
        // unit's x rows at each position of its token (token 0 twice, tokens 4 and 5 never: 0).
        for index in 0..<18 { expectClose(tableSums[index], try whole(table.offset + index), tolerance: 1e-8) }
    }

    @Test("Per-position dense units, hidden (tanh, after a context window) and output (logits): chain rule = backward ≈ faux ≈ the whole network")
    func denseAgainstWholeNetwork() throws {
        let central = try FiniteDifference<Double>(.central, tiny: 1e-6)
        for (network, sample, target) in [try contextTextNetwork(), try recurrentTextNetwork()] {
            let layer = network.layers.count - (network.layers.count == 4 ? 2 : 1)
            for candidate in [layer, network.layers.count - 1] {
                let dense = network.layers[candidate] as! Dense<Double>
                let weight = network.parameterTensors.first { $0.layer == candidate && $0.tensor == "weight" }!
                let bias = network.parameterTensors.first { $0.layer == candidate && $0.tensor == "bias" }!
                for unit in 0..<dense.outputs {
                    var weightSums = [Double](repeating: 0, count: dense.inputs), biasSum = 0.0
                    for position in 0..<5 {
                        let e = try UnitExplanation(
                            network: network, sample: sample, target: target, layer: candidate, unit: unit, position: position, difference: central)
                        let share = try #require(e.backpropagatedAtPosition)
                        expectClose(e.gradients.net, share.net, tolerance: 1e-15)
                        expectClose(e.gradients.weights, share.weights, tolerance: 1e-15)
                        #expect(e.faux.output != nil && e.outputGradientFromNextStep == nil)
                        for (quantity, c) in e.comparisons {
                            #expect(
                                c.absoluteError <= 1e-9 + 1e-6 * abs(c.analytic),
                                "layer \(candidate) unit \(unit) position \(position) \(quantity): \(c.analytic) vs \(c.faux)")
                        }
                        for j in 0..<dense.inputs { weightSums[j] += e.gradients.weights[j] }
                        biasSum += e.gradients.bias
                        if e.isOutput {
                            // A class index per position: the unit's target is 1 when it is this unit; padding has none.
                            #expect(e.targetClass == Int(target[position]))
                            #expect(e.target == (target[position] < 0 ? nil : target[position] == Double(unit) ? 1 : 0))
                            if position == 4 { #expect(e.gradients.net == 0 && e.backpropagatedAtPosition?.net == 0) }
                        }
                    }
                    for j in 0..<dense.inputs {
                        expectClose(
                            weightSums[j], try wholeNetworkDerivative(network, sample, target, weight.offset + j * dense.outputs + unit),
                            tolerance: 1e-8)
                    }
                    expectClose(biasSum, try wholeNetworkDerivative(network, sample, target, bias.offset + unit), tolerance: 1e-8)
                }
            }
        }
    }

    @Test("A Float network is explained in Double with the same weights")
    func floatNetwork() throws {
        let (network, sample, target) = try recurrentTextNetwork()
        let float = network.converted(to: Float.self)
        let e = try UnitExplanation(network: float, sample: sample.map(Float.init), target: target.map(Float.init), layer: 1, unit: 2, position: 1)
        let wih = float.parameterTensors.first { $0.layer == 1 && $0.tensor == "weight_ih_l0" }!
        #expect(Array(e.weights.prefix(3)) == (0..<3).map { Double(float.parameters[wih.offset + 2 * 3 + $0]) })
        for (quantity, c) in e.comparisons { #expect(c.absoluteError <= 1e-7 + 1e-3 * abs(c.analytic), "\(quantity): \(c.analytic) vs \(c.faux)") }
    }

    // MARK: Positions and refusals

    @Test("Without a position: the last one the loss counts (the line's last character), else the last")
    func defaultPosition() throws {
        let (network, sample, target) = try recurrentTextNetwork()
        #expect(try UnitExplanation(network: network, sample: sample, target: target, layer: 1, unit: 0).position == 3)
        #expect(try UnitExplanation(network: network, sample: sample, target: [1, -1, -1, -1, -1], layer: 2, unit: 0).position == 0)
        #expect(try UnitExplanation(network: network, sample: sample, target: [-1, -1, -1, -1, -1], layer: 1, unit: 0).position == 4)
        var squared = try Network<Double>([try Dense<Double>(1, 1, activation: .tanh, time: 3)], loss: .halfSquaredError)
        squared.parameters = [0.5, 0.6]
        #expect(try UnitExplanation(network: squared, sample: [0.1, 0.2, 0.3], target: [0, 0, 0], layer: 0, unit: 0).position == 2)
        // A layer over features has no position.
        let features = try Network<Double>(features: 2, layers: [(2, .tanh)], loss: .halfSquaredError, seed: 1)
        #expect(try UnitExplanation(network: features, sample: [1, 2], target: [0, 0], layer: 0, unit: 1).position == nil)
    }

    @Test(
        "A layer without units, a GRU, or a position that does not fit is refused, saying why",
        arguments: [
            (0, 0, nil, "it has no units"), (1, 0, 5, "position 5 is out of range; it has positions 0 to 4"),
            (1, 4, 0, "unit 4 is out of range; it has units 0 to 3"), (2, 0, -1, "position -1 is out of range"),
        ] as [(Int, Int, Int?, String)])
    func refusals(layer: Int, unit: Int, position: Int?, message: String) throws {
        let (network, sample, target) = try recurrentTextNetwork()
        do {
            _ = try UnitExplanation(network: network, sample: sample, target: target, layer: layer, unit: unit, position: position)
            Issue.record("layer \(layer) unit \(unit) position \(String(describing: position)) was explained")
        } catch {
            #expect("\(error)".contains(message), "\(error)")
        }
    }

    @Test("A GRU, a context window, a position embedding, or a position of a layer over features is refused, saying why")
    func otherLayers() throws {
        let network = try Network<Double>(
            [
                try Embedding<Double>(vocabulary: 4, features: 2, time: 3), try PositionEmbedding<Double>(time: 3, features: 2),
                try ContextWindow<Double>(time: 3, features: 2, size: 2), try GRU<Double>(time: 3, inputs: 4, hidden: 2),
                try Dense<Double>(2, 4, activation: .identity, time: 3),
            ], loss: .sequenceCrossEntropy)
        for (layer, reason) in [
            (1, "PositionEmbedding(3×2): it has no units"), (2, "it has no units"),
            (3, "a GRU unit is three neurons"), (3, "GRUUnitExplanation explains it gate by gate"),
        ] {
            #expect(throws: NetworkError.self) { try UnitExplanation.check(layer: layer, unit: 0, of: network) }
            #expect(message { () throws(NetworkError) in try UnitExplanation.check(layer: layer, unit: 0, of: network) }.contains(reason))
        }
        #expect(UnitExplanation.units(of: network.layers[4]) == 4 && UnitExplanation.positions(of: network.layers[4]) == 3)
        #expect(UnitExplanation.units(of: network.layers[3]) == nil && UnitExplanation.positions(of: network.layers[0]) == nil)
        let features = try Network<Double>(features: 2, layers: [(2, .tanh)], loss: .halfSquaredError, seed: 1)
        #expect(
            message { () throws(NetworkError) in try UnitExplanation.check(layer: 0, unit: 0, position: 0, of: features) }
                .contains("position 0: a layer over features has no positions"))
    }

    // MARK: A GRU unit

    /// `Network[GRU(1→1, time 2)]` under half the squared error, a different number in every place
    /// so that a gate, a weight or a bias taken for another changes the result: W_ih = (0.5, -0.3,
    /// 0.8), W_hh = (0.2, 0.4, -0.6), b_ih = (0.1, 0.2, -0.1), b_hh = (0.05, -0.15, 0.3) (r, z, n),
    /// h0 = 0.25, x = (0.4, -0.7), t = (0.2, 0.5).
    private func tinyGRU(at position: Int) throws -> GRUUnitExplanation {
        var network = try Network<Double>([try GRU<Double>(time: 2, inputs: 1, hidden: 1)], loss: .halfSquaredError)
        network.parameters = [0.5, -0.3, 0.8, 0.2, 0.4, -0.6, 0.1, 0.2, -0.1, 0.05, -0.15, 0.3, 0.25]
        return try GRUUnitExplanation(
            network: network, sample: [0.4, -0.7], target: [0.2, 0.5], layer: 0, unit: 0, position: position,
            difference: try FiniteDifference(.central, tiny: 1e-6))
    }

    // Worked by hand, in this order, in Python 3 with math.tanh and sig(a) = 1/(1 + math.exp(-a)), at each position from h = h0:
    //   ar = (0.5*x + 0.1) + (0.2*h + 0.05);  r = sig(ar)
    //   az = (-0.3*x + 0.2) + (0.4*h - 0.15); z = sig(az)
    //   an = (0.8*x - 0.1) + r*(-0.6*h + 0.3); n = tanh(an)
    //   h' = (1 - z)*n + z*h;  L = Σ (h' - t)**2 / 2
    // and back: dn = dh*(1 - z), dz = dh*(h - n), dan = dn*(1 - n*n), dr = dan*(-0.6*h + 0.3),
    // dar = dr*r*(1 - r), daz = dz*z*(1 - z); at position 0, dh = (h'_0 - 0.2) + carry, the carry from
    // position 1 being z_1*dh_1 + 0.2*dar_1 + 0.4*daz_1 - 0.6*r_1*dan_1.
    @Test("A GRU unit worked by hand: each gate's sums, value and gradient at both positions, the state's gradient carried back a step")
    func gruByHand() throws {
        let at0 = try tinyGRU(at: 0), at1 = try tinyGRU(at: 1)
        #expect(at0.gates.map(\.name) == ["r", "z", "n"] && at0.previousState == [0.25] && at0.inputs == [0.4])
        #expect(at0.gates.map(\.inputWeights) == [[0.5], [-0.3], [0.8]] && at0.gates.map(\.hiddenWeights) == [[0.2], [0.4], [-0.6]])
        #expect(at0.gates.map(\.inputBias) == [0.1, 0.2, -0.1] && at0.gates.map(\.hiddenBias) == [0.05, -0.15, 0.3])
        let expected: [(sums: [(Double, Double)], preActivations: [Double], values: [Double], state: Double)] = [
            (
                [(0.30000000000000004, 0.1), (0.08000000000000002, -0.04999999999999999), (0.22000000000000006, 0.15)],
                [0.4, 0.030000000000000027, 0.30980314901686784], [0.598687660112452, 0.5074994375506203, 0.3002580038269096],
                0.27475209515233606
            ),
            (
                [
                    (-0.24999999999999997, 0.10495041903046722), (0.41000000000000003, -0.04009916193906557),
                    (-0.6599999999999999, 0.13514874290859835),
                ],
                [-0.14504958096953274, 0.36990083806093443, -0.5973178712040605], [0.46380104947281303, 0.5914350171950307, -0.5351382752800028],
                -0.05614075011726272
            ),
        ]
        for (e, want) in zip([at0, at1], expected) {
            for g in 0..<3 {
                expectClose(e.gates[g].inputSum, want.sums[g].0, tolerance: 1e-15)
                expectClose(e.gates[g].hiddenSum, want.sums[g].1, tolerance: 1e-15)
                expectClose(e.gates[g].preActivation, want.preActivations[g], tolerance: 1e-15)
                expectClose(e.gates[g].value, want.values[g], tolerance: 1e-15)
            }
            expectClose(e.state, want.state, tolerance: 1e-15)
            expectClose(e.loss, 0.15744020483532778, tolerance: 1e-16)
        }
        expectClose(at1.previousState, [0.27475209515233606], tolerance: 1e-15)
        func gradient(_ e: GRUUnitExplanation, _ quantity: String) throws -> Double {
            try #require(e.rows.first { $0.quantity == quantity }).gradient
        }

        // The last position: the loss alone; nothing comes from a next step.
        #expect(at1.stateGradientFromNextStep == 0)
        for (quantity, value) in [
            ("h", -0.5561407501172627), ("n", -0.22721963600880218), ("z", -0.4504130381249887), ("a_n", -0.16215007316882463),
            ("r", -0.02191437855130389), ("a_r", -0.005449878824667687), ("a_z", -0.10883764331659487),
        ] {
            expectClose(try gradient(at1, quantity), value, tolerance: 1e-16)
        }
        // Position 0: the loss there plus what position 1 sends back through its gates and directly through z.
        expectClose(at0.stateGradientFromLayer, 0.07475209515233605, tolerance: 1e-16)
        expectClose(at0.stateGradientFromNextStep, -0.3284229227353554, tolerance: 1e-16)
        for (quantity, value) in [
            ("h", -0.25367082758301934), ("n", -0.12493302526163665), ("z", 0.01274898942344271), ("a_n", -0.11366970475262582),
            ("r", -0.01705045571289387), ("a_r", -0.004096555204812798), ("a_z", 0.0031865303327614936),
            // W_hn's share is h_prev·r·dan (r scales n's hidden side); h_prev[0] adds the direct path z·dh.
            ("W_hn[0]", -0.017013162391005705), ("h_prev[0]", -0.08745091149082698),
        ] {
            expectClose(try gradient(at0, quantity), value, tolerance: 1e-16)
        }
        // Central differences (tiny 1e-6) err by O(tiny²) and by rounding, ε·L / tiny ≈ 1e-16 here.
        for e in [at0, at1] {
            for (quantity, c) in e.comparisons {
                #expect(c.absoluteError <= 1e-10, "position \(e.position) \(quantity): \(c.analytic) vs \(c.faux)")
            }
        }
    }

    /// ``recurrentTextNetwork(_:seed:)`` with a GRU(3→4), seed 9.
    private func gruTextNetwork() throws -> (network: Network<Double>, sample: [Double], target: [Double]) {
        try recurrentTextNetwork(try GRU<Double>(time: 5, inputs: 3, hidden: 4), seed: 9)
    }

    @Test("Every GRU unit at every position: chain rule = the network's backward there ≈ faux; shares add up to the whole network's gradients")
    func gruAgainstWholeNetwork() throws {
        let (network, sample, target) = try gruTextNetwork()
        let central = try FiniteDifference<Double>(.central, tiny: 1e-6)
        let tensors = ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"].map { name in
            network.parameterTensors.first { $0.layer == 1 && $0.tensor == name }!
        }
        let gru = network.layers[1] as! GRU<Double>
        var outputs = network
        _ = try outputs.forward(try Tensor(shape: [1, 5], scalars: sample))
        for unit in 0..<4 {
            // Each weight's and bias's shares over the positions, by row name.
            var sums: [String: Double] = [:]
            var buffer: [String: Double] = [:]
            for position in 0..<5 {
                let e = try GRUUnitExplanation(
                    network: network, sample: sample, target: target, layer: 1, unit: unit, position: position, difference: central)
                #expect(e.position == position && !e.isOutput)
                // The definition's state is the layer's output there.
                expectClose(e.state, outputs.layers[1].output[position * 4 + unit], tolerance: 1e-15)
                for row in e.rows {
                    let c = row.comparison
                    #expect(
                        c.absoluteError <= 1e-9 + 1e-6 * abs(c.analytic),
                        "unit \(unit) position \(position) \(row.quantity): \(c.analytic) vs \(c.faux)")
                    // Two routes to a gate's gradient at P: the chain rule from ∂L/∂h here, the kernel's gate gradients there.
                    if let kernel = row.networkAtPosition { expectClose(row.gradient, kernel, tolerance: 1e-15) }
                    if let sum = row.networkSum {
                        sums[row.quantity, default: 0] += row.gradient
                        buffer[row.quantity] = sum
                    }
                }
            }
            // 3 gates × (2 biases + 3 input weights + 4 hidden weights) rows with a share.
            #expect(sums.count == 27)
            for (quantity, sum) in sums {
                // The buffer sums the positions' shares, and so does the whole network nudged.
                expectClose(sum, buffer[quantity]!, tolerance: 1e-15)
                let gate = ["r", "z", "n"].firstIndex(of: String(quantity.dropFirst(3).prefix(1)))!
                let row = gate * gru.hidden + unit
                let column = quantity.firstIndex(of: "[").map {
                    Int(quantity[quantity.index(after: $0)..<quantity.index(before: quantity.endIndex)])!
                }
                let index: Int
                switch (quantity.prefix(3), column) {
                case ("W_i", let i?): index = tensors[0].offset + row * gru.inputs + i
                case ("W_h", let k?): index = tensors[1].offset + row * gru.hidden + k
                case ("b_i", nil): index = tensors[2].offset + row
                default: index = tensors[3].offset + row
                }
                expectClose(sum, try wholeNetworkDerivative(network, sample, target, index), tolerance: 1e-8)
            }
        }
    }

    @Test("A GRU as the output layer, its states the scores under the sequence loss: chain rule = the network's backward ≈ faux at every position")
    func gruOutputLayer() throws {
        var network = try Network<Double>(
            [try Embedding<Double>(vocabulary: 4, features: 2, time: 4), try GRU<Double>(time: 4, inputs: 2, hidden: 4)], loss: .sequenceCrossEntropy)
        network.initialize(seed: 10)
        let central = try FiniteDifference<Double>(.central, tiny: 1e-6)
        for unit in 0..<4 {
            for position in 0..<4 {
                let e = try GRUUnitExplanation(
                    network: network, sample: [0, 3, 1, 2], target: [3, 1, 2, -1], layer: 1, unit: unit, position: position, difference: central)
                #expect(e.isOutput)
                for row in e.rows {
                    let c = row.comparison
                    #expect(
                        c.absoluteError <= 1e-9 + 1e-6 * abs(c.analytic),
                        "unit \(unit) position \(position) \(row.quantity): \(c.analytic) vs \(c.faux)")
                    if let kernel = row.networkAtPosition { expectClose(row.gradient, kernel, tolerance: 1e-15) }
                }
            }
        }
    }

    @Test("A Float GRU network is explained in Double with the same weights")
    func gruFloatNetwork() throws {
        let (network, sample, target) = try gruTextNetwork()
        let float = network.converted(to: Float.self)
        let e = try GRUUnitExplanation(
            network: float, sample: sample.map(Float.init), target: target.map(Float.init), layer: 1, unit: 2, position: 1)
        let wih = float.parameterTensors.first { $0.layer == 1 && $0.tensor == "weight_ih_l0" }!
        // Unit 2 of the update gate: row hidden + 2.
        #expect(e.gates[1].inputWeights == (0..<3).map { Double(float.parameters[wih.offset + (4 + 2) * 3 + $0]) })
        for (quantity, c) in e.comparisons { #expect(c.absoluteError <= 1e-7 + 1e-3 * abs(c.analytic), "\(quantity): \(c.analytic) vs \(c.faux)") }
    }

    @Test(
        "A GRU explanation refuses another layer, a unit or a position that is not there, saying why; without a position it takes the line's last character",
        arguments: [
            (0, 0, nil, "it is not a GRU"), (2, 0, nil, "it is not a GRU"), (3, 0, nil, "has layers 0 to 2"),
            (1, 4, 0, "unit 4 is out of range; it has units 0 to 3"), (1, 0, 5, "position 5 is out of range; it has positions 0 to 4"),
        ] as [(Int, Int, Int?, String)])
    func gruRefusals(layer: Int, unit: Int, position: Int?, message: String) throws {
        let (network, sample, target) = try gruTextNetwork()
        do {
            _ = try GRUUnitExplanation(network: network, sample: sample, target: target, layer: layer, unit: unit, position: position)
            Issue.record("layer \(layer) unit \(unit) position \(String(describing: position)) was explained")
        } catch {
            #expect("\(error)".contains(message), "\(error)")
        }
        #expect(try GRUUnitExplanation(network: network, sample: sample, target: target, layer: 1, unit: 0).position == 3)
    }

    @Test("The GRU table shows each gate's forward numbers, the local derivatives and every row; the JSON carries the rows")
    func gruTableAndJSON() throws {
        let (network, sample, target) = try gruTextNetwork()
        let e = try GRUUnitExplanation(network: network, sample: sample, target: target, layer: 1, unit: 2, position: 1)
        let text = e.table
        #expect(text.hasPrefix("Unit 2 of layer 1 GRU(3→4, time 5) at position 1"))
        for piece in [
            "r (reset)", "z (update)", "n (candidate)", "a_n = input + r·hidden", "(1 - z)·n + z·h_prev[2]", "∂h/∂z", "∂a_n/∂r",
            "b_hn", "W_iz[2]", "W_hn[3]", "x[2]", "h_prev[3]", "network at 1", "network Σ positions", "through the next step", "h_0[k]",
            "\(e.gates[2].preActivation)", "\(e.stateGradientFromNextStep)",
        ] {
            #expect(text.contains(piece), "\(piece)")
        }
        let encoder = JSONEncoder()
        let object = try #require(try JSONSerialization.jsonObject(with: try encoder.encode(e)) as? [String: Any])
        let rows = try #require(object["gradients"] as? [[String: Any]])
        #expect(rows.count == e.rows.count && rows[0]["quantity"] as? String == "h")
        #expect((object["gates"] as? [[String: Any]])?.map { $0["name"] as? String } == ["r", "z", "n"])
        #expect(object["position"] as? Int == 1 && object["mode"] as? String == "evaluation")
    }

    @Test("The text table says what a position's numbers are, and the JSON carries the position and both backward columns")
    func tableAndJSON() throws {
        let (network, sample, target) = try recurrentTextNetwork()
        let e = try UnitExplanation(network: network, sample: sample, target: target, layer: 1, unit: 2, position: 1)
        let text = e.table
        #expect(text.hasPrefix("Unit 2 of layer 1 RNN(3→4, time 5) at position 1"))
        for row in ["b_ih", "b_hh", "w_ih[2]", "w_hh[3]", "x[2]", "h[3]", "network at 1", "network Σ positions", "through the next step", "h_0[k]"] {
            #expect(text.contains(row), "\(row)")
        }
        #expect(text.contains("\(e.backpropagatedAtPosition!.net)") && text.contains("\(e.backpropagatedBiases[1])"))
        let output = try UnitExplanation(network: network, sample: sample, target: target, layer: 2, unit: 0, position: 4)
        #expect(output.table.contains("Position 4 is padding"))
    }
}
