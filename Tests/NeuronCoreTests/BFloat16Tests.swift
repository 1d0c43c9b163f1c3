import Testing

@testable import NeuronCore

/// Why the tests that run bf16 products are skipped here, if they are.
private let bf16Here = BLAS.bf16Refusal == nil
private let skipped = Comment(rawValue: "bf16 products cannot run on this machine: \(BLAS.bf16Refusal ?? "")")

@Suite("bfloat16: the rounding, the refusals, oneDNN's products and a network's passes")
struct BFloat16Tests {
    // MARK: The rounding (every machine)

    @Test("Rounding to bfloat16, worked by hand on the bits: ties to even, carries, overflow, NaN, zeros")
    func roundingByHand() {
        func rounded(_ bits: UInt32) -> UInt32 { Naive.bfloat16(Float(bitPattern: bits)).bitPattern }
        #expect(rounded(0x3F80_0000) == 0x3F80_0000)  // 1 is exact
        #expect(rounded(0x3F80_8000) == 0x3F80_0000)  // 1 + 2⁻⁸, half way, last bit even: down
        #expect(rounded(0x3F81_8000) == 0x3F82_0000)  // half way, last bit odd: up
        #expect(rounded(0x3F80_8001) == 0x3F81_0000)  // past half way: up
        #expect(rounded(0x3F80_7FFF) == 0x3F80_0000)  // short of half way: down
        #expect(rounded(0x3FFF_FFFF) == 0x4000_0000)  // the carry reaches the exponent: 2
        #expect(rounded(0x7F7F_FFFF) == 0x7F80_0000)  // the largest Float rounds to ∞
        #expect(rounded(0xBF80_8001) == 0xBF81_0000)  // negative: the magnitude rounds the same way
        #expect(rounded(0x8000_0000) == 0x8000_0000)  // -0 stays -0
        #expect(rounded(0x0000_8000) == 0x0000_0000)  // the smallest subnormals, half way, even: to 0
        #expect(Naive.bfloat16(.infinity) == .infinity && Naive.bfloat16(-.infinity) == -.infinity)
        #expect(Naive.bfloat16(.nan).isNaN)
    }

    @Test("The C rounding agrees with the bits' reference on 200,000 random patterns and the special values")
    func cRoundingMatchesReference() {
        var generator = SeededGenerator(seed: 7)
        var values: [Float] = (0..<200_000).map { _ in Float(bitPattern: UInt32(truncatingIfNeeded: generator.next())) }
        values += [0, -0, 1, -1, .infinity, -.infinity, .nan, .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .leastNonzeroMagnitude]
        values += [Float(bitPattern: 0x3F80_8000), Float(bitPattern: 0x3F81_8000), Float(bitPattern: 0x7FC0_0001), Float(bitPattern: 0x7F80_0001)]
        var halves = [UInt16](repeating: 0, count: values.count)
        var widened = [Float](repeating: 0, count: values.count)
        values.withUnsafeBufferPointer { x in halves.withUnsafeMutableBufferPointer { Float.roundToBFloat16(x, into: $0) } }
        halves.withUnsafeBufferPointer { h in widened.withUnsafeMutableBufferPointer { Float.widenBFloat16(h, into: $0) } }
        let wrong = values.indices.filter { i in
            let expected = Naive.bfloat16(values[i])
            return expected.isNaN ? !widened[i].isNaN : widened[i].bitPattern != expected.bitPattern
        }
        #expect(wrong.isEmpty, "first: \(wrong.first.map { String(values[$0].bitPattern, radix: 16) } ?? "")")
        // A signalling NaN (0x7F800001 keeps no set bit in its top half) must not become ∞.
        #expect(widened[values.count - 1].isNaN)
    }

    // MARK: The refusals (every machine)

    @Test("Each refusal says what is missing and what to do; none where everything is there")
    func refusals() {
        let withBF16: Set<String> = ["avx2", "avx512f", "avx512_bf16"]
        let unbuilt = BLAS.bf16Refusal(built: false, loadError: nil, cpuFlags: withBF16)
        #expect(unbuilt?.contains("--traits OneDNN") == true && unbuilt?.contains("libdnnl-dev") == true)
        let unloaded = BLAS.bf16Refusal(built: true, loadError: "oneDNN could not be loaded (libdnnl.so.2: cannot open)", cpuFlags: withBF16)
        #expect(unloaded?.hasPrefix("oneDNN could not be loaded") == true && unloaded?.contains("apt-get install libdnnl-dev") == true)
        let zen3 = BLAS.bf16Refusal(built: true, loadError: nil, cpuFlags: ["avx2", "fma"])
        #expect(zen3?.contains("no avx512_bf16") == true && zen3?.contains("training.products: full") == true)
        #expect(BLAS.bf16Refusal(built: true, loadError: nil, cpuFlags: withBF16) == nil)
    }

    @Test("A planted wrong bf16 product is caught by the check, which names oneDNN and the way back to full products")
    func plantedFaultCaught() {
        func faulty(
            _ ta: Bool, _ tb: Bool, _ m: Int, _ n: Int, _ k: Int, _ alpha: Float, _ a: UnsafePointer<Float>, _ lda: Int,
            _ b: UnsafePointer<Float>, _ ldb: Int, _ beta: Float, _ c: UnsafeMutablePointer<Float>, _ ldc: Int
        ) {
            BLAS.bf16Gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)  // Float's product where oneDNN is absent
            if m == 17 { c[2 * ldc + 1] -= 1 }
        }
        #expect {
            try BLAS.checkKernels(Float.self, routine: "bf16 matmul", kernels: "oneDNN 2.6.3", gemm: faulty)
        } throws: { error in
            guard let mismatch = error as? BLAS.KernelMismatch else { return false }
            let text = "\(mismatch)"
            return mismatch.product.hasPrefix("17×19×33") && mismatch.row == 2 && mismatch.column == 1
                && text.hasPrefix("oneDNN 2.6.3 computes wrong bf16 products") && text.contains("training.products: full")
        }
    }

    // MARK: oneDNN's products (where they run)

    @Test("oneDNN's products pass the exact check of small integers", .enabled(if: bf16Here, skipped))
    func exactCheckPasses() throws {
        try BLAS.checkBF16Products()
    }

    /// The product of the operands as bf16 products round them (`alpha·a` and `b`), summed in Double:
    /// the reference, with the sum of the terms' magnitudes for the tolerance of Float's summation.
    private func reference(
        _ a: Tensor<Float>, _ ta: Bool, _ b: Tensor<Float>, _ tb: Bool, alpha: Float, beta: Float, c: Tensor<Float>
    ) -> (value: [Double], magnitude: [Double]) {
        let m = c.shape[0], n = c.shape[1], k = ta ? a.shape[0] : a.shape[1]
        var value = [Double](repeating: 0, count: m * n), magnitude = value
        for i in 0..<m {
            for j in 0..<n {
                for p in 0..<k {
                    let x = Double(Naive.bfloat16(alpha * (ta ? a[p, i] : a[i, p]))), y = Double(Naive.bfloat16(tb ? b[j, p] : b[p, j]))
                    value[i * n + j] += x * y
                    magnitude[i * n + j] += abs(x * y)
                }
                value[i * n + j] += Double(beta) * Double(c[i, j])
                magnitude[i * n + j] += abs(Double(beta) * Double(c[i, j]))
            }
        }
        return (value, magnitude)
    }

    @Test(
        "bf16 products equal the rounded operands' products summed in Double, every transpose, alpha and beta, edge shapes",
        .enabled(if: bf16Here, skipped))
    func productsAgainstReference() {
        var generator = SeededGenerator(seed: 11)
        let shapes = [(1, 1, 1), (3, 5, 7), (16, 1, 33), (1, 40, 9), (37, 29, 65), (64, 128, 96)]
        for (m, n, k) in shapes {
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                for (alpha, beta) in [(Float(1), Float(0)), (1, 1), (-0.25, 1), (2, 0.5)] {
                    let a = Tensor<Float>.random(ta ? [k, m] : [m, k], using: &generator)
                    let b = Tensor<Float>.random(tb ? [n, k] : [k, n], using: &generator)
                    var c = Tensor<Float>.random([m, n], using: &generator)
                    let (expected, magnitude) = reference(a, ta, b, tb, alpha: alpha, beta: beta, c: c)
                    a.withUnsafeBufferPointer { pa in
                        b.withUnsafeBufferPointer { pb in
                            c.withUnsafeMutableBufferPointer { pc in
                                #expect(
                                    BLAS.tryBF16Gemm(
                                        ta, tb, m, n, k, alpha, pa.baseAddress!, a.columns, pb.baseAddress!, b.columns, beta, pc.baseAddress!, n))
                            }
                        }
                    }
                    // Each bf16 × bf16 term is exact in Float; what is left is Float's summation (k + 2 roundings).
                    let worst = (0..<m * n).map { abs(Double(c[$0]) - expected[$0]) / (magnitude[$0] * Double(k + 2) * 0x1p-24 + 1e-30) }.max()!
                    #expect(worst <= 1, "\(m)×\(n)×\(k) ta \(ta) tb \(tb) alpha \(alpha) beta \(beta): \(worst) of the bound")
                }
            }
        }
    }

    @Test(
        "bf16 products really round: a 128×64×64 product differs from sgemm's by far more than Float's rounding; a tiny one stays Float",
        .enabled(if: bf16Here, skipped))
    func productsRound() {
        var generator = SeededGenerator(seed: 3)
        let a = Tensor<Float>.random([128, 64], using: &generator), b = Tensor<Float>.random([64, 64], using: &generator)
        var full = Tensor<Float>(zeros: [128, 64]), rounded = full
        try! Tensor.matmul(a, b, into: &full)
        let outside = BLAS.setProducts(.bf16)
        try! Tensor.matmul(a, b, into: &rounded)
        BLAS.setProducts(outside)
        let largest = (0..<full.count).map { abs(full[$0] - rounded[$0]) }.max()!
        #expect(largest > 1e-3, "bf16 and Float products differ by \(largest) at most")
        #expect(BLAS.products == .full)
        // Below the threshold the product is sgemm's, bit for bit.
        let small = Tensor<Float>.random([8, 8], using: &generator)
        var fullSmall = Tensor<Float>(zeros: [8, 8]), bf16Small = fullSmall
        try! Tensor.matmul(small, small, into: &fullSmall)
        BLAS.setProducts(.bf16)
        try! Tensor.matmul(small, small, into: &bf16Small)
        BLAS.setProducts(.full)
        #expect(fullSmall.scalars == bf16Small.scalars)
    }

    // MARK: A network's passes

    @Test(
        "A bf16 network's forward pass equals the full pass of the same network with its weights and inputs rounded to bf16",
        .enabled(if: bf16Here, skipped))
    func networkForward() throws {
        var generator = SeededGenerator(seed: 5)
        // 64 × 96 × 96 multiply-adds: past any threshold below 2¹⁹.
        var network = try Network<Float>([Dense<Float>(96, 96, activation: .identity)], loss: .halfSquaredError)
        network.initialize(seed: 9)
        let x = Tensor<Float>.random([64, 96], using: &generator)
        var roundedNetwork = network
        // Weights (96×96) are rounded, the bias is added in Float after the product.
        let weights = network.parameterTensors[0]
        for i in weights.range { roundedNetwork.parameters[i] = Naive.bfloat16(network.parameters[i]) }
        var roundedX = x
        for i in 0..<x.count { roundedX[i] = Naive.bfloat16(x[i]) }

        var fullNetwork = network
        network.products = .bf16
        let bf16 = try network.forward(x)
        let expected = try roundedNetwork.forward(roundedX)
        let full = try fullNetwork.forward(x)
        for i in 0..<bf16.count { #expect(abs(bf16[i] - expected[i]) <= 1e-5 * (1 + abs(expected[i])), "\(i)") }
        #expect((0..<bf16.count).contains { abs(bf16[$0] - full[$0]) > 1e-4 }, "the bf16 pass is the Float pass: nothing was rounded")
        #expect(BLAS.products == .full, "the network's setting leaked out of its pass")
    }

    @Test(
        "A batch split over two threads computes its products in bf16 on both: the gradients match one thread's, not Float's",
        .enabled(if: bf16Here, skipped))
    func splitBatchUsesBF16() throws {
        var generator = SeededGenerator(seed: 21)
        // Each share's first product is 128 × 128 × 64 multiply-adds, past any threshold below 2¹⁹.
        var network = try Network<Float>(
            [Dense<Float>(64, 128, activation: .tanh), Dense<Float>(128, 8, activation: .softmax)], loss: .softmaxCrossEntropy)
        network.initialize(seed: 4)
        let x = Tensor<Float>.random([256, 64], using: &generator)
        var targets = Tensor<Float>(zeros: [256, 8])
        for row in 0..<256 { targets[row, row % 8] = 1 }
        func gradients(_ products: ProductPrecision, threads: Int) throws -> [Float] {
            var copy = network
            (copy.products, copy.batchThreads) = (products, threads)
            try copy.lossAndGradients(x, targets: targets)
            return copy.gradients
        }
        let one = try gradients(.bf16, threads: 1), two = try gradients(.bf16, threads: 2), full = try gradients(.full, threads: 2)
        let scale = one.map(abs).max()!
        let split = zip(one, two).map { abs($0 - $1) }.max()!, rounding = zip(one, full).map { abs($0 - $1) }.max()!
        #expect(split <= 1e-5 * scale, "split \(split) vs scale \(scale)")
        #expect(rounding >= 20 * split && rounding > 1e-4 * scale, "Float's gradients differ by \(rounding), the split's by \(split)")
    }
}
