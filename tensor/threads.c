// Thread count of the parallel kernels, a front end to OpenMP's. Not a thread pool: OpenMP's
// runtime owns the threads; a build with OMP=0 runs every kernel on the calling thread. The
// wait policy of idle workers is the environment's (tensor.h, "threads").
#include "tensor_internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

// ---- thread count ----

void tt_set_num_threads(int n) {
    TT_CHECK(n >= 1, "the thread count must be at least 1, got %d (1 runs every kernel on the "
             "calling thread)", n);
#ifdef _OPENMP
    omp_set_num_threads(n);
#endif
}

int tt_get_num_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}
