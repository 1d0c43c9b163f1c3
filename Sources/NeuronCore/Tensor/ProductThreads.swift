// Threads by a product's size: a large product is cut into panels computed side by side, each by
// OpenBLAS on one thread; a smaller one runs whole on its caller's thread.
//
// Why not OpenBLAS's own threads. Debian's OpenBLAS 0.3.21 threads every product from 2¹⁸
// multiply-adds and allocates its job table on every threaded call (its build has MAX_THREADS=64):
// the character GRU's step (W8: 32×64·64×192 products at each position) was slower on OpenBLAS's
// two threads than on one, and allocated 21 times. With this file W4, W5 and W8 are faster and
// allocate nothing in a step; W6, whose products are 1024 wide, is the exception, a little slower
// (OpenBLAS's threads share the packing of an operand; each panel packs its own), kept for the
// allocations (8 a step) it saves (Benchmarks/README.md, “Figures behind the code”: product
// threads, for all the figures here).
//
// So OpenBLAS runs on one thread, always, and the process's product threads (`BLAS.threadCount`)
// are Neuron's: a product of ``BLAS/panelMinimumWork`` multiply-adds or more is cut along the
// longer of its two output sides into one panel per thread, whole cache lines of the output each,
// and the caller computes the first panel while the other threads (``ShareThreads``, which poll
// between products rather than sleep) compute the rest. Cutting the longer side leaves each
// thread the whole of the smaller operand to pack, as OpenBLAS's own threads do. A square output
// is cut into rows, so that each thread writes one contiguous block, the faster for W6's weight
// update (1024×128·128×1024 into the weights) and W5's step (two 256×256 outputs). Each output element
// is one thread's sum over the whole of k, but not always in the order of the whole product:
// OpenBLAS blocks a panel by its own width, so a cut other than in halves can round a product's
// last bits differently (64×512·512×512 on the Haswell kernels: two panels equal the whole, three
// or four do not). The cut is fixed by the thread count, so a run at a given count gives the same
// bits every time.
//
// The threshold, 2²³ multiply-adds, is where a cut paid on this machine in both of its moods. In
// some processes a panel's data crosses between the two cores slowly (a virtual machine whose two
// cores the host places apart): then each cut 512×192×64 product of W8 cost more than computing it
// whole, while W4–W6, whose cut products are 12.8M multiply-adds and more, gained as much at 2²³ as
// at 2¹⁸. Below it a product runs whole.
//
// `NEURON_PRODUCT_THREADS=openblas` gives the threads back to OpenBLAS (the measurement's other side).
import Foundation
import Synchronization

extension BLAS {
    /// The smallest product, in multiply-adds (m·n·k), cut into panels over the product threads.
    public static let panelMinimumWork = 1 << 23

    /// Who threads a product: Neuron, by panels, or OpenBLAS (`NEURON_PRODUCT_THREADS=openblas`).
    public enum ProductThreading: String, Sendable {
        case panels, openBLAS = "openblas"
    }

    /// The environment variable that gives the product threads back to OpenBLAS (`openblas`).
    public static let productThreadsVariable = "NEURON_PRODUCT_THREADS"

    /// How this process threads its products, read once.
    public static let productThreading: ProductThreading =
        ProcessInfo.processInfo.environment[productThreadsVariable]?.lowercased() == "openblas" ? .openBLAS : .panels

    /// OpenBLAS's thread count at load (`OPENBLAS_NUM_THREADS`, else the processors), taken once;
    /// threading by panels, OpenBLAS's own count is then set to 1.
    static let openBLASThreadsAtLoad: Int = {
        let count = Int(openBLASThreadCount)
        if productThreading == .panels { openBLASThreadCount = 1 }
        return count
    }()

    /// The product threads and their count, at first OpenBLAS's count at load.
    static let productThreads = Mutex(ProductThreads(count: min(max(1, openBLASThreadsAtLoad), maximumThreadCount)))

    /// The most threads a product may use: OpenBLAS's build here stops at 64 too.
    public static let maximumThreadCount = 64

    /// The number of threads a product may use, in the whole process. Setting it clamps to
    /// 1...``maximumThreadCount``, and starts (or stops) the threads.
    public static var threadCount: Int {
        get { productThreads.withLock { $0.count } }
        set {
            let count = min(max(1, newValue), maximumThreadCount)
            productThreads.withLock { threads in
                guard threads.count != count else { return }
                threads = ProductThreads(count: count)
            }
            if productThreading == .openBLAS { openBLASThreadCount = Int32(clamping: count) }  // clamped: a C int, not a trap
        }
    }

    /// The work from which OpenBLAS 0.3.21 threads a gemm (its `SMP_THRESHOLD_MIN` ·
    /// `GEMM_MULTITHREAD_THRESHOLD`, 65536 · 4): below it every call runs on one thread anyway.
    static let openBLASThreadingWork = 1 << 18

    /// Sets OpenBLAS to one thread (threading by panels: ``openBLASThreadsAtLoad``), for a
    /// product of ``openBLASThreadingWork`` or more that it computes whole, so that a program that
    /// never sets ``threadCount`` runs OpenBLAS on one thread too; after the first call, a load.
    @inline(__always)
    static func settleThreads() {
        _ = openBLASThreadsAtLoad
    }

    /// Whether a product of `work` multiply-adds (m·n·k) is cut into panels (when there are
    /// threads to share it): from ``panelMinimumWork``, threading by panels.
    @inline(__always)
    static func takesPanels(work: Int) -> Bool {
        work >= panelMinimumWork && productThreading == .panels
    }

    /// Computes `c = alpha·op(a)·op(b) + beta·c` in one panel per product thread, side by side,
    /// each by `gemm` (OpenBLAS on one thread); whole on the caller's thread when there is one
    /// thread, or when the threads are busy with another caller's product.
    ///
    ///     // a: (m, k) as op(a)  b: (k, n) as op(b)  c: (m, n)
    ///     // panel p: c's rows (or columns) p·width ..< (p + 1)·width, width = ⌈side / threads⌉ in whole tiles
    static func panelGemm<T: TensorScalar>(
        transposeA: Bool, transposeB: Bool, m: Int, n: Int, k: Int,
        alpha: T, a: UnsafePointer<T>, lda: Int, b: UnsafePointer<T>, ldb: Int,
        beta: T, c: UnsafeMutablePointer<T>, ldc: Int, gemm: @escaping ProductPanels.Gemm
    ) {
        let (count, threads) = productThreads.withLock { ($0.count, $0.threads) }
        let work = ProductPanels(
            transposeA: transposeA, transposeB: transposeB, m: m, n: n, k: k, alpha: Double(alpha), a: UnsafeRawPointer(a), lda: lda,
            b: UnsafeRawPointer(b), ldb: ldb, beta: Double(beta), c: UnsafeMutableRawPointer(c), ldc: ldc,
            panels: count, elementSize: MemoryLayout<T>.stride, gemm: gemm)
        if threads?.tryRun(work) != true {
            work.whole()
        }
    }
}

/// The process's product threads: `count`, the caller's included, and the other `count - 1`.
struct ProductThreads: ~Copyable {
    let count: Int
    let threads: ShareThreads<ProductPanels>?

    init(count: Int) {
        self.count = count
        threads = count > 1 && BLAS.productThreading == .panels ? ShareThreads(count: count - 1) : nil
    }
}

/// One product cut into panels, share `p` computing panel `p`, of either scalar type (one set of
/// threads serves both): the scalars are carried as Double (exact for a Float) and the operands
/// untyped, and `gemm` is the scalar type's OpenBLAS routine on one thread.
struct ProductPanels: ShareWork, @unchecked Sendable {
    /// `(transposeA, transposeB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)`, offsets in elements.
    typealias Gemm = (Bool, Bool, Int, Int, Int, Double, UnsafeRawPointer, Int, UnsafeRawPointer, Int, Double, UnsafeMutableRawPointer, Int) -> Void

    let transposeA, transposeB: Bool
    let m, n, k: Int
    let alpha: Double
    let a: UnsafeRawPointer
    let lda: Int
    let b: UnsafeRawPointer
    let ldb: Int
    let beta: Double
    let c: UnsafeMutableRawPointer
    let ldc: Int
    /// Whether the panels are c's rows (m the longer side, or as long as n) or its columns.
    let rows: Bool
    /// Each panel's rows or columns: whole cache lines of c, the last panel shorter (or empty).
    let width: Int
    /// An element's bytes.
    let stride: Int
    let gemm: Gemm

    init(
        transposeA: Bool, transposeB: Bool, m: Int, n: Int, k: Int, alpha: Double, a: UnsafeRawPointer, lda: Int,
        b: UnsafeRawPointer, ldb: Int, beta: Double, c: UnsafeMutableRawPointer, ldc: Int, panels: Int, elementSize: Int,
        gemm: @escaping Gemm
    ) {
        (self.transposeA, self.transposeB, self.m, self.n, self.k) = (transposeA, transposeB, m, n, k)
        (self.alpha, self.a, self.lda, self.b, self.ldb, self.beta, self.c, self.ldc) = (alpha, a, lda, b, ldb, beta, c, ldc)
        rows = m >= n
        let side = rows ? m : n
        let tile = 64 / elementSize  // a cache line's elements: 16 Floats, 8 Doubles
        width = ((side + panels - 1) / panels + tile - 1) / tile * tile
        stride = elementSize
        self.gemm = gemm
    }

    func run(share p: Int) {
        let start = p * width
        let side = rows ? m : n
        guard start < side else { return }
        let length = min(width, side - start)
        if rows {  // c's rows start..<start+length: a's rows (its columns when transposed)
            let aStart = transposeA ? start : start * lda
            gemm(
                transposeA, transposeB, length, n, k, alpha, a + aStart * stride, lda, b, ldb, beta,
                c + start * ldc * stride, ldc)
        } else {  // c's columns start..<start+length: b's columns (its rows when transposed)
            let bStart = transposeB ? start * ldb : start
            gemm(
                transposeA, transposeB, m, length, k, alpha, a, lda, b + bStart * stride, ldb, beta,
                c + start * stride, ldc)
        }
    }

    /// The whole product on the calling thread.
    func whole() {
        gemm(transposeA, transposeB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
    }
}
