// Pooling kernels on contiguous raw buffers, forward and backward, f32 and f64: max pooling
// with indices, average pooling over separable windows. No tensors and no autograd
// (autograd/ops_pool.c wraps them). Shapes and letters: pool.h.
//
// Each kernel is written once in pool.inc over the element type T and included below once per
// dtype, with every function name spelled out. Planes are independent: they run in parallel
// (tt__parallel_for) when large, each writing only its own plane, so results do not depend on
// threads.
#include "pool.h"

#include <math.h>
#include <stdbool.h>

#include "../tensor_internal.h"

// Below this many input elements a kernel stays on one thread.
#define PAR_MIN 32768


// ---- f32 ----

#define T float
#define KMAX_POOL2D_FORWARD tt_kmax_pool2d_forward_f32
#define KMAX_POOL2D_BACKWARD tt_kmax_pool2d_backward_f32
#define KAVG_POOL2D_FORWARD tt_kavg_pool2d_forward_f32
#define KAVG_POOL2D_BACKWARD tt_kavg_pool2d_backward_f32
#define POOL_JOB pool_job_f32
#define MAX_FORWARD_PLANES max_forward_planes_f32
#define MAX_BACKWARD_PLANES max_backward_planes_f32
#define AVG_FORWARD_PLANES avg_forward_planes_f32
#define AVG_BACKWARD_PLANES avg_backward_planes_f32
#include "pool.inc"

// ---- f64 ----

#define T double
#define KMAX_POOL2D_FORWARD tt_kmax_pool2d_forward_f64
#define KMAX_POOL2D_BACKWARD tt_kmax_pool2d_backward_f64
#define KAVG_POOL2D_FORWARD tt_kavg_pool2d_forward_f64
#define KAVG_POOL2D_BACKWARD tt_kavg_pool2d_backward_f64
#define POOL_JOB pool_job_f64
#define MAX_FORWARD_PLANES max_forward_planes_f64
#define MAX_BACKWARD_PLANES max_backward_planes_f64
#define AVG_FORWARD_PLANES avg_forward_planes_f64
#define AVG_BACKWARD_PLANES avg_backward_planes_f64
#include "pool.inc"
