// exp over whole buffers, for the attention's softmax and GELU's backward pass. glibc's expf is a
// scalar call that no loop around it can vectorize, a tenth of a small GPT's step in GELU's
// backward alone (Benchmarks/README.md, “Figures behind the code”: the C library's scalar calls).
// For Float, Cephes' expf with no calls and no branches, in C (Sources/CKernels/VectorLoops.h) at
// the CPU's vector width; for Double, the C library's exp. The reference beside both is the C library's exp in Double.

extension Float {
    /// exp of every element in place: `x = n·ln 2 + r` with `n` whole and `|r| ≤ ln 2 / 2`, then
    /// `e^r` by Cephes' degree-7 polynomial and `2^n` written into the exponent bits, at the
    /// vector width of ``Kernels/vectorLevel``.
    ///
    /// Measured against Double's exp over [-87.3, 88.3] in steps of 1e-4: within 1 unit in the
    /// last place (relative error at most 8.0e-8, near x = -81.4), against 0.5 ulp for libm's expf. Below -87.33 (where e^x
    /// leaves Float's normal range) it gives 0, above 88.37 infinity; NaN stays NaN.
    public static func exp(inPlace values: UnsafeMutableBufferPointer<Float>) {
        VectorKernels.inUse.exp(values)
    }
}

extension Double {
    /// exp of every element in place, with the C library's exp.
    public static func exp(inPlace values: UnsafeMutableBufferPointer<Double>) {
        for i in values.indices { values[i] = Double.libmExp(values[i]) }
    }
}
