// oneDNN's products for Float tensors, when the package is built with the trait `OneDNN`: bfloat16
// products (the rounding to nearest even in plain C, every build; the product through oneDNN's
// matmul primitive, bf16 operands, Float sums and output) and Float products through the same primitive.
// Imported by `Tensor/BLAS.swift` and `Tensor/BFloat16.swift` alone.
#ifndef NEURON_CONEDNN_H
#define NEURON_CONEDNN_H

#include <stdint.h>

/// Rounds `count` Floats to bfloat16, to nearest with ties to even (NaN stays NaN, quieted).
void neuron_bf16_round(const float *x, uint16_t *y, long count);

/// Widens `count` bfloat16 values to Float (exact).
void neuron_bf16_widen(const uint16_t *x, float *y, long count);

/// 1 when this build carries oneDNN's products (the trait `OneDNN`), else 0.
int neuron_bf16_built(void);

/// NULL once oneDNN is loaded (the first call loads it), else why it is not: built without the
/// trait, or `libdnnl.so.2` missing or incomplete.
const char *neuron_bf16_load_error(void);

/// oneDNN's version, e.g. "oneDNN 2.6.3", or "" when it is not loaded.
const char *neuron_bf16_library(void);

/// `c = alpha * op(a) * op(b) + beta * c` (row-major, as cblas_sgemm), with `alpha * a` and `b` rounded
/// to bfloat16 and every product summed in Float by oneDNN's matmul on `threads` OpenMP threads.
/// Returns 0, or oneDNN's status when a primitive could not be made or run (nothing is written
/// then but `c` may be partly scaled by `beta`), or -1 when oneDNN is not loaded. The primitives and the
/// bfloat16 copies of the operands are kept per calling thread, so threads may call it at once.
int neuron_bf16_gemm(int transA, int transB, long m, long n, long k,
                     float alpha, const float *a, long lda, const float *b, long ldb,
                     float beta, float *c, long ldc, int threads);

/// `c = op(a) * op(b)` (`accumulate` 0) or `c += op(a) * op(b)` (1) in Float by oneDNN's matmul primitive
/// on the calling thread alone (its OpenMP count set to 1), the operands read in place with their
/// strides. Returns 0, oneDNN's status, or -1 when oneDNN is not loaded.
int neuron_onednn_matmul(int transA, int transB, long m, long n, long k, const float *a, long lda,
                         const float *b, long ldb, int accumulate, float *c, long ldc);

/// How many Float products `neuron_onednn_matmul` computed in this process.
long neuron_onednn_products(void);

/// Whether the calling thread's Float products run on bfloat16 operands (1) or in Float (0): a
/// network sets it around its passes, on each thread that runs them (as PyTorch's autocast is per thread).
int neuron_bf16_active(void);
void neuron_bf16_set_active(int active);

/// How many products fell back to Float because oneDNN could not make or run their primitive.
long neuron_bf16_fallbacks(void);
void neuron_bf16_count_fallback(void);

/// Copies into `names` (at most `capacity` bytes, NUL included) the implementations oneDNN chose for
/// the products made in this process, distinct, comma-separated (e.g. "brg:avx512_core_bf16"); "" before the first.
void neuron_bf16_implementations(char *names, long capacity);

#endif
