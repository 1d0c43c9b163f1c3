#ifndef ALLOCATION_COUNTER_H
#define ALLOCATION_COUNTER_H
#include <stdint.h>

/// Starts counting heap allocations (malloc, calloc, realloc, posix_memalign, aligned_alloc,
/// memalign) in every thread of the process, from zero.
void allocation_counter_start(void);
/// Stops counting and returns the number of allocations since the last start.
int64_t allocation_counter_stop(void);

#endif
