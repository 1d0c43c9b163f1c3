// Counts heap allocations while a window is open. The benchmark executable defines the malloc
// family itself; definitions in the executable take precedence over libc's for every library in
// the process (the Swift runtime, Foundation, OpenBLAS), and each forwards to glibc's exported
// __libc_* entry point. The cost outside a window is one relaxed atomic load per call.
//
// Not ordo-one/malloc-interposer: on Linux it needs LD_PRELOAD, which `swift run` does not set.
#include "AllocationCounter.h"
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *pointer);

static atomic_bool counting = false;
static atomic_llong allocations = 0;

static inline void count(void) {
    if (atomic_load_explicit(&counting, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    }
}

void allocation_counter_start(void) {
    atomic_store(&allocations, 0);
    atomic_store(&counting, true);
}

int64_t allocation_counter_stop(void) {
    atomic_store(&counting, false);
    return atomic_load(&allocations);
}

void *malloc(size_t size) { count(); return __libc_malloc(size); }
void *calloc(size_t count_, size_t size) { count(); return __libc_calloc(count_, size); }
void *realloc(void *pointer, size_t size) { count(); return __libc_realloc(pointer, size); }
void free(void *pointer) { __libc_free(pointer); }
void *memalign(size_t alignment, size_t size) { count(); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { count(); return __libc_memalign(alignment, size); }

int posix_memalign(void **result, size_t alignment, size_t size) {
    count();
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL && size != 0) return ENOMEM;
    *result = pointer;
    return 0;
}
