#ifndef CKERNELS_H
#define CKERNELS_H
#include <stddef.h>

// Float's element-wise kernels, compiled three times, once per vector width of x86-64 (AVX-512,
// AVX2 with FMA, and the baseline SSE2 every x86-64 has), and dispatched at run time: Swift builds
// NeuronCore for the baseline, four lanes, where this CPU may have sixteen. Other architectures get
// the baseline alone. Each call goes through a level's table (`ck_kernels`); the level in use is
// the best this CPU and its OS run unless `ck_set_level` chose a lower one.

/// A vector width the kernels are compiled for.
typedef enum ck_level {
    CK_BASELINE = 0,  ///< what the architecture always has (on x86-64, SSE2: 4 Floats)
    CK_AVX2 = 1,      ///< AVX2 and FMA (8 Floats)
    CK_AVX512 = 2,    ///< AVX-512 F, DQ, BW, VL and FMA (16 Floats)
} ck_level;

/// Adam's constants for one step (Swift's `AdamStep<Float>`).
typedef struct ck_adam_step {
    float step_size;                 ///< lr / (1 - β1^t)
    float inverse_root_correction2;  ///< 1 / √(1 - β2^t)
    float beta1, beta2, epsilon;
    float l2;      ///< Adam's L2 coefficient added to the gradient (0 for AdamW)
    float shrink;  ///< AdamW's 1 - lr·λ (1 for Adam)
} ck_adam_step;

/// One level's kernels. Every `n` counts elements; every buffer is contiguous.
typedef struct ck_kernels {
    ck_level level;
    /// e^x of every element in place (Cephes' expf: within 1 ulp; 0 below -87.34, ∞ above 88.38).
    void (*exp_f32)(float *x, size_t n);
    /// erf of every element in place (Eigen's rational fit: within 4.3e-7, clamped to [-1, 1]).
    void (*erf_f32)(float *x, size_t n);
    /// tanh of every element in place (Eigen's rational fit: within 4e-7, clamped to [-1, 1]).
    void (*tanh_f32)(float *x, size_t n);
    /// GELU forward in one pass, `gate` = Φ(x) (or its tanh form when `tanh_form`), `y = x·gate`.
    void (*gelu_forward_f32)(const float *x, int tanh_form, float *gate, float *y, size_t n);
    /// GELU backward in one pass from the saved gate: `dx = dy·(gate + x·gate′)`; `dx` may alias `dy`.
    void (*gelu_backward_f32)(const float *x, const float *gate, const float *dy, int tanh_form, float *dx, size_t n);
    /// Layer normalization over each row's `features`, keeping each row's mean and 1/√(var + ε).
    void (*layer_norm_forward_f32)(
        const float *x, const float *weight, const float *bias, float epsilon, size_t rows, size_t features,
        float *mean, float *inverse_deviation, float *y);
    /// Layer normalization's backward pass: adds into `dweight` and `dbias`; `dx` (may be NULL) overwritten.
    void (*layer_norm_backward_f32)(
        const float *x, const float *dy, const float *weight, const float *mean, const float *inverse_deviation,
        size_t rows, size_t features, float *dweight, float *dbias, float *dx);
    /// One Adam (AdamW) step over `n` parameters, their gradients and moments.
    void (*adam_update_f32)(float *p, const float *g, float *m, float *v, size_t n, const ck_adam_step *step);
} ck_kernels;

/// The best level this CPU and its operating system run.
ck_level ck_supported_level(void);
/// The level the kernels run at: the supported one, unless `ck_set_level` chose another.
ck_level ck_level_in_use(void);
/// Makes `level` (at most the supported one) the level in use, and returns it.
ck_level ck_set_level(ck_level level);
/// A level's kernels (at most the supported level's), for the tests that run every level.
const ck_kernels *ck_kernels_at(ck_level level);
/// The kernels of the level in use.
const ck_kernels *ck_kernels_in_use(void);

#endif
