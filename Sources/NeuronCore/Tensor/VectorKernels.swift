// The one seam between Swift and the C kernels of Sources/CKernels: Float's element-wise loops
// (exp, erf, tanh over a buffer), compiled there once per x86-64 vector width and chosen at run
// time. Swift builds NeuronCore for baseline x86-64, SSE2's four lanes; a CPU with AVX-512 has
// sixteen, which a Swift loop cannot use without flags that a package dependency may not set.
// No other file imports CKernels: the `TensorScalar` witnesses (Tensor/VectorExp.swift,
// VectorErf.swift, VectorTanh.swift) call the wrappers below.
import CKernels

/// A vector width that Float's element-wise kernels are compiled for, from the baseline every
/// x86-64 CPU has to AVX-512; other architectures have the baseline alone.
public enum VectorLevel: Int, Comparable, CaseIterable, Sendable, CustomStringConvertible {
    /// What the architecture always has (on x86-64, SSE2: 4 Floats a register).
    case baseline = 0
    /// AVX2 with FMA (8 Floats).
    case avx2 = 1
    /// AVX-512 F, DQ, BW and VL, with FMA (16 Floats).
    case avx512 = 2

    /// The widest level this CPU and its operating system run.
    public static var supported: VectorLevel { VectorLevel(ck_supported_level()) }

    /// The levels this machine runs, narrowest first.
    public static var runnable: [VectorLevel] { allCases.filter { $0 <= supported } }

    public var description: String {
        switch self {
        case .baseline:
            #if arch(x86_64)
            "SSE2 (baseline x86-64)"
            #else
            "baseline"
            #endif
        case .avx2: "AVX2"
        case .avx512: "AVX-512"
        }
    }

    public static func < (a: VectorLevel, b: VectorLevel) -> Bool { a.rawValue < b.rawValue }

    init(_ level: ck_level) { self = VectorLevel(rawValue: Int(level.rawValue)) ?? .baseline }

    var cLevel: ck_level { ck_level(rawValue: UInt32(rawValue)) }
}

extension Kernels {
    /// The vector width Float's element-wise kernels run at: the widest the CPU supports unless
    /// set lower (setting a level the CPU lacks gives the widest it has). Process-wide; every
    /// width gives results within the kernels' documented accuracy, not the same bits.
    public static var vectorLevel: VectorLevel {
        get { VectorLevel(ck_level_in_use()) }
        set { _ = ck_set_level(newValue.cLevel) }
    }

    /// One line for a benchmark's or a run's machine description: `element-wise kernels: AVX-512`.
    public static var vectorSummary: String { "element-wise kernels: \(vectorLevel)" }
}

/// One level's C kernels, over Swift's buffers. Production code uses ``inUse``; the tests build
/// one for each level the machine runs.
struct VectorKernels {
    let table: UnsafePointer<ck_kernels>

    /// The kernels of `level`, or of the widest level the CPU has if it lacks `level`.
    init(_ level: VectorLevel) { table = ck_kernels_at(level.cLevel) }

    /// The kernels of ``Kernels/vectorLevel``.
    static var inUse: VectorKernels { VectorKernels(Kernels.vectorLevel) }

    /// The level these kernels were compiled for.
    var level: VectorLevel { VectorLevel(table.pointee.level) }

    /// e^x of every element in place.
    func exp(_ values: UnsafeMutableBufferPointer<Float>) {
        table.pointee.exp_f32(values.baseAddress, values.count)
    }

    /// erf of every element in place.
    func erf(_ values: UnsafeMutableBufferPointer<Float>) {
        table.pointee.erf_f32(values.baseAddress, values.count)
    }

    /// tanh of every element in place.
    func tanh(_ values: UnsafeMutableBufferPointer<Float>) {
        table.pointee.tanh_f32(values.baseAddress, values.count)
    }
}
