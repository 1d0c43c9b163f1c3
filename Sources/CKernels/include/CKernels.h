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

/// One level's kernels. Every `n` counts elements; every buffer is contiguous.
typedef struct ck_kernels {
    ck_level level;
    /// e^x of every element in place (Cephes' expf: within 1 ulp; 0 below -87.34, ∞ above 88.38).
    void (*exp_f32)(float *x, size_t n);
    /// erf of every element in place (Eigen's rational fit: within 4.3e-7, clamped to [-1, 1]).
    void (*erf_f32)(float *x, size_t n);
    /// tanh of every element in place (Eigen's rational fit: within 4e-7, clamped to [-1, 1]).
    void (*tanh_f32)(float *x, size_t n);
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
