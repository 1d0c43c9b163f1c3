import Foundation
import Testing

@testable import NeuronCore

// Float's C kernels at every vector width this machine runs, each against the C library in Double
// (an oracle that shares nothing with them). The vectorized loops of each width have a main body
// and a remainder, so every kernel also runs over awkward lengths (0, 1, one under, at and over a
// register of 4, 8 and 16 Floats, 1001), with a sentinel past the end that it must not touch.
@Suite("Float's C kernels at every vector width")
struct VectorKernelsTests {
    /// What /proc/cpuinfo says the CPU has (the kernel reports a feature only if the OS saves its
    /// registers), read independently of the C dispatcher's cpuid.
    static func levelFromProcCPUInfo() -> VectorLevel? {
        #if arch(x86_64) && os(Linux)
        guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("flags") })
        else { return nil }
        let flags = Set(line.split(separator: " ").map(String.init))
        guard flags.isSuperset(of: ["avx2", "fma"]) else { return .baseline }
        return flags.isSuperset(of: ["avx512f", "avx512dq", "avx512bw", "avx512vl"]) ? .avx512 : .avx2
        #elseif arch(x86_64)
        return nil
        #else
        return .baseline
        #endif
    }

    @Test("the dispatcher finds the level /proc/cpuinfo reports, uses it by default, and clamps to it")
    func levels() {
        if let expected = Self.levelFromProcCPUInfo() { #expect(VectorLevel.supported == expected) }
        #expect(Kernels.vectorLevel == VectorLevel.supported)  // no test sets it: each runs a level explicitly
        #expect(Kernels.vectorSummary == "element-wise kernels: \(VectorLevel.supported)")
        #expect(VectorLevel.runnable.first == .baseline && VectorLevel.runnable.last == VectorLevel.supported)
        for level in VectorLevel.allCases {
            #expect(VectorKernels(level).level == min(level, VectorLevel.supported))
        }
        #expect(VectorLevel.avx512.description == "AVX-512")
    }

    static let lengths = [0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 1001]

    /// Runs `kernel` over each of `lengths` elements taken from `inputs` (cycled), with a sentinel
    /// after them, and checks every element against `exact` within `tolerance` (absolute, or
    /// relative to the exact value when `relative`), and that the sentinel stays.
    func checkLengths(
        _ inputs: [Float], _ kernel: (UnsafeMutableBufferPointer<Float>) -> Void, exact: (Double) -> Double,
        tolerance: Double, relative: Bool = false
    ) {
        let sentinel: Float = 12345.5
        for n in Self.lengths {
            var values = (0..<n).map { inputs[$0 % inputs.count] } + [sentinel]
            values.withUnsafeMutableBufferPointer { kernel(UnsafeMutableBufferPointer(rebasing: $0[0..<n])) }
            for i in 0..<n {
                let x = Double(inputs[i % inputs.count]), want = exact(x), error = abs(Double(values[i]) - want)
                #expect(error <= tolerance * (relative ? want : 1), "n \(n), element \(i): f(\(x)) = \(values[i]), not \(want)")
            }
            #expect(values[n] == sentinel, "n \(n): the element past the end was written")
        }
    }

    /// The inputs of a kernel's sweep: `low…high` in steps of `step`, every ±1e-12·1.07ᵏ below 1
    /// (where a fit's relative error shows), then `extras`.
    static func sweep(from low: Double, through high: Double, by step: Double, and extras: [Float]) -> [Float] {
        var xs = stride(from: low, through: high, by: step).map { Float($0) }
        var small: Float = 1e-12
        while small < 1 {
            xs += [small, -small]
            small *= 1.07
        }
        return xs + extras
    }

    @Test("exp within 1e-7 (relative) of exp over Float's normal range; 0 below, infinity above, NaN kept", arguments: VectorLevel.runnable)
    func exp(level: VectorLevel) {
        let kernels = VectorKernels(level)
        let xs = Self.sweep(from: -87.3, through: 88.3, by: 0.0007, and: [0, -0.0, 1, -1, 88.37, -87.33])
        var ys = xs
        ys.withUnsafeMutableBufferPointer { kernels.exp($0) }
        var worst = 0.0
        for (x, y) in zip(xs, ys) {
            let exact = Foundation.exp(Double(x))
            worst = max(worst, abs(Double(y) - exact) / exact)
        }
        #expect(worst <= 1e-7, "\(level): max relative error \(worst)")
        #expect(ys[ys.count - 6] == 1 && ys[ys.count - 5] == 1, "e^0 is exactly 1")
        var edges: [Float] = [-87.34, -100, -1e30, -.infinity, 88.38, 100, 1e30, .infinity, .nan]
        edges.withUnsafeMutableBufferPointer { kernels.exp($0) }
        #expect(Array(edges[0..<4]) == [0, 0, 0, 0])
        #expect(Array(edges[4..<8]) == [.infinity, .infinity, .infinity, .infinity])
        #expect(edges[8].isNaN)
        checkLengths([-3.5, 0.25, 7, -0.01, 40, -60, 1.5], kernels.exp, exact: Foundation.exp, tolerance: 1e-7, relative: true)
    }

    @Test("erf within 4.3e-7 of erf, in [-1, 1] with erf's sign, NaN kept", arguments: VectorLevel.runnable)
    func erf(level: VectorLevel) {
        let kernels = VectorKernels(level)
        let xs = Self.sweep(from: -7, through: 7, by: 0.0003, and: [0, -0.0, 4, -4, 100, -100, .infinity, -.infinity])
        var ys = xs
        ys.withUnsafeMutableBufferPointer { kernels.erf($0) }
        var worst = 0.0, worstRelative = 0.0
        for (x, y) in zip(xs, ys) {
            let exact = Foundation.erf(Double(x))
            worst = max(worst, abs(Double(y) - exact))
            if exact != 0 { worstRelative = max(worstRelative, abs(Double(y) - exact) / abs(exact)) }
            #expect(abs(y) <= 1 && (x == 0 || (y > 0) == (x > 0)), "\(level): erf(\(x)) = \(y)")
        }
        #expect(worst <= 4.3e-7, "\(level): max error \(worst)")
        #expect(worstRelative <= 4.3e-7, "\(level): max relative error \(worstRelative)")
        var nan: [Float] = [.nan, 1, .nan]
        nan.withUnsafeMutableBufferPointer { kernels.erf($0) }
        #expect(nan[0].isNaN && nan[2].isNaN && abs(Double(nan[1]) - Foundation.erf(1)) <= 4.3e-7)
        checkLengths([-3.5, 0.25, 7, -0.01, 1, -2, 1.5], kernels.erf, exact: Foundation.erf, tolerance: 4.3e-7)
    }

    @Test("tanh within 4e-7 of tanh, in [-1, 1] with tanh's sign, NaN kept", arguments: VectorLevel.runnable)
    func tanh(level: VectorLevel) {
        let kernels = VectorKernels(level)
        let xs = Self.sweep(from: -12, through: 12, by: 0.0007, and: [0, -0.0, 9, -9, 100, -100, .infinity, -.infinity])
        var ys = xs
        ys.withUnsafeMutableBufferPointer { kernels.tanh($0) }
        var worst = 0.0
        for (x, y) in zip(xs, ys) {
            let exact = Foundation.tanh(Double(x))
            worst = max(worst, abs(Double(y) - exact))
            #expect(abs(y) <= 1 && (x == 0 || (y > 0) == (x > 0)), "\(level): tanh(\(x)) = \(y)")
        }
        #expect(worst <= 4e-7, "\(level): max error \(worst)")
        var nan: [Float] = [.nan]
        nan.withUnsafeMutableBufferPointer { kernels.tanh($0) }
        #expect(nan[0].isNaN)
        checkLengths([-3.5, 0.25, 7, -0.01, 1, -2, 1.5], kernels.tanh, exact: Foundation.tanh, tolerance: 4e-7)
    }

    // MARK: Fused passes, against the naive definitions in Double

    /// `count` Floats from a seeded stream, uniform in [low, high).
    static func uniform(_ count: Int, _ low: Double, _ high: Double, seed: UInt64) -> [Float] {
        var generator = SeededGenerator(seed: seed)
        return (0..<count).map { _ in Float(generator.uniform(low, high)) }
    }

    @Test("GELU's forward and backward passes, both forms, within 2e-6·max(1, |x|) of the definitions", arguments: VectorLevel.runnable)
    func gelu(level: VectorLevel) throws {
        // erf and tanh are within 4.3e-7 of the functions, exp within 1e-7 relative; x scales the
        // error of y and of the slope's x·gate′ term, dy (in [-1, 1)) scales the slope's.
        let kernels = VectorKernels(level)
        for approximation in GELUApproximation.allCases {
            for n in Self.lengths {
                let x = Self.uniform(n, -7, 7, seed: UInt64(n)), dy = Self.uniform(n, -1, 1, seed: UInt64(n) + 100)
                var gate = [Float](repeating: .nan, count: n), y = gate, dx = gate
                x.withUnsafeBufferPointer { px in
                    gate.withUnsafeMutableBufferPointer { pg in
                        y.withUnsafeMutableBufferPointer { kernels.geluForward(px, approximation: approximation, gate: pg, into: $0) }
                    }
                }
                x.withUnsafeBufferPointer { px in
                    gate.withUnsafeBufferPointer { pg in
                        dy.withUnsafeBufferPointer { pdy in
                            dx.withUnsafeMutableBufferPointer {
                                kernels.geluBackward(px, gate: pg, outputGradient: pdy, approximation: approximation, into: $0)
                            }
                        }
                    }
                }
                let xd = try Tensor(shape: [n], scalars: x.map(Double.init)), dyd = try Tensor(shape: [n], scalars: dy.map(Double.init))
                let yExact = Naive.geluForward(xd, approximation: approximation)
                let dxExact = Naive.geluBackward(xd, outputGradient: dyd, approximation: approximation)
                for i in 0..<n {
                    let tolerance = 2e-6 * max(1, abs(Double(x[i])))
                    #expect(abs(Double(y[i]) - yExact[i]) <= tolerance, "\(level) \(approximation) n \(n): y(\(x[i])) = \(y[i]), not \(yExact[i])")
                    #expect(abs(Double(gate[i]) * Double(x[i]) - Double(y[i])) <= 1e-6 * abs(Double(y[i])), "y = x·gate")
                    #expect(
                        abs(Double(dx[i]) - dxExact[i]) <= tolerance, "\(level) \(approximation) n \(n): dx(\(x[i])) = \(dx[i]), not \(dxExact[i])")
                }
            }
            // dx may alias dy: the backward pass in place gives the same numbers
            let x = Self.uniform(33, -5, 5, seed: 7), gate = x.map { Float(0.5 * (1 + Foundation.erf(Double($0) / 2.0.squareRoot()))) }
            var dy = Self.uniform(33, -1, 1, seed: 8), dx = dy
            x.withUnsafeBufferPointer { px in
                gate.withUnsafeBufferPointer { pg in
                    dy.withUnsafeBufferPointer { pdy in
                        dx.withUnsafeMutableBufferPointer {
                            kernels.geluBackward(px, gate: pg, outputGradient: pdy, approximation: approximation, into: $0)
                        }
                    }
                }
                gate.withUnsafeBufferPointer { pg in
                    dy.withUnsafeMutableBufferPointer { pdy in
                        kernels.geluBackward(px, gate: pg, outputGradient: UnsafeBufferPointer(pdy), approximation: approximation, into: pdy)
                    }
                }
            }
            #expect(dy == dx, "\(level) \(approximation): in place differs")
        }
    }

    @Test("layer norm's forward and backward passes within 1e-5 of the definitions in Double", arguments: VectorLevel.runnable)
    func layerNorm(level: VectorLevel) throws {
        // Float rows of up to 100 features: each sum's rounding is at most ~features·6e-8 relative,
        // and x̂ is O(1) (at most √features), so 1e-5 absolute leaves the sums' worst case room.
        let kernels = VectorKernels(level), epsilon = 1e-5
        for features in [1, 3, 15, 16, 17, 64, 100] {
            for rows in [0, 1, 5] {
                let count = rows * features, seed = UInt64(features * 10 + rows)
                // an offset and a scale per row, so the mean and the deviation matter
                let x = Self.uniform(count, -1, 1, seed: seed).enumerated().map { Float(3 - Double($0.offset / features)) + 2 * $0.element }
                let weight = Self.uniform(features, 0.5, 1.5, seed: seed + 1), bias = Self.uniform(features, -1, 1, seed: seed + 2)
                let dy = Self.uniform(count, -1, 1, seed: seed + 3)
                var y = [Float](repeating: .nan, count: count), mean = [Float](repeating: .nan, count: rows), s = mean
                x.withUnsafeBufferPointer { px in
                    weight.withUnsafeBufferPointer { pw in
                        bias.withUnsafeBufferPointer { pb in
                            mean.withUnsafeMutableBufferPointer { pm in
                                s.withUnsafeMutableBufferPointer { ps in
                                    y.withUnsafeMutableBufferPointer {
                                        kernels.layerNormForward(px, weight: pw, bias: pb, epsilon: epsilon, mean: pm, inverseDeviation: ps, into: $0)
                                    }
                                }
                            }
                        }
                    }
                }
                // the parameter gradients start from 1 and 2: backward adds into them
                var dWeight = [Float](repeating: 1, count: features), dBias = [Float](repeating: 2, count: features)
                var dx = [Float](repeating: .nan, count: count)
                var dWeightOnly = dWeight, dBiasOnly = dBias
                x.withUnsafeBufferPointer { px in
                    dy.withUnsafeBufferPointer { pdy in
                        weight.withUnsafeBufferPointer { pw in
                            mean.withUnsafeBufferPointer { pm in
                                s.withUnsafeBufferPointer { ps in
                                    dWeight.withUnsafeMutableBufferPointer { pdw in
                                        dBias.withUnsafeMutableBufferPointer { pdb in
                                            dx.withUnsafeMutableBufferPointer {
                                                kernels.layerNormBackward(
                                                    px, outputGradient: pdy, weight: pw, mean: pm, inverseDeviation: ps,
                                                    weightGradient: pdw, biasGradient: pdb, into: $0)
                                            }
                                        }
                                    }
                                    dWeightOnly.withUnsafeMutableBufferPointer { pdw in
                                        dBiasOnly.withUnsafeMutableBufferPointer { pdb in
                                            kernels.layerNormBackward(
                                                px, outputGradient: pdy, weight: pw, mean: pm, inverseDeviation: ps,
                                                weightGradient: pdw, biasGradient: pdb, into: nil)
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                let xd = try Tensor(shape: [rows, features], scalars: x.map(Double.init))
                let wd = try Tensor(shape: [features], scalars: weight.map(Double.init))
                let bd = try Tensor(shape: [features], scalars: bias.map(Double.init))
                let dyd = try Tensor(shape: [rows, features], scalars: dy.map(Double.init))
                let yExact = Naive.layerNormForward(xd, weight: wd, bias: bd, epsilon: epsilon)
                let exact = Naive.layerNormBackward(xd, outputGradient: dyd, weight: wd, epsilon: epsilon)
                let what = "\(level), \(rows) rows of \(features)"
                for i in 0..<count {
                    #expect(abs(Double(y[i]) - yExact[i]) <= 1e-5, "\(what): y[\(i)] = \(y[i]), not \(yExact[i])")
                    #expect(abs(Double(dx[i]) - exact.input[i]) <= 1e-5, "\(what): dx[\(i)] = \(dx[i]), not \(exact.input[i])")
                }
                for j in 0..<features {
                    #expect(abs(Double(dWeight[j]) - (1 + exact.weight[j])) <= 1e-5, "\(what): dweight[\(j)]")
                    #expect(abs(Double(dBias[j]) - (2 + exact.bias[j])) <= 1e-5, "\(what): dbias[\(j)]")
                }
                #expect(dWeightOnly == dWeight && dBiasOnly == dBias, "\(what): without dx, the same parameter gradients")
            }
        }
    }

    @Test("Adam's and AdamW's step within 1e-6 of the textbook update in Double", arguments: VectorLevel.runnable)
    func adam(level: VectorLevel) {
        // The textbook form, bias-corrected moments m̂ = m/(1 - β1^t), v̂ = v/(1 - β2^t) and
        // p ← p - lr·m̂/(√v̂ + ε), against the kernel's folded constants; Float's rounding of a few
        // operations on parameters of magnitude ≤ 1 is a few 1e-8.
        let kernels = VectorKernels(level)
        // the hyperparameters as Floats hold them (1 - β2 in Float is 1.3e-5 off 0.001)
        let lr = Double(Float(1e-2)), beta1 = Double(Float(0.9)), beta2 = Double(Float(0.999)), epsilon = Double(Float(1e-8)), t = 3.0
        for (l2, decay) in [(0.0, 0.0), (0.1, 0.0), (0.0, 0.01)] {
            for n in Self.lengths {
                let seed = UInt64(n)
                var p = Self.uniform(n, -1, 1, seed: seed), m = Self.uniform(n, -0.1, 0.1, seed: seed + 1)
                var v = Self.uniform(n, 0, 0.01, seed: seed + 2)
                let g = Self.uniform(n, -1, 1, seed: seed + 3)
                let (p0, m0, v0) = (p, m, v)
                let step = AdamStep<Float>(
                    stepSize: Float(lr / (1 - Foundation.pow(beta1, t))),
                    inverseRootCorrection2: Float(1 / (1 - Foundation.pow(beta2, t)).squareRoot()),
                    beta1: Float(beta1), beta2: Float(beta2), epsilon: Float(epsilon), l2: Float(l2), shrink: Float(1 - lr * decay))
                p.withUnsafeMutableBufferPointer { pp in
                    m.withUnsafeMutableBufferPointer { pm in
                        v.withUnsafeMutableBufferPointer { pv in
                            g.withUnsafeBufferPointer { kernels.adamUpdate(parameters: pp, gradients: $0, m: pm, v: pv, step: step) }
                        }
                    }
                }
                // No level fuses a multiply-add: every one rounds as the Swift loop does, bit for bit.
                var (pSwift, mSwift, vSwift) = (p0, m0, v0)
                pSwift.withUnsafeMutableBufferPointer { pp in
                    mSwift.withUnsafeMutableBufferPointer { pm in
                        vSwift.withUnsafeMutableBufferPointer { pv in
                            g.withUnsafeBufferPointer { Kernels.adamUpdateLoop(parameters: pp, gradients: $0, m: pm, v: pv, step: step) }
                        }
                    }
                }
                #expect(p == pSwift && m == mSwift && v == vSwift, "\(level), n \(n): not the Swift loop's bits")
                for i in 0..<n {
                    let d = Double(g[i]) + l2 * Double(p0[i])
                    let mi = beta1 * Double(m0[i]) + (1 - beta1) * d, vi = beta2 * Double(v0[i]) + (1 - beta2) * d * d
                    let mHat = mi / (1 - Foundation.pow(beta1, t)), vHat = vi / (1 - Foundation.pow(beta2, t))
                    let pi = Double(p0[i]) * (1 - lr * decay) - lr * mHat / (vHat.squareRoot() + epsilon)
                    let what = "\(level), l2 \(l2), decay \(decay), n \(n), element \(i)"
                    #expect(abs(Double(m[i]) - mi) <= 1e-7 && abs(Double(v[i]) - vi) <= 1e-8, "\(what): moments")
                    #expect(abs(Double(p[i]) - pi) <= 1e-6, "\(what): p = \(p[i]), not \(pi)")
                }
            }
        }
    }
}
