// products: times single-precision row-major products C = alpha·op(A)·op(B) + beta·C from ONE
// BLAS-like library per process, on the products the engine's workloads issue (W4–W6, W9–W12)
// and two square "ceiling" products. Each library is loaded by name with dlopen, so no two
// libraries' thread pools (OpenBLAS's pthreads, libgomp's) ever share a process.
//
//   products LIBRARY [--lib PATH] [--seconds S] [--reps N] [--only W6] [--round R] [--header]
//   products --list                     the shapes, with the workloads that issue them
//
// LIBRARY: openblas (Debian 0.3.21), scipy-openblas (PyPI's scipy-openblas32), blis (Debian 0.9,
// the kernels it picks), blis-skx (the same, told to use its AVX-512 kernels), dnnl-sgemm
// (oneDNN's BLAS-style call), dnnl-matmul (oneDNN's matmul primitive, made once per shape).
// Threads come from the environment: OPENBLAS_NUM_THREADS, BLIS_NUM_THREADS, OMP_NUM_THREADS;
// each library's own count is printed.
//
// Every shape is first checked against naive loops in double; a shape that fails is reported as
// FAIL and not timed. Then: warm-up, then single calls timed one by one until at least S seconds
// (default 0.2) and N calls (default 10) have passed; the minimum and the median are reported.
// One CSV line per shape on stdout, a readable table on stderr.
// Build: cc -O2 -o products products.c -ldl -lm
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <oneapi/dnnl/dnnl.h>  // types and prototypes only: every function is found with dlsym

// MARK: The shapes

enum { MAX_SHAPES = 256, MAX_USES = 8 };

// One product as the engine issues it: BLAS's row-major arguments, transposes 'N' or 'T'.
typedef struct {
    int m, n, k;
    char ta, tb;
    float alpha, beta;
    int lda, ldb, ldc;
} Product;

// A distinct product and who issues it: `count` times a step of workload `workload`, as `what`.
typedef struct {
    Product p;
    int uses;
    struct { const char *workload, *what; long count; } use[MAX_USES];
} Shape;

static Shape shapes[MAX_SHAPES];
static int shape_count;

static int same(Product a, Product b) {
    return a.m == b.m && a.n == b.n && a.k == b.k && a.ta == b.ta && a.tb == b.tb && a.alpha == b.alpha &&
           a.beta == b.beta && a.lda == b.lda && a.ldb == b.ldb && a.ldc == b.ldc;
}

// Records that `workload` issues `p` `count` times a step; one entry per distinct product.
static void add(const char *workload, long count, const char *what, Product p) {
    if (count <= 0) return;
    Shape *s = NULL;
    for (int i = 0; i < shape_count && !s; i++)
        if (same(shapes[i].p, p)) s = &shapes[i];
    if (!s) {
        if (shape_count == MAX_SHAPES) { fprintf(stderr, "too many shapes\n"); exit(2); }
        s = &shapes[shape_count++];
        s->p = p;
    }
    for (int u = 0; u < s->uses; u++)  // the same workload and role again: count it there
        if (!strcmp(s->use[u].workload, workload) && !strcmp(s->use[u].what, what)) { s->use[u].count += count; return; }
    if (s->uses == MAX_USES) { fprintf(stderr, "too many uses of one shape\n"); exit(2); }
    s->use[s->uses].workload = workload;
    s->use[s->uses].what = what;
    s->use[s->uses++].count = count;
}

static Product P(int m, int n, int k, char ta, char tb, float alpha, float beta, int lda, int ldb, int ldc) {
    return (Product){m, n, k, ta, tb, alpha, beta, lda, ldb, ldc};
}

// W4–W6 (Benchmarks/Runner/Workloads.swift): dense layers trained by plain SGD, whose update
// runs inside backward (Network.fusesUpdate, Sources/NeuronCore/Network/FusedUpdate.swift). Per
// layer `in → out`, Sources/NeuronCore/Kernels/DenseKernels.swift issues:
static void dense_sgd(const char *w, const int *sizes, int layers, int batch, float lr) {
    for (int l = 0; l < layers; l++) {
        int in = sizes[l], out = sizes[l + 1];
        // denseForward: y = b in every row, then y += x·w (beta 1 onto the bias)
        add(w, 1, "forward y += x·w", P(batch, out, in, 'N', 'N', 1, 1, in, out, out));
        // denseInputGradient, past the first layer only: dx = dz·wᵀ (beta 0)
        if (l > 0) add(w, 1, "dx = dz·wT", P(batch, in, out, 'N', 'T', 1, 0, out, out, in));
        // denseBackwardUpdating → denseWeightProduct: w ← w − lr·xᵀ·dz (alpha −lr, beta 1 − lr·0)
        add(w, 1, "w -= lr·xT·dz", P(in, out, batch, 'T', 'N', -lr, 1, in, out, out));
    }
}

// A per-position Dense(in → out) under AdamW (not fusable: DenseKernels.denseBackward), over
// `rows` = batch·time positions, `count` layers of it in the network.
static void dense_adam(const char *w, long count, const char *fwd, const char *dw, const char *dx, int rows, int in, int out) {
    add(w, count, fwd, P(rows, out, in, 'N', 'N', 1, 1, in, out, out));  // y = b; y += x·w
    add(w, count, dw, P(in, out, rows, 'T', 'N', 1, 1, in, out, out));   // dw += xᵀ·dz
    add(w, count, dx, P(rows, in, out, 'N', 'T', 1, 0, out, out, in));   // dx = dz·wᵀ
}

// W9–W12 (Benchmarks/Runner/TransformerWorkload.swift): a GPT of L blocks, H heads, F features,
// T positions, batch B, vocabulary V; its layers() and Sources/NeuronCore/Kernels/AttentionKernels.swift.
// The products over the whole batch (B·T rows): the benchmark's timed step splits the batch over
// its threads (BatchSplitting), each share issuing these with half the rows on one BLAS thread.
static void gpt(const char *w, int L, int H, int F, int T, int B, int V) {
    int R = B * T, s = F / H, W3 = 3 * F;
    float scale = 1 / sqrtf((float)s);
    // CausalSelfAttention's projections: attentionForward, attentionBackward
    add(w, L, "attn qkv = x·W_attnT", P(R, W3, F, 'N', 'T', 1, 0, F, F, W3));
    add(w, L, "attn y = a·W_projT", P(R, F, F, 'N', 'T', 1, 0, F, F, F));
    add(w, L, "attn dW_proj += dyT·a", P(F, F, R, 'T', 'N', 1, 1, F, F, F));
    add(w, L, "attn da = dy·W_proj", P(R, F, F, 'N', 'N', 1, 0, F, F, F));
    add(w, L, "attn dW_attn += dqkvT·x", P(W3, F, R, 'T', 'N', 1, 1, W3, F, F));
    add(w, L, "attn dx = dqkv·W_attn", P(R, F, W3, 'N', 'N', 1, 0, W3, F, F));
    // The MLP, Dense(F → 4F) and Dense(4F → F) per position, and the head Dense(F → V)
    dense_adam(w, L, "mlp fc forward", "mlp fc dw", "mlp fc dx", R, F, 4 * F);
    dense_adam(w, L, "mlp proj forward", "mlp proj dw", "mlp proj dx", R, 4 * F, F);
    dense_adam(w, 1, "head forward", "head dw", "head dx", R, F, V);
    // The heads: per (sample, head) and block, (T, s) views read in place, rows 3F apart.
    // AttentionPath.measured(time:): the full path below T = 128, tiles of 64 from there.
    long heads = (long)B * H * L;
    if (T < 128) {  // fullHeadsForward, fullHeadsBackward
        add(w, heads, "head scores = q·kT/√s", P(T, T, s, 'N', 'T', scale, 0, W3, W3, T));
        add(w, heads, "head a = att·v", P(T, s, T, 'N', 'N', 1, 0, T, W3, F));
        add(w, heads, "head dv = attT·da", P(T, s, T, 'T', 'N', 1, 0, T, F, W3));
        add(w, heads, "head datt = da·vT", P(T, T, s, 'N', 'T', 1, 0, F, W3, T));
        add(w, heads, "head dq = ds·k/√s", P(T, s, T, 'N', 'N', scale, 0, T, W3, W3));
        add(w, heads, "head dk = dsT·q/√s", P(T, s, T, 'T', 'N', scale, 0, T, W3, W3));
    } else {  // tiledHeadsForward, tiledHeadsBackward: tile pairs on and below the diagonal
        int t = 64;
        if (T % t) { fprintf(stderr, "%s: time %d is not a whole number of tiles\n", w, T); exit(2); }
        long tiles = T / t, pairs = tiles * (tiles + 1) / 2, first = tiles, rest = pairs - tiles;
        // forward: s = q_i·k_jᵀ/√s; a_i = (rescaled a_i) + p·v_j, beta 0 on a row's first key tile
        // backward recomputes p with the same product, then dv, dp, dq, dk tile by tile
        add(w, 2 * heads * pairs, "tile scores = q·kT/√s (fwd, bwd)", P(t, t, s, 'N', 'T', scale, 0, W3, W3, t));
        add(w, heads * first, "tile a = p·v (first)", P(t, s, t, 'N', 'N', 1, 0, t, W3, F));
        add(w, heads * rest, "tile a += p·v", P(t, s, t, 'N', 'N', 1, 1, t, W3, F));
        add(w, heads * first, "tile dv = pT·da (diagonal)", P(t, s, t, 'T', 'N', 1, 0, t, F, W3));
        add(w, heads * rest, "tile dv += pT·da", P(t, s, t, 'T', 'N', 1, 1, t, F, W3));
        add(w, heads * pairs, "tile dp = da·vT", P(t, t, s, 'N', 'T', 1, 0, F, W3, t));
        add(w, heads * first, "tile dq = ds·k/√s (first)", P(t, s, t, 'N', 'N', scale, 0, t, W3, W3));
        add(w, heads * rest, "tile dq += ds·k/√s", P(t, s, t, 'N', 'N', scale, 1, t, W3, W3));
        add(w, heads * first, "tile dk = dsT·q/√s (diagonal)", P(t, s, t, 'T', 'N', scale, 0, t, W3, W3));
        add(w, heads * rest, "tile dk += dsT·q/√s", P(t, s, t, 'T', 'N', scale, 1, t, W3, W3));
    }
}

static void make_shapes(void) {
    static const int mnist[] = {784, 256, 128, 10}, wide[] = {1024, 1024, 1024, 1024};
    dense_sgd("W4", mnist, 3, 64, 0.01f);
    dense_sgd("W5", mnist, 3, 256, 0.01f);
    dense_sgd("W6", wide, 3, 128, 1e-4f);
    // (blocks, heads, features, time, batch, vocabulary): TransformerWorkload.w9 … w12; the
    // vocabulary is the text's characters plus the boundary (27 for words, 66 for Shakespeare).
    gpt("W9", 4, 4, 64, 16, 32, 27);
    gpt("W10", 6, 6, 192, 64, 32, 27);
    gpt("W11", 4, 4, 128, 64, 12, 66);
    gpt("W12", 6, 6, 384, 256, 8, 66);
    // The ceiling: square products, as the engine's `Benchmarks ceiling` times sgemm.
    add("ceiling", 1, "square", P(1024, 1024, 1024, 'N', 'N', 1, 0, 1024, 1024, 1024));
    add("ceiling", 1, "square", P(2048, 2048, 2048, 'N', 'N', 1, 0, 2048, 2048, 2048));
}

// "W4:1 W5:1" (the CSV's), or "W4 ×1 (forward y += x·w), W5 ×1 (…)" (the listing's).
static void uses(const Shape *s, int verbose, char *out, size_t size) {
    size_t n = 0;
    out[0] = 0;
    for (int u = 0; u < s->uses && n < size; u++)
        n += verbose ? snprintf(out + n, size - n, "%s%s ×%ld (%s)", u ? ", " : "", s->use[u].workload, s->use[u].count, s->use[u].what)
                     : snprintf(out + n, size - n, "%s%s:%ld", u ? " " : "", s->use[u].workload, s->use[u].count);
}

// MARK: The libraries

typedef void (*cblas_sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                               const float *b, int ldb, float beta, float *c, int ldc);
enum { RowMajor = 101, NoTrans = 111, Trans = 112 };  // CBLAS's enum values, the same in every cblas.h

typedef enum { CBLAS, DNNL_SGEMM, DNNL_MATMUL } Kind;

static struct {
    const char *name, *path, *sgemm;  // as asked for; the default file and the sgemm symbol
    Kind kind;
    const char *arch;  // BLIS_ARCH_TYPE to set before loading, or NULL
} const libraries[] = {
    {"openblas", "libopenblas.so.0", "cblas_sgemm", CBLAS, NULL},
    {"scipy-openblas", "libscipy_openblas.so", "scipy_cblas_sgemm", CBLAS, NULL},
    {"blis", "libblis.so.4", "cblas_sgemm", CBLAS, NULL},
    // BLIS 0.9 does not know AMD's family 0x1A (Zen 5) and picks its generic C kernels there;
    // BLIS_ARCH_TYPE=0 (arch_t's BLIS_ARCH_SKX) asks for its AVX-512 kernels instead.
    {"blis-skx", "libblis.so.4", "cblas_sgemm", CBLAS, "0"},
    {"dnnl-sgemm", "libdnnl.so.2", "dnnl_sgemm", DNNL_SGEMM, NULL},
    {"dnnl-matmul", "libdnnl.so.2", NULL, DNNL_MATMUL, NULL},
};

static Kind kind;
static void *library;
static cblas_sgemm_fn sgemm;
static char version[256], kernels[128];
static int threads;

// oneDNN's functions, found in the library (the prototypes from dnnl.h give their types).
static struct {
    __typeof__(dnnl_sgemm) *sgemm;
    __typeof__(dnnl_version) *version;
    __typeof__(dnnl_get_effective_cpu_isa) *isa;
    __typeof__(dnnl_engine_create) *engine_create;
    __typeof__(dnnl_stream_create) *stream_create;
    __typeof__(dnnl_stream_wait) *stream_wait;
    __typeof__(dnnl_memory_desc_init_by_strides) *md_init;
    __typeof__(dnnl_memory_create) *memory_create;
    __typeof__(dnnl_memory_destroy) *memory_destroy;
    __typeof__(dnnl_matmul_desc_init) *matmul_init;
    __typeof__(dnnl_primitive_attr_create) *attr_create;
    __typeof__(dnnl_primitive_attr_destroy) *attr_destroy;
    __typeof__(dnnl_primitive_attr_set_output_scales) *set_scales;
    __typeof__(dnnl_post_ops_create) *post_ops_create;
    __typeof__(dnnl_post_ops_destroy) *post_ops_destroy;
    __typeof__(dnnl_post_ops_append_sum) *append_sum;
    __typeof__(dnnl_primitive_attr_set_post_ops) *set_post_ops;
    __typeof__(dnnl_primitive_desc_create) *pd_create;
    __typeof__(dnnl_primitive_desc_query) *pd_query;
    __typeof__(dnnl_primitive_desc_destroy) *pd_destroy;
    __typeof__(dnnl_primitive_create) *create;
    __typeof__(dnnl_primitive_execute) *execute;
    __typeof__(dnnl_primitive_destroy) *destroy;
} dn;
static dnnl_engine_t engine;
static dnnl_stream_t stream;

// `name` from the loaded library (or its dependencies, e.g. libgomp), or NULL.
static void *symbol(const char *name) { return dlsym(library, name); }

static void *required(const char *name) {
    void *f = symbol(name);
    if (!f) { fprintf(stderr, "symbol %s missing from the library\n", name); exit(3); }
    return f;
}

#define NEED(field, name) (*(void **)&dn.field = required(name))

// Loads the library and says what it is: its version, its kernels, its threads.
static void load(int which, const char *path) {
    if (libraries[which].arch) setenv("BLIS_ARCH_TYPE", libraries[which].arch, 1);
    library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library) { fprintf(stderr, "cannot load %s: %s\n", path, dlerror()); exit(3); }
    kind = libraries[which].kind;
    const char *name = libraries[which].name;
    if (kind == CBLAS) *(void **)&sgemm = required(libraries[which].sgemm);
    if (!strcmp(name, "openblas") || !strcmp(name, "scipy-openblas")) {
        const char *prefix = strcmp(name, "openblas") ? "scipy_" : "";
        char f[64];
        snprintf(f, sizeof f, "%sopenblas_get_config", prefix);
        snprintf(version, sizeof version, "%s", ((char *(*)(void))required(f))());
        snprintf(f, sizeof f, "%sopenblas_get_corename", prefix);  // the kernel family it picked
        snprintf(kernels, sizeof kernels, "%s", ((char *(*)(void))required(f))());
        snprintf(f, sizeof f, "%sopenblas_get_num_threads", prefix);
        threads = ((int (*)(void))required(f))();
    } else if (!strncmp(name, "blis", 4)) {
        ((void (*)(void))required("bli_init"))();  // before the queries: BLIS_ARCH_TYPE is checked against its kernel table
        snprintf(version, sizeof version, "BLIS %s%s", ((const char *(*)(void))required("bli_info_get_version_str"))(),
                 ((int (*)(void))required("bli_info_get_enable_openmp"))() ? " (OpenMP)" : "");
        int arch = ((int (*)(void))required("bli_arch_query_id"))();  // the sub-configuration it picked
        snprintf(kernels, sizeof kernels, "%s", ((const char *(*)(int))required("bli_arch_string"))(arch));
        threads = ((int (*)(void))required("bli_thread_get_num_threads"))();  // -1: BLIS_NUM_THREADS unset
    } else {
        NEED(sgemm, "dnnl_sgemm");
        NEED(version, "dnnl_version");
        NEED(isa, "dnnl_get_effective_cpu_isa");
        const dnnl_version_t *v = dn.version();
        snprintf(version, sizeof version, "oneDNN %d.%d.%d (%s)", v->major, v->minor, v->patch,
                 v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other runtime");
        static const struct { int isa; const char *name; } isas[] = {
            {dnnl_cpu_isa_sse41, "sse41"}, {dnnl_cpu_isa_avx, "avx"}, {dnnl_cpu_isa_avx2, "avx2"},
            {dnnl_cpu_isa_avx512_core, "avx512_core"}, {dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni"},
            {dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16"}, {dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx"},
            {dnnl_cpu_isa_avx2_vnni, "avx2_vnni"}};
        int isa = dn.isa();
        snprintf(kernels, sizeof kernels, "isa 0x%x", isa);
        for (size_t i = 0; i < sizeof isas / sizeof *isas; i++)
            if (isas[i].isa == isa) snprintf(kernels, sizeof kernels, "%s", isas[i].name);
        int (*omp_threads)(void) = (int (*)(void))symbol("omp_get_max_threads");  // libgomp, oneDNN's runtime
        threads = omp_threads ? omp_threads() : -1;
        if (kind == DNNL_MATMUL) {
            NEED(engine_create, "dnnl_engine_create");
            NEED(stream_create, "dnnl_stream_create");
            NEED(stream_wait, "dnnl_stream_wait");
            NEED(md_init, "dnnl_memory_desc_init_by_strides");
            NEED(memory_create, "dnnl_memory_create");
            NEED(memory_destroy, "dnnl_memory_destroy");
            NEED(matmul_init, "dnnl_matmul_desc_init");
            NEED(attr_create, "dnnl_primitive_attr_create");
            NEED(attr_destroy, "dnnl_primitive_attr_destroy");
            NEED(set_scales, "dnnl_primitive_attr_set_output_scales");
            NEED(post_ops_create, "dnnl_post_ops_create");
            NEED(post_ops_destroy, "dnnl_post_ops_destroy");
            NEED(append_sum, "dnnl_post_ops_append_sum");
            NEED(set_post_ops, "dnnl_primitive_attr_set_post_ops");
            NEED(pd_create, "dnnl_primitive_desc_create");
            NEED(pd_query, "dnnl_primitive_desc_query");
            NEED(pd_destroy, "dnnl_primitive_desc_destroy");
            NEED(create, "dnnl_primitive_create");
            NEED(execute, "dnnl_primitive_execute");
            NEED(destroy, "dnnl_primitive_destroy");
            if (dn.engine_create(&engine, dnnl_cpu, 0) || dn.stream_create(&stream, engine, dnnl_stream_default_flags)) {
                fprintf(stderr, "oneDNN: no CPU engine\n");
                exit(3);
            }
        }
    }
}

// One shape's call: its buffers and, for the matmul primitive, the primitive made for it.
typedef struct {
    Product p;
    float *a, *b, *c;
    dnnl_primitive_t primitive;
    dnnl_memory_t memory[3];
    char impl[128];  // the implementation oneDNN chose for the primitive
} Call;

// The matmul primitive for `call`: op(A) (m, k) and op(B) (k, n) as strided views (a transpose
// swaps the strides), alpha as the output scale, beta as a sum post-op. Made once, outside the
// timed loop. 0 on success.
static int prepare_matmul(Call *call) {
    Product p = call->p;
    dnnl_memory_desc_t a, b, c;
    dnnl_dims_t a_dims = {p.m, p.k}, b_dims = {p.k, p.n}, c_dims = {p.m, p.n};
    dnnl_dims_t a_strides = {p.lda, 1}, b_strides = {p.ldb, 1}, c_strides = {p.ldc, 1};
    if (p.ta == 'T') a_strides[0] = 1, a_strides[1] = p.lda;
    if (p.tb == 'T') b_strides[0] = 1, b_strides[1] = p.ldb;
    if (dn.md_init(&a, 2, a_dims, dnnl_f32, a_strides) || dn.md_init(&b, 2, b_dims, dnnl_f32, b_strides) ||
        dn.md_init(&c, 2, c_dims, dnnl_f32, c_strides))
        return 1;
    dnnl_matmul_desc_t desc;
    if (dn.matmul_init(&desc, &a, &b, NULL, &c)) return 1;
    dnnl_primitive_attr_t attr;
    dnnl_post_ops_t post_ops;
    dn.attr_create(&attr);
    dn.post_ops_create(&post_ops);
    if (p.alpha != 1) dn.set_scales(attr, 1, 0, &p.alpha);  // C = alpha·(A·B) …
    if (p.beta != 0) dn.append_sum(post_ops, p.beta);      // … + beta·C
    dn.set_post_ops(attr, post_ops);
    dnnl_primitive_desc_t pd;
    int failed = dn.pd_create(&pd, &desc, attr, engine, NULL) != dnnl_success;
    dn.post_ops_destroy(post_ops);
    dn.attr_destroy(attr);
    if (failed) return 1;
    const char *impl = "";
    dn.pd_query(pd, dnnl_query_impl_info_str, 0, &impl);
    snprintf(call->impl, sizeof call->impl, "%s", impl);
    failed = dn.create(&call->primitive, pd) != dnnl_success;
    dn.pd_destroy(pd);
    if (failed) return 1;
    return dn.memory_create(&call->memory[0], &a, engine, call->a) || dn.memory_create(&call->memory[1], &b, engine, call->b) ||
           dn.memory_create(&call->memory[2], &c, engine, call->c);
}

static void run(Call *call) {
    Product p = call->p;
    switch (kind) {
    case CBLAS:
        sgemm(RowMajor, p.ta == 'T' ? Trans : NoTrans, p.tb == 'T' ? Trans : NoTrans, p.m, p.n, p.k, p.alpha, call->a, p.lda,
              call->b, p.ldb, p.beta, call->c, p.ldc);
        break;
    case DNNL_SGEMM:  // row-major, as oneDNN's sgemm always is
        dn.sgemm(p.ta, p.tb, p.m, p.n, p.k, p.alpha, call->a, p.lda, call->b, p.ldb, p.beta, call->c, p.ldc);
        break;
    case DNNL_MATMUL: {
        dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, call->memory[0]}, {DNNL_ARG_WEIGHTS, call->memory[1]}, {DNNL_ARG_DST, call->memory[2]}};
        dn.execute(call->primitive, stream, 3, args);
        dn.stream_wait(stream);
        break;
    }
    }
}

// MARK: Checking and timing

static unsigned long long seed = 88172645463325252ull;
static float uniform(void) {  // xorshift64: U(−1, 1), the same numbers in every process
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    return (float)((seed >> 40) / (double)(1 << 24) * 2 - 1);
}

static float *matrix(long count) {
    float *x = aligned_alloc(64, ((count * sizeof(float)) + 63) / 64 * 64);
    for (long i = 0; i < count; i++) x[i] = uniform();
    return x;
}

// op(A)[i, l] and op(B)[l, j], row-major with their leading dimensions.
static double a_at(const Call *c, int i, int l) { return c->p.ta == 'T' ? c->a[(long)l * c->p.lda + i] : c->a[(long)i * c->p.lda + l]; }
static double b_at(const Call *c, int l, int j) { return c->p.tb == 'T' ? c->b[(long)j * c->p.ldb + l] : c->b[(long)l * c->p.ldb + j]; }

// One call on a fresh C checked against the naive loops in double: the largest error over the
// checked entries relative to the sum's own size, |c − ref| / (|alpha|·Σ_l |a_il·b_lj| + |beta·c0|),
// which a product in any order of summation keeps under (k + 2)·2⁻²⁴; entries of C's rows
// past column n (ldc > n) must stay as they were. Every row when m·n·k ≤ 2²⁶, else 64 rows
// spread from the first to the last. Returns the error, or INFINITY (a NaN, a touched pad).
static double check(Call *call, long c_count) {
    Product p = call->p;
    float *c0 = malloc(c_count * sizeof(float));
    memcpy(c0, call->c, c_count * sizeof(float));
    run(call);
    int rows = (double)p.m * p.n * p.k <= (double)(1 << 26) || p.m <= 64 ? p.m : 64;
    double worst = 0;
    for (int r = 0; r < rows; r++) {
        int i = rows == p.m ? r : (int)((long)r * (p.m - 1) / (rows - 1));
        for (int j = 0; j < p.n; j++) {
            double sum = 0, size = 0;
            for (int l = 0; l < p.k; l++) {
                double t = a_at(call, i, l) * b_at(call, l, j);
                sum += t, size += fabs(t);
            }
            double before = c0[(long)i * p.ldc + j], ref = p.alpha * sum + (p.beta == 0 ? 0 : p.beta * before);
            double bound = fabs(p.alpha) * size + fabs(p.beta * before);
            double err = fabs(call->c[(long)i * p.ldc + j] - ref) / (bound > 0 ? bound : 1);
            if (!(err <= worst)) worst = isnan(err) ? INFINITY : err;
        }
        for (int j = p.n; j < p.ldc && (long)i * p.ldc + j < c_count; j++)
            if (memcmp(&call->c[(long)i * p.ldc + j], &c0[(long)i * p.ldc + j], sizeof(float))) worst = INFINITY;
    }
    free(c0);
    return worst;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int by_value(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

// Warm-up (0.05 s and 3 calls), then single calls timed one by one until `seconds` and `least`
// calls have passed. C keeps accumulating where beta is 1: the values grow, the work does not change.
static void time_calls(Call *call, double seconds, long least, long *reps, double *minimum, double *median) {
    double start = now();
    for (int i = 0; i < 3 || now() - start < 0.05; i++) run(call);
    long capacity = 1024, n = 0;
    double *t = malloc(capacity * sizeof(double)), total = 0;
    while (n < least || total < seconds) {
        double t0 = now();
        run(call);
        double dt = now() - t0;
        if (n == capacity) t = realloc(t, (capacity *= 2) * sizeof(double));
        t[n++] = dt, total += dt;
    }
    qsort(t, n, sizeof(double), by_value);
    *reps = n, *minimum = t[0], *median = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
    free(t);
}

// MARK: Main

static void clean(char *s) {  // no commas or newlines inside a CSV field
    for (; *s; s++)
        if (*s == ',' || *s == '\n') *s = ' ';
}

static void list(void) {
    printf("| # | m × n × k | op(A) op(B) | alpha | beta | lda, ldb, ldc | issued by (times a step) |\n|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < shape_count; i++) {
        Product p = shapes[i].p;
        char u[1024];
        uses(&shapes[i], 1, u, sizeof u);
        printf("| %d | %d × %d × %d | %c%c | %g | %g | %d, %d, %d | %s |\n", i + 1, p.m, p.n, p.k, p.ta, p.tb, p.alpha, p.beta, p.lda,
               p.ldb, p.ldc, u);
    }
}

int main(int argc, char **argv) {
    make_shapes();
    const char *name = NULL, *path = NULL, *only = NULL;
    double seconds = 0.2;
    long least = 10;
    int round = 1, header = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--list")) return list(), 0;
        else if (!strcmp(argv[i], "--lib") && i + 1 < argc) path = argv[++i];
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) least = atol(argv[++i]) > 0 ? atol(argv[i]) : 1;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--round") && i + 1 < argc) round = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--header")) header = 1;
        else if (argv[i][0] != '-' && !name) name = argv[i];
        else { fprintf(stderr, "unknown argument %s\n", argv[i]); return 2; }
    }
    int which = -1;
    for (int i = 0; name && i < (int)(sizeof libraries / sizeof *libraries); i++)
        if (!strcmp(name, libraries[i].name)) which = i;
    if (which < 0) {
        fprintf(stderr, "usage: %s openblas|scipy-openblas|blis|blis-skx|dnnl-sgemm|dnnl-matmul [--lib PATH] [--seconds S] [--reps N] "
                        "[--only W6] [--round R] [--header]\n       %s --list\n", argv[0], argv[0]);
        return 2;
    }
    load(which, path ? path : libraries[which].path);
    clean(version), clean(kernels);
    if (header)
        printf("library,round,version,kernels,threads,shape,m,n,k,ta,tb,alpha,beta,lda,ldb,ldc,used_by,max_error,status,reps,min_us,"
               "median_us,gflops_median,impl\n");
    fprintf(stderr, "%s: %s; kernels %s; %d threads\n", name, version, kernels, threads);
    fprintf(stderr, "%4s %-22s %-3s %-6s %-9s %-5s %7s %11s %11s %8s  %s\n", "#", "m x n x k", "op", "beta", "max error", "check",
            "reps", "min µs", "median µs", "GFLOP/s", "issued by");
    int failures = 0;
    for (int i = 0; i < shape_count; i++) {
        char used[512];
        uses(&shapes[i], 0, used, sizeof used);
        char needle[64];  // "W1" picks W1's products, not W10's: the CSV's token is "W1:count"
        snprintf(needle, sizeof needle, "%s:", only ? only : "");
        if (only && !strstr(used, needle)) continue;
        Call call = {.p = shapes[i].p};
        Product p = call.p;
        long a_count = (long)(p.ta == 'T' ? p.k : p.m) * p.lda, b_count = (long)(p.tb == 'T' ? p.n : p.k) * p.ldb;
        long c_count = (long)p.m * p.ldc;
        seed = 88172645463325252ull + i;  // every library sees the same numbers for a shape
        call.a = matrix(a_count), call.b = matrix(b_count), call.c = matrix(c_count);
        snprintf(call.impl, sizeof call.impl, "%s", kernels);
        double error = INFINITY, minimum = 0, median = 0;
        long reps = 0;
        const char *status = "ok";
        if (kind == DNNL_MATMUL && prepare_matmul(&call)) status = "UNSUPPORTED";
        else if (!((error = check(&call, c_count)) <= (p.k + 2) * 0x1p-24)) status = "FAIL";
        else time_calls(&call, seconds, least, &reps, &minimum, &median);
        failures += strcmp(status, "ok") != 0;
        double flops = 2.0 * p.m * p.n * p.k, gflops = reps ? flops / median / 1e9 : 0;
        clean(call.impl);
        printf("%s,%d,%s,%s,%d,%d,%d,%d,%d,%c,%c,%g,%g,%d,%d,%d,%s,%.3g,%s,%ld,%.3f,%.3f,%.2f,%s\n", name, round, version, kernels,
               threads, i + 1, p.m, p.n, p.k, p.ta, p.tb, p.alpha, p.beta, p.lda, p.ldb, p.ldc, used, error, status, reps,
               minimum * 1e6, median * 1e6, gflops, call.impl);
        fflush(stdout);
        char dims[32];
        snprintf(dims, sizeof dims, "%dx%dx%d", p.m, p.n, p.k);
        fprintf(stderr, "%4d %-24s %c%c  %-6g %-9.2g %-5s %7ld %11.2f %11.2f %8.1f  %s\n", i + 1, dims, p.ta, p.tb, p.beta, error,
                status, reps, minimum * 1e6, median * 1e6, gflops, used);
        if (call.primitive) {
            dn.destroy(call.primitive);
            for (int m = 0; m < 3; m++) dn.memory_destroy(call.memory[m]);
        }
        free(call.a), free(call.b), free(call.c);
    }
    if (failures) fprintf(stderr, "%s: %d shape(s) failed the check or were not supported: not timed\n", name, failures);
    return failures ? 1 : 0;
}
