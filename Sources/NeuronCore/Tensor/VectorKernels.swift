// The one seam between Swift and the C kernels of Sources/CKernels: Float's element-wise loops
// (exp, erf, tanh over a buffer; GELU's, layer normalization's and Adam's passes), compiled there
// once per x86-64 vector width and chosen at run time. Swift builds NeuronCore for baseline x86-64, SSE2's four lanes; a CPU with AVX-512 has
// sixteen, which a Swift loop cannot use without flags that a package dependency may not set.
// No other file imports CKernels: the `TensorScalar` witnesses (Tensor/VectorExp.swift,
// VectorErf.swift, VectorTanh.swift, and Float's fused passes at the end of this file) call the
// wrappers below.
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
        table.pointee.exp_f32(
            values.baseAddress,  // x, in place
            values.count)  // n
    }

    /// erf of every element in place.
    func erf(_ values: UnsafeMutableBufferPointer<Float>) {
        table.pointee.erf_f32(
            values.baseAddress,  // x, in place
            values.count)  // n
    }

    /// tanh of every element in place.
    func tanh(_ values: UnsafeMutableBufferPointer<Float>) {
        table.pointee.tanh_f32(
            values.baseAddress,  // x, in place
            values.count)  // n
    }

    /// GELU forward in one pass: `gate = Φ(x)` (or its tanh form), `y = x·gate`.
    ///
    ///     // x, gate, y: (n)
    func geluForward(
        _ x: UnsafeBufferPointer<Float>, approximation: GELUApproximation, gate: UnsafeMutableBufferPointer<Float>,
        into y: UnsafeMutableBufferPointer<Float>
    ) {
        precondition(gate.count >= x.count && y.count >= x.count, "GELU: gate and y hold fewer than x's \(x.count)")
        table.pointee.gelu_forward_f32(
            x.baseAddress,  // x
            approximation == .tanh ? 1 : 0,  // tanh_form
            gate.baseAddress,  // gate
            y.baseAddress,  // y
            x.count)  // n
    }

    /// GELU backward in one pass from the saved gate: `dx = dy·(gate + x·gate′)`.
    ///
    ///     // x, gate, dy, dx: (n); dx may alias dy
    func geluBackward(
        _ x: UnsafeBufferPointer<Float>, gate: UnsafeBufferPointer<Float>, outputGradient dy: UnsafeBufferPointer<Float>,
        approximation: GELUApproximation, into dx: UnsafeMutableBufferPointer<Float>
    ) {
        precondition(gate.count >= x.count && dy.count >= x.count && dx.count >= x.count, "GELU: buffers shorter than x's \(x.count)")
        table.pointee.gelu_backward_f32(
            x.baseAddress,  // x
            gate.baseAddress,  // gate
            dy.baseAddress,  // dy
            approximation == .tanh ? 1 : 0,  // tanh_form
            dx.baseAddress,  // dx (may be dy)
            x.count)  // n
    }

    /// Layer normalization over each row of `weight.count` features.
    ///
    ///     // x, y: (rows, features)  weight, bias: (features)  mean, inverseDeviation: (rows)
    func layerNormForward(
        _ x: UnsafeBufferPointer<Float>, weight: UnsafeBufferPointer<Float>, bias: UnsafeBufferPointer<Float>,
        epsilon: Double, mean: UnsafeMutableBufferPointer<Float>, inverseDeviation s: UnsafeMutableBufferPointer<Float>,
        into y: UnsafeMutableBufferPointer<Float>
    ) {
        let features = weight.count
        guard features > 0 else { return }
        let rows = x.count / features
        precondition(
            bias.count == features && y.count >= x.count && mean.count >= rows && s.count >= rows,
            "layer norm: buffers too short for \(rows) rows of \(features)")
        table.pointee.layer_norm_forward_f32(
            x.baseAddress,  // x
            weight.baseAddress,  // weight
            bias.baseAddress,  // bias
            Float(epsilon),  // epsilon
            rows,  // rows
            features,  // features
            mean.baseAddress,  // mean
            s.baseAddress,  // inverse_deviation
            y.baseAddress)  // y
    }

    /// Layer normalization's backward pass: adds into the parameter gradients, writes `dx` if given.
    ///
    ///     // x, dy, dx: (rows, features)  weight, weightGradient, biasGradient: (features)  mean, inverseDeviation: (rows)
    func layerNormBackward(
        _ x: UnsafeBufferPointer<Float>, outputGradient dy: UnsafeBufferPointer<Float>, weight: UnsafeBufferPointer<Float>,
        mean: UnsafeBufferPointer<Float>, inverseDeviation s: UnsafeBufferPointer<Float>,
        weightGradient: UnsafeMutableBufferPointer<Float>, biasGradient: UnsafeMutableBufferPointer<Float>,
        into dx: UnsafeMutableBufferPointer<Float>?
    ) {
        let features = weight.count
        guard features > 0 else { return }
        let rows = x.count / features
        precondition(
            dy.count >= x.count && mean.count >= rows && s.count >= rows && weightGradient.count >= features
                && biasGradient.count >= features && (dx?.count ?? x.count) >= x.count,
            "layer norm backward: buffers too short for \(rows) rows of \(features)")
        table.pointee.layer_norm_backward_f32(
            x.baseAddress,  // x
            dy.baseAddress,  // dy
            weight.baseAddress,  // weight
            mean.baseAddress,  // mean
            s.baseAddress,  // inverse_deviation
            rows,  // rows
            features,  // features
            weightGradient.baseAddress,  // dweight, added into
            biasGradient.baseAddress,  // dbias, added into
            dx?.baseAddress)  // dx, or NULL: no input gradient
    }

    /// One Adam (or AdamW) step.
    ///
    ///     // p, g, m, v: (n)
    func adamUpdate(
        parameters p: UnsafeMutableBufferPointer<Float>, gradients g: UnsafeBufferPointer<Float>,
        m: UnsafeMutableBufferPointer<Float>, v: UnsafeMutableBufferPointer<Float>, step: AdamStep<Float>
    ) {
        precondition(g.count >= p.count && m.count >= p.count && v.count >= p.count, "Adam: buffers shorter than the \(p.count) parameters")
        var constants = ck_adam_step(
            step_size: step.stepSize, inverse_root_correction2: step.inverseRootCorrection2,
            beta1: step.beta1, beta2: step.beta2, epsilon: step.epsilon, l2: step.l2, shrink: step.shrink)
        table.pointee.adam_update_f32(
            p.baseAddress,  // p
            g.baseAddress,  // g
            m.baseAddress,  // m
            v.baseAddress,  // v
            p.count,  // n
            &constants)  // step
    }
}

// Float's fused passes: the C loops at the level in use (Double's are the kernels' Swift loops).
extension Float {
    public static func geluForward(
        _ x: UnsafeBufferPointer<Float>, approximation: GELUApproximation, gate: UnsafeMutableBufferPointer<Float>,
        into y: UnsafeMutableBufferPointer<Float>
    ) {
        VectorKernels.inUse.geluForward(x, approximation: approximation, gate: gate, into: y)
    }

    public static func geluBackward(
        _ x: UnsafeBufferPointer<Float>, gate: UnsafeBufferPointer<Float>, outputGradient dy: UnsafeBufferPointer<Float>,
        approximation: GELUApproximation, into dx: UnsafeMutableBufferPointer<Float>
    ) {
        VectorKernels.inUse.geluBackward(x, gate: gate, outputGradient: dy, approximation: approximation, into: dx)
    }

    public static func layerNormForward(
        _ x: UnsafeBufferPointer<Float>, weight: UnsafeBufferPointer<Float>, bias: UnsafeBufferPointer<Float>,
        epsilon: Double, mean: UnsafeMutableBufferPointer<Float>, inverseDeviation s: UnsafeMutableBufferPointer<Float>,
        into y: UnsafeMutableBufferPointer<Float>
    ) {
        VectorKernels.inUse.layerNormForward(x, weight: weight, bias: bias, epsilon: epsilon, mean: mean, inverseDeviation: s, into: y)
    }

    public static func layerNormBackward(
        _ x: UnsafeBufferPointer<Float>, outputGradient dy: UnsafeBufferPointer<Float>, weight: UnsafeBufferPointer<Float>,
        mean: UnsafeBufferPointer<Float>, inverseDeviation s: UnsafeBufferPointer<Float>,
        weightGradient: UnsafeMutableBufferPointer<Float>, biasGradient: UnsafeMutableBufferPointer<Float>,
        into dx: UnsafeMutableBufferPointer<Float>?
    ) {
        VectorKernels.inUse.layerNormBackward(
            x, outputGradient: dy, weight: weight, mean: mean, inverseDeviation: s,
            weightGradient: weightGradient, biasGradient: biasGradient, into: dx)
    }

    public static func adamUpdate(
        parameters p: UnsafeMutableBufferPointer<Float>, gradients g: UnsafeBufferPointer<Float>,
        m: UnsafeMutableBufferPointer<Float>, v: UnsafeMutableBufferPointer<Float>, step: AdamStep<Float>
    ) {
        VectorKernels.inUse.adamUpdate(parameters: p, gradients: g, m: m, v: v, step: step)
    }
}
