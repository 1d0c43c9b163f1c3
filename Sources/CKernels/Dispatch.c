// The three copies of the loops in VectorLoops.h and the choice between them. Every copy is
// compiled from the same source; only the target differs, given per function by a pragma, so that
// the package needs no compiler flags (SwiftPM refuses unsafe flags in a dependency).

#include "CKernels.h"

#define CK_LEVEL(name) name##_baseline
#define CK_LEVEL_VALUE CK_BASELINE
#include "VectorLoops.h"
#undef CK_LEVEL
#undef CK_LEVEL_VALUE

#if defined(__x86_64__)

#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#define CK_LEVEL(name) name##_avx2
#define CK_LEVEL_VALUE CK_AVX2
#include "VectorLoops.h"
#undef CK_LEVEL
#undef CK_LEVEL_VALUE
#pragma clang attribute pop

#pragma clang attribute push(__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma"))), apply_to = function)
#define CK_LEVEL(name) name##_avx512
#define CK_LEVEL_VALUE CK_AVX512
#include "VectorLoops.h"
#undef CK_LEVEL
#undef CK_LEVEL_VALUE
#pragma clang attribute pop

#endif

// -1 until first use; then a level. Relaxed atomics: every thread that races the first use
// computes the same answer.
static int supported = -1, in_use = -1;

ck_level ck_supported_level(void) {
    int level = __atomic_load_n(&supported, __ATOMIC_RELAXED);
    if (level >= 0) return (ck_level)level;
    level = CK_BASELINE;
#if defined(__x86_64__)
    // __builtin_cpu_supports reports a feature only when the OS saves its registers (XCR0)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) level = CK_AVX2;
    if (level == CK_AVX2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")
        && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
        level = CK_AVX512;
#endif
    __atomic_store_n(&supported, level, __ATOMIC_RELAXED);
    return (ck_level)level;
}

ck_level ck_level_in_use(void) {
    int level = __atomic_load_n(&in_use, __ATOMIC_RELAXED);
    return level >= 0 ? (ck_level)level : ck_supported_level();
}

ck_level ck_set_level(ck_level level) {
    ck_level best = ck_supported_level();
    ck_level chosen = level < CK_BASELINE ? CK_BASELINE : (level > best ? best : level);
    __atomic_store_n(&in_use, (int)chosen, __ATOMIC_RELAXED);
    return chosen;
}

const ck_kernels *ck_kernels_at(ck_level level) {
    ck_level best = ck_supported_level();
    switch (level > best ? best : level) {
#if defined(__x86_64__)
    case CK_AVX512: return &kernels_avx512;
    case CK_AVX2: return &kernels_avx2;
#endif
    default: return &kernels_baseline;
    }
}

const ck_kernels *ck_kernels_in_use(void) { return ck_kernels_at(ck_level_in_use()); }
