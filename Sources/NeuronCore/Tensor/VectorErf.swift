// erf over whole buffers, for GELU's forward pass. glibc's erff is a scalar call, many times the
// approximation below at the vector width: it would be most of a GELU layer's time
// (Benchmarks/README.md, “Figures behind the code”: the C library's scalar calls). For Float, a
// rational approximation with no calls and no branches, in C (Sources/CKernels/VectorLoops.h) at
// the CPU's vector width; for Double, the C library's erf. The reference beside both is the C library's erf in Double.

extension Float {
    /// erf of every element in place: `x·p(x²) / q(x²)` on x clamped to [-4, 4] (beyond which erf
    /// is ±1 in Float), the odd degree-13 / even degree-8 fit of Eigen's `generic_fast_erf_float`,
    /// at the vector width of ``Kernels/vectorLevel``.
    ///
    /// Measured against Double's erf over [-6, 6] and ±[1e-12, 1]: at most 4.3e-7 off (near
    /// |x| = 3.6; relative error at most 4.3e-7), against 4.9e-8 for libm's erff. The result is
    /// clamped to [-1, 1] (the fit reaches 1.0000002), so that GELU's `Φ = (1 + erf)/2` stays a
    /// probability. NaN stays NaN.
    public static func erf(inPlace values: UnsafeMutableBufferPointer<Float>) {
        VectorKernels.inUse.erf(values)
    }
}

extension Double {
    /// erf of every element in place, with the C library's erf (PyTorch's exact GELU in Double).
    public static func erf(inPlace values: UnsafeMutableBufferPointer<Double>) {
        for i in values.indices { values[i] = Double.libmErf(values[i]) }
    }
}
