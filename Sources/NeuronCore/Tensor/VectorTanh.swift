// tanh over whole buffers. glibc's tanhf is a scalar call of ~15 ns; in a tanh layer it was most
// of a 64-128-10 training step. For Float, a rational approximation with no calls and no branches
// that the compiler vectorizes; for Double, the C library's tanh, on which Docs/Reference.md §1–3's exact
// numbers depend. The reference beside both is the C library's scalar tanh.

extension Float {
    /// tanh of every element in place: `x·p(x²) / q(x²)` on x clamped to [-9, 9] (beyond which
    /// tanh is ±1 in Float), the odd degree-13 / even degree-6 fit of Eigen's `generic_fast_tanh_float`.
    ///
    /// Measured against Double's tanh over [-12, 12] and ±[1e-12, 1]: at most 3.95e-7 off
    /// (6.6 units in the last place; relative error at most 3.95e-7), against 1.4 ulp for libm's
    /// tanhf. The result is clamped to [-1, 1], so that tanh's derivative `1 - y²` stays ≥ 0.
    /// NaN stays NaN.
    public static func tanh(inPlace values: UnsafeMutableBufferPointer<Float>) {
        let a1: Float = 4.89352455891786e-03, a3: Float = 6.37261928875436e-04, a5: Float = 1.48572235717979e-05
        let a7: Float = 5.12229709037114e-08, a9: Float = -8.60467152213735e-11, a11: Float = 2.00018790482477e-13
        let a13: Float = -2.76076847742355e-16
        let b0: Float = 4.89352518554385e-03, b2: Float = 2.26843463243900e-03, b4: Float = 1.18534705686654e-04
        let b6: Float = 1.19825839466702e-06
        for i in values.indices {
            var x = values[i]
            x = x < -9 ? -9 : (x > 9 ? 9 : x)  // comparisons with NaN are false: NaN passes through
            let x2 = x * x
            var p = x2 * a13 + a11
            p = x2 * p + a9
            p = x2 * p + a7
            p = x2 * p + a5
            p = x2 * p + a3
            p = x2 * p + a1
            p = x * p
            var q = x2 * b6 + b4
            q = x2 * q + b2
            q = x2 * q + b0
            let y = p / q
            values[i] = y < -1 ? -1 : (y > 1 ? 1 : y)
        }
    }
}

extension Double {
    /// tanh of every element in place, with the C library's tanh (Docs/Reference.md's exact numbers).
    public static func tanh(inPlace values: UnsafeMutableBufferPointer<Double>) {
        for i in values.indices { values[i] = Double.libmTanh(values[i]) }
    }
}
