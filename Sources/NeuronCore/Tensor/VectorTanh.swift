// tanh over whole buffers. glibc's tanhf is a scalar call; in a tanh layer it was most of a
// 64-128-10 training step (Benchmarks/README.md, “Figures behind the code”: the C library's scalar
// calls). For Float, a rational approximation with no calls and no branches, in C
// (Sources/CKernels/VectorLoops.h) at the CPU's vector width; for Double, the C library's tanh, on which Docs/Reference.md §1–3's exact numbers depend. The reference beside both is the C
// library's scalar tanh.

extension Float {
    /// tanh of every element in place: `x·p(x²) / q(x²)` on x clamped to [-9, 9] (beyond which
    /// tanh is ±1 in Float), the odd degree-13 / even degree-6 fit of Eigen's `generic_fast_tanh_float`,
    /// at the vector width of ``Kernels/vectorLevel``.
    ///
    /// Measured against Double's tanh over [-12, 12] and ±[1e-12, 1]: at most 3.95e-7 off
    /// (6.6 units in the last place; relative error at most 3.95e-7), against 1.4 ulp for libm's
    /// tanhf. The result is clamped to [-1, 1], so that tanh's derivative `1 - y²` stays ≥ 0.
    /// NaN stays NaN.
    public static func tanh(inPlace values: UnsafeMutableBufferPointer<Float>) {
        VectorKernels.inUse.tanh(values)
    }
}

extension Double {
    /// tanh of every element in place, with the C library's tanh (Docs/Reference.md's exact numbers).
    public static func tanh(inPlace values: UnsafeMutableBufferPointer<Double>) {
        for i in values.indices { values[i] = Double.libmTanh(values[i]) }
    }
}
