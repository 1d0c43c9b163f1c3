import Foundation
import Testing

@testable import NeuronCore

@Suite("Product threads: a large product cut into panels, one per thread")
struct ProductThreadsTests {
    /// Either output side the longer, sides off a cache line, and panels left empty (53 columns in
    /// 3 panels of whole cache lines: 32, 21 and none; 1 row and 40 columns in 5).
    static let shapes: [(m: Int, n: Int, k: Int)] = [(37, 53, 19), (70, 9, 11), (5, 200, 3), (129, 33, 100), (16, 16, 7), (1, 40, 5)]

    /// `alpha·op(a)·op(b) + beta·c` by three loops in Double, over row-major storage with strides.
    static func naive<Scalar: TensorScalar>(
        transposeA: Bool, transposeB: Bool, m: Int, n: Int, k: Int, alpha: Scalar, a: [Scalar], lda: Int,
        b: [Scalar], ldb: Int, beta: Scalar, c: [Scalar], ldc: Int
    ) -> [Scalar] {
        var out = c
        for i in 0..<m {
            for j in 0..<n {
                var sum = 0.0
                for p in 0..<k {
                    let x = transposeA ? a[p * lda + i] : a[i * lda + p]
                    let y = transposeB ? b[j * ldb + p] : b[p * ldb + j]
                    sum += Double(x) * Double(y)
                }
                let before = beta == 0 ? 0 : Double(beta) * Double(c[i * ldc + j])
                out[i * ldc + j] = Scalar(Double(alpha) * sum + before)
            }
        }
        return out
    }

    /// Operands with rows padded past what the product reads (strides 2 wider), the padding of
    /// c set to 5, c's entries to NaN when `beta` is 0 (which must ignore them).
    static func operands<Scalar: TensorScalar>(
        transposeA: Bool, transposeB: Bool, m: Int, n: Int, k: Int, beta: Scalar, using generator: inout SeededGenerator
    ) -> (a: [Scalar], lda: Int, b: [Scalar], ldb: Int, c: [Scalar], ldc: Int) {
        let (aRows, aColumns) = transposeA ? (k, m) : (m, k)
        let (bRows, bColumns) = transposeB ? (n, k) : (k, n)
        let (lda, ldb, ldc) = (aColumns + 2, bColumns + 2, n + 2)
        let a = (0..<aRows * lda).map { _ in Scalar(generator.uniform(-1, 1)) }
        let b = (0..<bRows * ldb).map { _ in Scalar(generator.uniform(-1, 1)) }
        var c = [Scalar](repeating: 5, count: m * ldc)
        for i in 0..<m { for j in 0..<n { c[i * ldc + j] = beta == 0 ? .nan : Scalar(generator.uniform(-1, 1)) } }
        return (a, lda, b, ldb, c, ldc)
    }

    @Test("Any number of panels gives the naive loops' product, and writes nothing past n", arguments: [false, true], [false, true])
    func panelsMatchNaive(transposeA: Bool, transposeB: Bool) {
        func check<Scalar: TensorScalar>(_: Scalar.Type, gemm: @escaping ProductPanels.Gemm) {
            var generator = SeededGenerator(seed: 11)
            for (m, n, k) in Self.shapes {
                for panels in 1...5 {
                    for (alpha, beta) in [(Scalar(1), Scalar(0)), (Scalar(-0.5), Scalar(1)), (Scalar(2), Scalar(0.25))] {
                        let (a, lda, b, ldb, start, ldc) = Self.operands(
                            transposeA: transposeA, transposeB: transposeB, m: m, n: n, k: k, beta: beta, using: &generator)
                        var c = start
                        a.withUnsafeBytes { a in
                            b.withUnsafeBytes { b in
                                c.withUnsafeMutableBytes { c in
                                    let work = ProductPanels(
                                        transposeA: transposeA, transposeB: transposeB, m: m, n: n, k: k, alpha: Double(alpha), a: a.baseAddress!,
                                        lda: lda, b: b.baseAddress!, ldb: ldb, beta: Double(beta), c: c.baseAddress!, ldc: ldc,
                                        panels: panels, elementSize: MemoryLayout<Scalar>.stride, gemm: gemm)
                                    for share in (0..<panels).reversed() { work.run(share: share) }  // any order: the panels are disjoint
                                }
                            }
                        }
                        let expected = Self.naive(
                            transposeA: transposeA, transposeB: transposeB, m: m, n: n, k: k, alpha: alpha, a: a, lda: lda, b: b, ldb: ldb,
                            beta: beta, c: start, ldc: ldc)
                        // Each entry sums k products of numbers in [-1, 1), scaled by |alpha| ≤ 2; the padding stays 5.
                        expectClose(c, expected, tolerance: 2 * summationTolerance(Scalar.self, terms: k + 1))
                    }
                }
            }
        }
        check(Float.self, gemm: Float.panel)
        check(Double.self, gemm: Double.panel)
    }

    @Test("A product past the threshold, on 2 and 3 threads, equals the naive loops", arguments: [false, true])
    func cutProductsMatchNaive(transposed: Bool) {
        let (m, n, k) = (257, 263, 127)  // 8.58M multiply-adds: past 2²³
        #expect(m * n * k >= BLAS.panelMinimumWork && BLAS.takesPanels(work: m * n * k) == (BLAS.productThreading == .panels))
        let before = BLAS.threadCount
        defer { BLAS.threadCount = before }
        func check<Scalar: TensorScalar>(_: Scalar.Type) {
            var generator = SeededGenerator(seed: 5)
            for threads in [2, 3] {
                BLAS.threadCount = threads
                let (a, lda, b, ldb, start, ldc) = Self.operands(
                    transposeA: transposed, transposeB: transposed, m: m, n: n, k: k, beta: Scalar(0), using: &generator)
                var c = start
                Scalar.blasGemm(
                    transposeA: transposed, transposeB: transposed, m: m, n: n, k: k, alpha: 1, a: a, lda: lda, b: b, ldb: ldb, beta: 0,
                    c: &c, ldc: ldc)
                let expected = Self.naive(
                    transposeA: transposed, transposeB: transposed, m: m, n: n, k: k, alpha: Scalar(1), a: a, lda: lda, b: b, ldb: ldb,
                    beta: Scalar(0), c: start, ldc: ldc)
                expectClose(c, expected, tolerance: summationTolerance(Scalar.self, terms: k))
            }
        }
        check(Float.self)
        check(Double.self)
    }

    @Test("Threading by panels, OpenBLAS runs on one thread whatever the product threads are")
    func openBLASOnOneThread() {
        let before = BLAS.threadCount
        defer { BLAS.threadCount = before }
        BLAS.threadCount = 3
        #expect(BLAS.threadCount == 3)
        #expect(BLAS.summary.contains("3 threads"))
        if BLAS.productThreading == .panels {
            #expect(BLAS.openBLASThreadCount == 1)
        } else {
            #expect(BLAS.openBLASThreadCount == 3)
        }
    }

    /// Share 0 waits, inside the threads, until it is let go.
    struct Held: ShareWork {
        let entered: DispatchSemaphore
        let release: DispatchSemaphore
        func run(share: Int) {
            guard share == 0 else { return }
            entered.signal()
            release.wait()
        }
    }

    @Test("Threads busy with one caller's work turn another's away at once, and take it once free")
    func busyThreadsTurnAway() {
        let threads = ShareThreads<Held>(count: 1)
        let (entered, release, done) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let holder = Thread {
            threads.run(Held(entered: entered, release: release))
            done.signal()
        }
        holder.start()
        entered.wait()
        let other = Held(entered: DispatchSemaphore(value: 0), release: DispatchSemaphore(value: 0))
        #expect(!threads.tryRun(other), "taken while busy")
        release.signal()
        done.wait()
        other.release.signal()  // (a semaphore left below its starting value traps when freed)
        #expect(threads.tryRun(other), "turned away once free")
    }

    @Test("While the product threads are busy, a product past the threshold is computed whole, and right")
    func busyProductThreadsComputeWhole() {
        guard BLAS.productThreading == .panels else { return }
        let before = BLAS.threadCount
        defer { BLAS.threadCount = before }
        BLAS.threadCount = 2
        guard let threads = BLAS.productThreads.withLock({ $0.threads }) else {
            Issue.record("no product threads at a count of 2")
            return
        }
        // Hold the threads: a product whose two panels wait (their gemm blocks until let go). The
        // holder retries while another test's product has them.
        let (entered, release, done) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let holder = Thread {
            let x: [Float] = [1, 1]
            var y: [Float] = [0, 0]
            x.withUnsafeBytes { x in
                y.withUnsafeMutableBytes { y in
                    let work = ProductPanels(
                        transposeA: false, transposeB: false, m: 1, n: 2, k: 1, alpha: 1, a: x.baseAddress!, lda: 1, b: x.baseAddress!,
                        ldb: 2, beta: 0, c: y.baseAddress!, ldc: 2, panels: 2, elementSize: 4,
                        gemm: { _, _, _, _, _, _, _, _, _, _, _, _, _ in
                            entered.signal()
                            release.wait()
                        })
                    while !threads.tryRun(work) { Thread.sleep(forTimeInterval: 0.001) }
                }
            }
            done.signal()
        }
        holder.start()
        entered.wait()
        let (m, n, k) = (257, 263, 127)
        var generator = SeededGenerator(seed: 9)
        let (a, lda, b, ldb, start, ldc) = Self.operands(
            transposeA: false, transposeB: false, m: m, n: n, k: k, beta: Float(0), using: &generator)
        var c = start
        Float.blasGemm(transposeA: false, transposeB: false, m: m, n: n, k: k, alpha: 1, a: a, lda: lda, b: b, ldb: ldb, beta: 0, c: &c, ldc: ldc)
        release.signal()  // a panel of one column each: the second panel is empty, and never calls gemm
        done.wait()
        let expected = Self.naive(
            transposeA: false, transposeB: false, m: m, n: n, k: k, alpha: Float(1), a: a, lda: lda, b: b, ldb: ldb, beta: 0, c: start,
            ldc: ldc)
        expectClose(c, expected, tolerance: summationTolerance(Float.self, terms: k))
    }
}
