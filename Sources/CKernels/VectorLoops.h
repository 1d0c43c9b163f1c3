// The loops of every level, included once per level by Dispatch.c between a pragma that gives each
// function the level's target and a definition of `CK_LEVEL(name)` that names its copy. Written
// plainly, branch-free (clamps and selects), so that clang's loop vectorizer widens each loop to
// the level's registers; the algorithms are those the Swift code used, constant for constant.

// Float's bits and back, without aliasing trouble (compiles to a register move).
static inline unsigned CK_LEVEL(bits)(float x) {
    unsigned u;
    __builtin_memcpy(&u, &x, sizeof u);
    return u;
}

static inline float CK_LEVEL(from_bits)(unsigned u) {
    float x;
    __builtin_memcpy(&x, &u, sizeof x);
    return x;
}

// e^x: `x = n·ln 2 + r` with `n` whole and `|r| ≤ ln 2 / 2`, then `e^r` by Cephes' degree-7
// polynomial and `2^n` written into the exponent bits. Against Double's exp over [-87.3, 88.3]:
// relative error at most 8.0e-8 (within 1 ulp). Below -87.33654 (where e^x leaves Float's normal
// range) 0, above 88.37626 infinity; NaN stays NaN.
static void CK_LEVEL(exp_f32)(float *restrict values, size_t n) {
    const float low = -87.33654f, high = 88.37626f;
    const float log2e = 1.44269504088896341f, ln2_high = 0.693359375f, ln2_low = -2.12194440e-4f;
    // 1.5·2^23: adding it rounds to a whole number (to nearest, ties to even) and leaves that
    // number in the low bits of the sum's significand, so that no conversion is needed
    const float shifter = 12582912.0f;
    const unsigned shifter_bits = 0x4B400000u;
    const float p0 = 1.9875691500e-4f, p1 = 1.3981999507e-3f, p2 = 8.3334519073e-3f;
    const float p3 = 4.1665795894e-2f, p4 = 1.6666665459e-1f, p5 = 5.0000001201e-1f;
    for (size_t i = 0; i < n; i++) {
        float x = values[i];
        float clamped = x < low ? low : (x > high ? high : x);  // NaN passes through, restored below
        float shifted = clamped * log2e + shifter;
        float k = shifted - shifter;
        float r = (clamped - k * ln2_high) - k * ln2_low;
        float r2 = r * r;
        float p = r * p0 + p1;
        p = r * p + p2;
        p = r * p + p3;
        p = r * p + p4;
        p = r * p + p5;
        p = p * r2 + r + 1.0f;
        // 2^k: k + 127 in the exponent field (k in -126...127 after the clamp)
        float scale = CK_LEVEL(from_bits)((CK_LEVEL(bits)(shifted) - shifter_bits + 127u) << 23);
        float y = p * scale;
        values[i] = x < low ? 0.0f : (x > high ? __builtin_inff() : (x == x ? y : x));
    }
}

// erf: `x·p(x²) / q(x²)` on x clamped to [-4, 4] (beyond which erf is ±1 in Float), the odd
// degree-13 / even degree-8 fit of Eigen's `generic_fast_erf_float`. Against Double's erf: at most
// 4.3e-7 off (near |x| = 3.6), relative error at most 4.3e-7. Clamped to [-1, 1] (the fit reaches
// 1.0000002), so that GELU's `Φ = (1 + erf)/2` stays a probability. NaN stays NaN.
static inline float CK_LEVEL(erf1)(float x) {
    const float a1 = -1.60960333262415e-02f, a3 = -2.95459980854025e-03f, a5 = -7.34990630326855e-04f;
    const float a7 = -5.69250639462346e-05f, a9 = -2.10102402082508e-06f, a11 = 2.77068142495902e-08f;
    const float a13 = -2.72614225801306e-10f;
    const float b0 = -1.42647390514189e-02f, b2 = -7.37332916720468e-03f, b4 = -1.68282697438203e-03f;
    const float b6 = -2.13374055278905e-04f, b8 = -1.45660718464996e-05f;
    x = x < -4.0f ? -4.0f : (x > 4.0f ? 4.0f : x);  // comparisons with NaN are false: NaN passes through
    float x2 = x * x;
    float p = x2 * a13 + a11;
    p = x2 * p + a9;
    p = x2 * p + a7;
    p = x2 * p + a5;
    p = x2 * p + a3;
    p = x2 * p + a1;
    p = x * p;
    float q = x2 * b8 + b6;
    q = x2 * q + b4;
    q = x2 * q + b2;
    q = x2 * q + b0;
    float y = p / q;
    return y < -1.0f ? -1.0f : (y > 1.0f ? 1.0f : y);
}

static void CK_LEVEL(erf_f32)(float *restrict values, size_t n) {
    for (size_t i = 0; i < n; i++) values[i] = CK_LEVEL(erf1)(values[i]);
}

// tanh: `x·p(x²) / q(x²)` on x clamped to [-9, 9] (beyond which tanh is ±1 in Float), the odd
// degree-13 / even degree-6 fit of Eigen's `generic_fast_tanh_float`. Against Double's tanh: at
// most 3.95e-7 off (6.6 ulp), clamped to [-1, 1] so that tanh's derivative `1 - y²` stays ≥ 0.
// NaN stays NaN.
static inline float CK_LEVEL(tanh1)(float x) {
    const float a1 = 4.89352455891786e-03f, a3 = 6.37261928875436e-04f, a5 = 1.48572235717979e-05f;
    const float a7 = 5.12229709037114e-08f, a9 = -8.60467152213735e-11f, a11 = 2.00018790482477e-13f;
    const float a13 = -2.76076847742355e-16f;
    const float b0 = 4.89352518554385e-03f, b2 = 2.26843463243900e-03f, b4 = 1.18534705686654e-04f;
    const float b6 = 1.19825839466702e-06f;
    x = x < -9.0f ? -9.0f : (x > 9.0f ? 9.0f : x);  // comparisons with NaN are false: NaN passes through
    float x2 = x * x;
    float p = x2 * a13 + a11;
    p = x2 * p + a9;
    p = x2 * p + a7;
    p = x2 * p + a5;
    p = x2 * p + a3;
    p = x2 * p + a1;
    p = x * p;
    float q = x2 * b6 + b4;
    q = x2 * q + b2;
    q = x2 * q + b0;
    float y = p / q;
    return y < -1.0f ? -1.0f : (y > 1.0f ? 1.0f : y);
}

static void CK_LEVEL(tanh_f32)(float *restrict values, size_t n) {
    for (size_t i = 0; i < n; i++) values[i] = CK_LEVEL(tanh1)(values[i]);
}

static const ck_kernels CK_LEVEL(kernels) = {
    .level = CK_LEVEL_VALUE,
    .exp_f32 = CK_LEVEL(exp_f32),
    .erf_f32 = CK_LEVEL(erf_f32),
    .tanh_f32 = CK_LEVEL(tanh_f32),
};
