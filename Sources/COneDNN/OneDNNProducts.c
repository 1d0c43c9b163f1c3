// oneDNN's products, on the trait `OneDNN` only (which compiles this file with oneDNN's header; the
// library itself is opened at run time, below): bfloat16 products, Float operands rounded to
// bfloat16 here and multiplied by oneDNN's matmul primitive (bf16 × bf16, summed and written in
// Float); and Float products by the same primitive in Float, on request, for the shapes where it
// beats OpenBLAS in a step.
//
// oneDNN makes a primitive per shape (milliseconds of JIT the first time), so each thread keeps the
// primitives of the shapes it has run, with their memory objects, and the bfloat16 copies of the
// operands in buffers that only grow. oneDNN's own execution still allocates a few blocks a call
// (the arguments' map, 5–7 a product as counted). oneDNN's threads are OpenMP's; each call sets the
// calling thread's OpenMP count to the one asked for (a network's batch shares run one thread each,
// side by side; a Float product's panels one each, on Neuron's product threads).
#include "COneDNN.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// MARK: - Conversions (every build)

static inline uint16_t round_to_bf16(uint32_t bits) {
    uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;  // to nearest, ties to even; overflow is ±∞
    uint32_t quiet = (bits >> 16) | 0x0040u;  // a NaN stays a NaN (quieted), never rounds into ±∞
    return (uint16_t)((bits & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
}

/// Rounds `scale` times each of `count` Floats (a product's alpha, folded into its left operand; 1
/// elsewhere, which changes no value). Branch-free, so that the loop vectorizes; compiled for
/// AVX-512 and AVX2 besides the baseline and chosen when loaded (the conversion is memory-bound:
/// wider lanes keep it off the product's time).
#if defined(__x86_64__) && defined(__clang__)
__attribute__((target_clones("avx512bw", "avx2", "default")))
#endif
static void round_scaled(const float *x, float scale, uint16_t *y, long count) {
    for (long i = 0; i < count; i++) {
        float value = scale * x[i];
        uint32_t bits;
        memcpy(&bits, &value, sizeof bits);
        y[i] = round_to_bf16(bits);
    }
}

void neuron_bf16_round(const float *x, uint16_t *y, long count) { round_scaled(x, 1, y, count); }

void neuron_bf16_widen(const uint16_t *x, float *y, long count) {
    for (long i = 0; i < count; i++) {
        uint32_t bits = (uint32_t)x[i] << 16;
        memcpy(&y[i], &bits, sizeof bits);
    }
}

/// Rounds `scale` times the `rows` × `columns` matrix at `x` (row stride `ld`) into the dense `y`.
static void round_matrix(const float *x, long ld, long rows, long columns, float scale, uint16_t *y) {
    if (ld == columns) { round_scaled(x, scale, y, rows * columns); return; }
    for (long r = 0; r < rows; r++) round_scaled(x + r * ld, scale, y + r * columns, columns);
}

static _Thread_local int active;
static _Atomic long fallbacks;

int neuron_bf16_active(void) { return active; }
void neuron_bf16_set_active(int value) { active = value; }
long neuron_bf16_fallbacks(void) { return fallbacks; }
void neuron_bf16_count_fallback(void) { fallbacks++; }

#ifdef NEURON_ONEDNN
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>

int neuron_bf16_built(void) { return 1; }

// MARK: - Loading oneDNN

// oneDNN is opened on first use, not linked: OpenMP (libgomp, which it brings) reads its wait policy
// from the environment once, when it loads, and its default keeps idle threads spinning for
// milliseconds after each product. Beside a busy thread (another process, the step's own work) those
// spinning threads took a core from the work: an F1 epoch ran 6× slower. So the policy is set to
// `passive` first, unless the user set one. A build with the trait also runs where oneDNN is
// absent, and says so (`neuron_bf16_load_error`).
#define DNNL_FUNCTIONS(X)                                                                            \
    X(dnnl_version) X(dnnl_engine_create) X(dnnl_stream_create) X(dnnl_stream_wait)                  \
    X(dnnl_memory_desc_init_by_strides) X(dnnl_matmul_desc_init) X(dnnl_primitive_attr_create)        \
    X(dnnl_primitive_attr_destroy) X(dnnl_primitive_attr_set_post_ops) X(dnnl_post_ops_create)       \
    X(dnnl_post_ops_append_sum) X(dnnl_post_ops_destroy) X(dnnl_primitive_desc_create)               \
    X(dnnl_primitive_desc_query) X(dnnl_primitive_desc_destroy) X(dnnl_primitive_create)             \
    X(dnnl_primitive_destroy) X(dnnl_primitive_execute) X(dnnl_memory_create)                        \
    X(dnnl_memory_set_data_handle) X(dnnl_memory_destroy)

static struct {
#define DECLARE(name) __typeof__(name) *name;
    DNNL_FUNCTIONS(DECLARE)
#undef DECLARE
    int (*omp_get_max_threads)(void);
    void (*omp_set_num_threads)(int);
} dnnl;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_error[512];

static void load(void) {
    setenv("OMP_WAIT_POLICY", "passive", 0);  // 0: a policy the user set wins
    void *library = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(load_error, sizeof load_error, "oneDNN could not be loaded (%s)", dlerror());
        return;
    }
#define LOOK_UP(name)                                                                                \
    if (!(dnnl.name = (__typeof__(name) *)dlsym(library, #name))) {                                  \
        snprintf(load_error, sizeof load_error, "oneDNN's libdnnl.so.2 has no %s", #name);           \
        return;                                                                                      \
    }
    DNNL_FUNCTIONS(LOOK_UP)
#undef LOOK_UP
    // OpenMP comes with oneDNN (a handle's lookup searches its dependencies too).
    dnnl.omp_get_max_threads = (int (*)(void))dlsym(library, "omp_get_max_threads");
    dnnl.omp_set_num_threads = (void (*)(int))dlsym(library, "omp_set_num_threads");
}

const char *neuron_bf16_load_error(void) {
    pthread_once(&load_once, load);
    return load_error[0] ? load_error : NULL;
}

// Every call below goes through the table (loaded before the first: `neuron_bf16_gemm` checks).
#define dnnl_version (*dnnl.dnnl_version)
#define dnnl_engine_create (*dnnl.dnnl_engine_create)
#define dnnl_stream_create (*dnnl.dnnl_stream_create)
#define dnnl_stream_wait (*dnnl.dnnl_stream_wait)
#define dnnl_memory_desc_init_by_strides (*dnnl.dnnl_memory_desc_init_by_strides)
#define dnnl_matmul_desc_init (*dnnl.dnnl_matmul_desc_init)
#define dnnl_primitive_attr_create (*dnnl.dnnl_primitive_attr_create)
#define dnnl_primitive_attr_destroy (*dnnl.dnnl_primitive_attr_destroy)
#define dnnl_primitive_attr_set_post_ops (*dnnl.dnnl_primitive_attr_set_post_ops)
#define dnnl_post_ops_create (*dnnl.dnnl_post_ops_create)
#define dnnl_post_ops_append_sum (*dnnl.dnnl_post_ops_append_sum)
#define dnnl_post_ops_destroy (*dnnl.dnnl_post_ops_destroy)
#define dnnl_primitive_desc_create (*dnnl.dnnl_primitive_desc_create)
#define dnnl_primitive_desc_query (*dnnl.dnnl_primitive_desc_query)
#define dnnl_primitive_desc_destroy (*dnnl.dnnl_primitive_desc_destroy)
#define dnnl_primitive_create (*dnnl.dnnl_primitive_create)
#define dnnl_primitive_destroy (*dnnl.dnnl_primitive_destroy)
#define dnnl_primitive_execute (*dnnl.dnnl_primitive_execute)
#define dnnl_memory_create (*dnnl.dnnl_memory_create)
#define dnnl_memory_set_data_handle (*dnnl.dnnl_memory_set_data_handle)
#define dnnl_memory_destroy (*dnnl.dnnl_memory_destroy)

const char *neuron_bf16_library(void) {
    static char name[64];
    if (neuron_bf16_load_error()) return "";
    if (!name[0]) {
        const dnnl_version_t *v = dnnl_version();
        snprintf(name, sizeof name, "oneDNN %d.%d.%d", v->major, v->minor, v->patch);
    }
    return name;
}

// MARK: - The per-thread state

/// One shape's primitive: what it was made for, and its memory objects (handles set per call).
typedef struct product {
    int transA, transB, accumulate, f32;
    long m, n, k, lda, ldb, ldc;
    dnnl_primitive_t primitive;
    dnnl_memory_t a, b, c;
} product;

enum { cached_products = 64 };

typedef struct thread_state {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    product products[cached_products];
    int count, next;  ///< products made; the slot the next one replaces once all are taken
    uint16_t *a16, *b16;  ///< the operands in bfloat16, each as stored (dense)
    long a16count, b16count;
} thread_state;

static _Thread_local thread_state *state;

static void release(product *p) {
    if (p->primitive) dnnl_primitive_destroy(p->primitive);
    if (p->a) dnnl_memory_destroy(p->a);
    if (p->b) dnnl_memory_destroy(p->b);
    if (p->c) dnnl_memory_destroy(p->c);
    memset(p, 0, sizeof *p);
}

static thread_state *thread_state_now(void) {
    if (state) return state;
    thread_state *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    if (dnnl_engine_create(&s->engine, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&s->stream, s->engine, dnnl_stream_default_flags) != dnnl_success) {
        free(s);
        return NULL;
    }
    state = s;
    return s;
}

/// The buffer `*buffer` with room for `count` values, grown (never shrunk) when it has less.
static uint16_t *room(uint16_t **buffer, long *capacity, long count) {
    if (*capacity < count) {
        uint16_t *grown = realloc(*buffer, (size_t)count * sizeof(uint16_t));
        if (!grown) return NULL;
        *buffer = grown;
        *capacity = count;
    }
    return *buffer;
}

// MARK: - The implementations oneDNN chose, for the run's summary

static pthread_mutex_t implementations_lock = PTHREAD_MUTEX_INITIALIZER;
static char implementations[256];

/// Adds `name` to the process's list of implementations made, once.
static void note_implementation(const char *name) {
    pthread_mutex_lock(&implementations_lock);
    size_t used = strlen(implementations), length = strlen(name);
    int seen = 0;
    for (const char *at = implementations; (at = strstr(at, name)) != NULL; at += length) {
        if ((at == implementations || at[-1] == ' ') && (at[length] == ',' || at[length] == 0)) { seen = 1; break; }
    }
    if (!seen && used + length + 3 < sizeof implementations) {
        if (used > 0) strcat(implementations, ", ");
        strcat(implementations, name);
    }
    pthread_mutex_unlock(&implementations_lock);
}

void neuron_bf16_implementations(char *names, long capacity) {
    if (capacity <= 0) return;
    pthread_mutex_lock(&implementations_lock);
    strncpy(names, implementations, (size_t)capacity - 1);
    names[capacity - 1] = 0;
    pthread_mutex_unlock(&implementations_lock);
}

// MARK: - Primitives

/// A row-major matrix `rows` × `columns` as oneDNN sees op(it), its stored rows `ld` apart (0: dense):
/// transposed by its strides.
static dnnl_status_t describe(dnnl_memory_desc_t *md, long rows, long columns, int transpose, dnnl_data_type_t type, long ld) {
    dnnl_dims_t dims, strides;
    if (transpose) {  // stored (columns × rows): op = (rows × columns) read down the columns
        dims[0] = rows; dims[1] = columns; strides[0] = 1; strides[1] = ld ? ld : rows;
    } else {
        dims[0] = rows; dims[1] = columns; strides[0] = ld ? ld : columns; strides[1] = 1;
    }
    return dnnl_memory_desc_init_by_strides(md, 2, dims, type, strides);
}

static dnnl_status_t make(thread_state *s, product *p) {
    dnnl_memory_desc_t a_md, b_md, c_md;
    dnnl_status_t status;
    dnnl_data_type_t type = p->f32 ? dnnl_f32 : dnnl_bf16;
    if ((status = describe(&a_md, p->m, p->k, p->transA, type, p->lda)) != dnnl_success) return status;
    if ((status = describe(&b_md, p->k, p->n, p->transB, type, p->ldb)) != dnnl_success) return status;
    dnnl_dims_t c_dims = {p->m, p->n}, c_strides = {p->ldc, 1};
    if ((status = dnnl_memory_desc_init_by_strides(&c_md, 2, c_dims, dnnl_f32, c_strides)) != dnnl_success) return status;
    dnnl_matmul_desc_t desc;
    if ((status = dnnl_matmul_desc_init(&desc, &a_md, &b_md, NULL, &c_md)) != dnnl_success) return status;

    dnnl_primitive_attr_t attr;
    if ((status = dnnl_primitive_attr_create(&attr)) != dnnl_success) return status;
    if (p->accumulate) {  // beta = 1: c is added by a sum post-op
        dnnl_post_ops_t post;
        if ((status = dnnl_post_ops_create(&post)) == dnnl_success) {
            status = dnnl_post_ops_append_sum(post, 1.0f);
            if (status == dnnl_success) status = dnnl_primitive_attr_set_post_ops(attr, post);
            dnnl_post_ops_destroy(post);
        }
    }
    dnnl_primitive_desc_t pd = NULL;
    if (status == dnnl_success) status = dnnl_primitive_desc_create(&pd, &desc, attr, s->engine, NULL);
    dnnl_primitive_attr_destroy(attr);
    if (status != dnnl_success) return status;
    status = dnnl_primitive_create(&p->primitive, pd);
    if (status == dnnl_success) {
        const char *info = NULL;
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &info);
        if (info) note_implementation(info);
    }
    dnnl_primitive_desc_destroy(pd);
    if (status != dnnl_success) return status;
    if ((status = dnnl_memory_create(&p->a, &a_md, s->engine, DNNL_MEMORY_NONE)) != dnnl_success) return status;
    if ((status = dnnl_memory_create(&p->b, &b_md, s->engine, DNNL_MEMORY_NONE)) != dnnl_success) return status;
    return dnnl_memory_create(&p->c, &c_md, s->engine, DNNL_MEMORY_NONE);
}

/// The thread's primitive for this shape, made (or remade over the oldest) when it has none.
static product *find(thread_state *s, int transA, int transB, long m, long n, long k, long lda, long ldb, long ldc,
                     int accumulate, int f32, dnnl_status_t *status) {
    for (int i = 0; i < s->count; i++) {
        product *p = &s->products[i];
        if (p->m == m && p->n == n && p->k == k && p->ldc == ldc && p->transA == transA && p->transB == transB &&
            p->accumulate == accumulate && p->f32 == f32 && p->lda == lda && p->ldb == ldb)
            return p;
    }
    int slot = s->count < cached_products ? s->count++ : (s->next++ % cached_products);
    product *p = &s->products[slot];
    release(p);
    *p = (product){.transA = transA, .transB = transB, .accumulate = accumulate, .f32 = f32,
                   .m = m, .n = n, .k = k, .lda = lda, .ldb = ldb, .ldc = ldc};
    *status = make(s, p);
    if (*status != dnnl_success) {
        release(p);
        if (slot == s->count - 1) s->count--;
        return NULL;
    }
    return p;
}

// MARK: - OpenMP's thread count

/// OpenMP's count for the calling thread set to `threads`.
static void use_threads(int threads) {
    if (dnnl.omp_get_max_threads && dnnl.omp_set_num_threads && threads > 0 && dnnl.omp_get_max_threads() != threads)
        dnnl.omp_set_num_threads(threads);
}

// MARK: - The product

int neuron_bf16_gemm(int transA, int transB, long m, long n, long k,
                     float alpha, const float *a, long lda, const float *b, long ldb,
                     float beta, float *c, long ldc, int threads) {
    if (neuron_bf16_load_error()) return -1;
    thread_state *s = thread_state_now();
    if (!s) return dnnl_out_of_memory;
    use_threads(threads);
    if (beta != 0 && beta != 1) {  // the sum post-op adds c once; any other beta scales c first
        for (long r = 0; r < m; r++) for (long j = 0; j < n; j++) c[r * ldc + j] *= beta;
    }
    dnnl_status_t status = dnnl_success;
    product *p = find(s, transA, transB, m, n, k, 0, 0, ldc, beta != 0, 0, &status);
    if (!p) return status;

    // The operands are rounded as stored, densely: a is (m × k), or (k × m) when transposed, with
    // alpha folded in (a runtime output scale would cost oneDNN its brgemm kernels); b is (k × n)
    // or (n × k). Their memory descriptors' strides say which.
    long aRows = transA ? k : m, aColumns = transA ? m : k;
    long bRows = transB ? n : k, bColumns = transB ? k : n;
    uint16_t *a16 = room(&s->a16, &s->a16count, aRows * aColumns);
    uint16_t *b16 = room(&s->b16, &s->b16count, bRows * bColumns);
    if (!a16 || !b16) return dnnl_out_of_memory;
    round_matrix(a, lda, aRows, aColumns, alpha, a16);
    round_matrix(b, ldb, bRows, bColumns, 1, b16);

    dnnl_memory_set_data_handle(p->a, a16);
    dnnl_memory_set_data_handle(p->b, b16);
    dnnl_memory_set_data_handle(p->c, c);
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, p->a}, {DNNL_ARG_WEIGHTS, p->b}, {DNNL_ARG_DST, p->c}};
    status = dnnl_primitive_execute(p->primitive, s->stream, 3, args);
    if (status == dnnl_success) status = dnnl_stream_wait(s->stream);
    return status;
}

// MARK: - Float products

/// Float products oneDNN computed (a test sees a product go there by it).
static _Atomic long float_products;

long neuron_onednn_products(void) { return float_products; }

int neuron_onednn_matmul(int transA, int transB, long m, long n, long k,
                         const float *a, long lda, const float *b, long ldb,
                         int accumulate, float *c, long ldc) {
    if (neuron_bf16_load_error()) return -1;
    thread_state *s = thread_state_now();
    if (!s) return dnnl_out_of_memory;
    use_threads(1);
    dnnl_status_t status = dnnl_success;
    product *p = find(s, transA, transB, m, n, k, lda, ldb, ldc, accumulate, 1, &status);
    if (!p) return status;
    dnnl_memory_set_data_handle(p->a, (void *)a);
    dnnl_memory_set_data_handle(p->b, (void *)b);
    dnnl_memory_set_data_handle(p->c, c);
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, p->a}, {DNNL_ARG_WEIGHTS, p->b}, {DNNL_ARG_DST, p->c}};
    status = dnnl_primitive_execute(p->primitive, s->stream, 3, args);
    if (status == dnnl_success) status = dnnl_stream_wait(s->stream);
    if (status == dnnl_success) float_products++;
    return status;
}

#else  // built without the trait `OneDNN`

int neuron_bf16_built(void) { return 0; }
const char *neuron_bf16_load_error(void) { return "built without oneDNN"; }
const char *neuron_bf16_library(void) { return ""; }
int neuron_bf16_gemm(int transA, int transB, long m, long n, long k, float alpha, const float *a, long lda,
                     const float *b, long ldb, float beta, float *c, long ldc, int threads) {
    (void)transA; (void)transB; (void)m; (void)n; (void)k; (void)alpha; (void)a; (void)lda;
    (void)b; (void)ldb; (void)beta; (void)c; (void)ldc; (void)threads; (void)round_matrix;
    return -1;
}
void neuron_bf16_implementations(char *names, long capacity) {
    if (capacity > 0) names[0] = 0;
}
long neuron_onednn_products(void) { return 0; }
int neuron_onednn_matmul(int transA, int transB, long m, long n, long k, const float *a, long lda, const float *b,
                         long ldb, int accumulate, float *c, long ldc) {
    (void)transA; (void)transB; (void)m; (void)n; (void)k; (void)a; (void)lda; (void)b; (void)ldb;
    (void)accumulate; (void)c; (void)ldc;
    return -1;
}

#endif
