// The loops of every level, included once per level by Dispatch.c between a pragma that gives each
// function the level's target and a definition of `CK_LEVEL(name)` that names its copy. Written
// plainly, branch-free (clamps and selects), so that clang's loop vectorizer widens each loop to
// the level's registers. Their accuracy is documented on the Swift functions that call them
// (Tensor/VectorExp.swift, VectorErf.swift, VectorTanh.swift) and checked by VectorKernelsTests.

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
static inline float CK_LEVEL(exp1)(float x) {
    const float low = -87.33654f, high = 88.37626f;
    const float log2e = 1.44269504088896341f, ln2_high = 0.693359375f, ln2_low = -2.12194440e-4f;
    // 1.5·2^23: adding it rounds to a whole number (to nearest, ties to even) and leaves that
    // number in the low bits of the sum's significand, so that no conversion is needed
    const float shifter = 12582912.0f;
    const unsigned shifter_bits = 0x4B400000u;
    const float p0 = 1.9875691500e-4f, p1 = 1.3981999507e-3f, p2 = 8.3334519073e-3f;
    const float p3 = 4.1665795894e-2f, p4 = 1.6666665459e-1f, p5 = 5.0000001201e-1f;
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
    return x < low ? 0.0f : (x > high ? __builtin_inff() : (x == x ? y : x));
}

static void CK_LEVEL(exp_f32)(float *restrict values, size_t n) {
    for (size_t i = 0; i < n; i++) values[i] = CK_LEVEL(exp1)(values[i]);
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

// GELU, `y = x·gate`, in one pass: the exact form's `gate = Φ(x) = (1 + erf(x/√2)) / 2`, or the
// tanh form's `gate = (1 + tanh(u)) / 2` with `u = √(2/π)·(x + 0.044715·x³)`; the arithmetic of
// Kernels.geluForwardLoops (Double's), which runs it in three passes around the buffer erf or tanh.
//     x, gate, y: (n)
static void CK_LEVEL(gelu_forward_f32)(const float *x, int tanh_form, float *gate, float *y, size_t n) {
    if (tanh_form) {
        const float c = 0.79788456080286535588f, a = 0.044715f;  // √(2/π), and the cubic's coefficient
        for (size_t i = 0; i < n; i++) {
            float v = x[i];
            float s = 0.5f * (1.0f + CK_LEVEL(tanh1)(c * (v + a * v * v * v)));
            gate[i] = s;
            y[i] = v * s;
        }
    } else {
        const float inverse_sqrt2 = 0.70710678118654752440f;
        for (size_t i = 0; i < n; i++) {
            float v = x[i];
            float s = 0.5f * (1.0f + CK_LEVEL(erf1)(v * inverse_sqrt2));
            gate[i] = s;
            y[i] = v * s;
        }
    }
}

// GELU backward from the saved gate, in one pass: `dx = dy·(gate + x·gate′)`; exact,
// `gate′ = e^(-x²/2)/√(2π)`; tanh form, `gate′ = 2·gate·(1 - gate)·√(2/π)·(1 + 3·0.044715·x²)`.
//     x, gate, dy, dx: (n); dx may alias dy (each dy is read before its dx is written)
static void CK_LEVEL(gelu_backward_f32)(
    const float *x, const float *gate, const float *dy, int tanh_form, float *dx, size_t n) {
    if (tanh_form) {
        const float c = 0.79788456080286535588f, a3 = 3 * 0.044715f;
        for (size_t i = 0; i < n; i++) {
            float v = x[i], s = gate[i];
            dx[i] = dy[i] * (s + v * 2.0f * s * (1.0f - s) * c * (1.0f + a3 * v * v));
        }
    } else {
        const float inverse_sqrt_2pi = 0.39894228040143267794f;
        for (size_t i = 0; i < n; i++) {
            float v = x[i];
            float e = CK_LEVEL(exp1)(-0.5f * v * v);
            dx[i] = dy[i] * (gate[i] + v * inverse_sqrt_2pi * e);
        }
    }
}

// A row's sums in any order, so that they vectorize: `reassociate` lets clang split each sum over
// the lanes (and a few registers) of the level, where C's order would be one chain of additions.
// The order differs per level; every level's rounding stays within that of a sum of `n` terms.
static inline float CK_LEVEL(row_sum)(const float *x, size_t n) {
#pragma clang fp reassociate(on)
    float sum = 0.0f;
    for (size_t j = 0; j < n; j++) sum += x[j];
    return sum;
}

// Layer normalization over each row of `features`: `x̂ = (x - mean)·s`, `s = 1/√(var + ε)`,
// `y = weight·x̂ + bias`, the mean and `s` kept; two passes for the variance, as PyTorch's.
//     x, y: (rows, features)  weight, bias: (features)  mean, inverse_deviation: (rows)
static void CK_LEVEL(layer_norm_forward_f32)(
    const float *x, const float *weight, const float *bias, float epsilon, size_t rows, size_t features,
    float *mean, float *inverse_deviation, float *y) {
#pragma clang fp reassociate(on)
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * features;
        float *yr = y + r * features;
        float m = CK_LEVEL(row_sum)(xr, features) / (float)features;
        float squares = 0.0f;
        for (size_t j = 0; j < features; j++) squares += (xr[j] - m) * (xr[j] - m);
        float s = 1.0f / __builtin_elementwise_sqrt(squares / (float)features + epsilon);
        for (size_t j = 0; j < features; j++) yr[j] = (xr[j] - m) * s * weight[j] + bias[j];
        mean[r] = m;
        inverse_deviation[r] = s;
    }
}

// Layer normalization's backward pass, `x̂` recomputed from `x`, the mean and `s`:
// `dweight += Σ dy·x̂`, `dbias += Σ dy` over the rows, and when `dx` is given
// `dx = s·(g - mean(g) - x̂·mean(g·x̂))` with `g = dy·weight`.
//     x, dy, dx: (rows, features)  weight, dweight, dbias: (features)  mean, inverse_deviation: (rows)
static void CK_LEVEL(layer_norm_backward_f32)(
    const float *x, const float *dy, const float *weight, const float *mean, const float *inverse_deviation,
    size_t rows, size_t features, float *dweight, float *dbias, float *dx) {
#pragma clang fp reassociate(on)
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * features, *dyr = dy + r * features;
        float m = mean[r], s = inverse_deviation[r];
        for (size_t j = 0; j < features; j++) {
            dweight[j] += dyr[j] * ((xr[j] - m) * s);
            dbias[j] += dyr[j];
        }
        if (!dx) continue;
        float sum_g = 0.0f, sum_gx = 0.0f;
        for (size_t j = 0; j < features; j++) {
            float g = dyr[j] * weight[j];
            sum_g += g;
            sum_gx += g * ((xr[j] - m) * s);
        }
        float mean_g = sum_g / (float)features, mean_gx = sum_gx / (float)features;
        float *dxr = dx + r * features;
        for (size_t j = 0; j < features; j++) dxr[j] = s * (dyr[j] * weight[j] - mean_g - (xr[j] - m) * s * mean_gx);
    }
}

// One Adam (or AdamW) step, the bias corrections folded into `step_size` and
// `inverse_root_correction2`: `m ← β1·m + (1-β1)·d`, `v ← β2·v + (1-β2)·d²`,
// `p ← shrink·p - step_size·m / (√v·inverse_root_correction2 + ε)`, `d = g + l2·p`.
//     p, g, m, v: (n)
static void CK_LEVEL(adam_update_f32)(
    float *restrict p, const float *restrict g, float *restrict m, float *restrict v, size_t n,
    const ck_adam_step *step) {
    // No fused multiply-adds: every level then rounds as the Swift loop (Kernels.adamUpdateLoop)
    // does, so a run's parameters do not depend on the CPU (the loop is bound by memory anyway).
#pragma clang fp contract(off)
    const float beta1 = step->beta1, beta2 = step->beta2, epsilon = step->epsilon;
    const float one_minus_beta1 = 1.0f - beta1, one_minus_beta2 = 1.0f - beta2;
    const float l2 = step->l2, shrink = step->shrink;
    const float step_size = step->step_size, inverse_root_correction2 = step->inverse_root_correction2;
    for (size_t i = 0; i < n; i++) {
        float pi = p[i], d = g[i];
        d = l2 != 0.0f ? d + l2 * pi : d;
        pi = shrink != 1.0f ? pi * shrink : pi;
        float mi = beta1 * m[i] + one_minus_beta1 * d;
        float vi = beta2 * v[i] + one_minus_beta2 * d * d;
        m[i] = mi;
        v[i] = vi;
        // v ≥ 0: the square root without the C library's errno path, so that the loop vectorizes
        p[i] = pi - step_size * mi / (__builtin_elementwise_sqrt(vi) * inverse_root_correction2 + epsilon);
    }
}

static const ck_kernels CK_LEVEL(kernels) = {
    .level = CK_LEVEL_VALUE,
    .exp_f32 = CK_LEVEL(exp_f32),
    .erf_f32 = CK_LEVEL(erf_f32),
    .tanh_f32 = CK_LEVEL(tanh_f32),
    .gelu_forward_f32 = CK_LEVEL(gelu_forward_f32),
    .gelu_backward_f32 = CK_LEVEL(gelu_backward_f32),
    .layer_norm_forward_f32 = CK_LEVEL(layer_norm_forward_f32),
    .layer_norm_backward_f32 = CK_LEVEL(layer_norm_backward_f32),
    .adam_update_f32 = CK_LEVEL(adam_update_f32),
};
