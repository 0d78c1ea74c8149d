// Neural-network kernels on contiguous raw buffers, forward and backward, f32 and f64:
// softmax, log-softmax, masked fill, layernorm, rmsnorm, embedding, cross-entropy, dropout.
// No tensors and no autograd (autograd/ops_nn.c wraps them). Shapes and letters: nn.h.
//
// Each kernel is written once in nn.inc over the element type T and included below once per
// dtype, with every function name spelled out. <tgmath.h> picks expf/logf/sqrtf for float
// operands. f32 rows are reduced in double. Rows are independent, so they run in parallel
// (thread pool) when large; reductions across rows (dweight, the loss) run in a fixed serial order:
// results do not depend on the thread count. The f32 layernorm is in layernorm.c (vectorized);
// the template's layernorm is the f64 one only (its includer names it).
#include "nn.h"

#include <tgmath.h>

#include "../tensor_internal.h"

// Below this many elements a kernel stays on one thread.
#define PAR_MIN 32768
// Columns per parallel task of the layernorm's dweight and dbias sums over rows.
#define LN_COLS 32
// Rows whose layernorm sums are interleaved.
#define LN_GROUP 4


// ---- f32 ----

#define T float
#define SOFTMAX_ROW softmax_row_f32
#define SOFTMAX_FORWARD softmax_forward_f32
#define SOFTMAX_BACKWARD_ROW softmax_backward_row_f32
#define LOG_SOFTMAX_BACKWARD_ROW log_softmax_backward_row_f32
#define KSOFTMAX_FORWARD tt_ksoftmax_forward_f32
#define KLOG_SOFTMAX_FORWARD tt_klog_softmax_forward_f32
#define KSOFTMAX_BACKWARD tt_ksoftmax_backward_f32
#define KLOG_SOFTMAX_BACKWARD tt_klog_softmax_backward_f32
#define KMASKED_FILL_FORWARD tt_kmasked_fill_forward_f32
#define KMASKED_FILL_BACKWARD tt_kmasked_fill_backward_f32
#define KRMSNORM_FORWARD tt_krmsnorm_forward_f32
#define KRMSNORM_BACKWARD tt_krmsnorm_backward_f32
#define KEMBEDDING_FORWARD tt_kembedding_forward_f32
#define KEMBEDDING_BACKWARD tt_kembedding_backward_f32
#define KCROSS_ENTROPY_FORWARD tt_kcross_entropy_forward_f32
#define KCROSS_ENTROPY_BACKWARD tt_kcross_entropy_backward_f32
#define KDROPOUT_FORWARD tt_kdropout_forward_f32
#define KDROPOUT_BACKWARD tt_kdropout_backward_f32
#define NN_JOB nn_job_f32
#define NN_GRAIN nn_grain_f32
#define SOFTMAX_RANGE softmax_range_f32
#define SOFTMAX_BACKWARD_RANGE softmax_backward_range_f32
#define RMSNORM_FORWARD_RANGE rmsnorm_forward_range_f32
#define RMSNORM_BACKWARD_RANGE rmsnorm_backward_range_f32
#define CROSS_ENTROPY_FORWARD_RANGE cross_entropy_forward_range_f32
#define CROSS_ENTROPY_BACKWARD_RANGE cross_entropy_backward_range_f32
#include "nn.inc"

// ---- f64 ----

#define T double
#define SOFTMAX_ROW softmax_row_f64
#define SOFTMAX_FORWARD softmax_forward_f64
#define SOFTMAX_BACKWARD_ROW softmax_backward_row_f64
#define LOG_SOFTMAX_BACKWARD_ROW log_softmax_backward_row_f64
#define KSOFTMAX_FORWARD tt_ksoftmax_forward_f64
#define KLOG_SOFTMAX_FORWARD tt_klog_softmax_forward_f64
#define KSOFTMAX_BACKWARD tt_ksoftmax_backward_f64
#define KLOG_SOFTMAX_BACKWARD tt_klog_softmax_backward_f64
#define KMASKED_FILL_FORWARD tt_kmasked_fill_forward_f64
#define KMASKED_FILL_BACKWARD tt_kmasked_fill_backward_f64
#define KLAYERNORM_FORWARD tt_klayernorm_forward_f64
#define KLAYERNORM_BACKWARD tt_klayernorm_backward_f64
#define LAYERNORM_FORWARD_ROWS layernorm_forward_rows_f64
#define LAYERNORM_BACKWARD_ROWS layernorm_backward_rows_f64
#define KRMSNORM_FORWARD tt_krmsnorm_forward_f64
#define KRMSNORM_BACKWARD tt_krmsnorm_backward_f64
#define KEMBEDDING_FORWARD tt_kembedding_forward_f64
#define KEMBEDDING_BACKWARD tt_kembedding_backward_f64
#define KCROSS_ENTROPY_FORWARD tt_kcross_entropy_forward_f64
#define KCROSS_ENTROPY_BACKWARD tt_kcross_entropy_backward_f64
#define KDROPOUT_FORWARD tt_kdropout_forward_f64
#define KDROPOUT_BACKWARD tt_kdropout_backward_f64
#define NN_JOB nn_job_f64
#define NN_GRAIN nn_grain_f64
#define SOFTMAX_RANGE softmax_range_f64
#define SOFTMAX_BACKWARD_RANGE softmax_backward_range_f64
#define RMSNORM_FORWARD_RANGE rmsnorm_forward_range_f64
#define RMSNORM_BACKWARD_RANGE rmsnorm_backward_range_f64
#define CROSS_ENTROPY_FORWARD_RANGE cross_entropy_forward_range_f64
#define CROSS_ENTROPY_BACKWARD_RANGE cross_entropy_backward_range_f64
#define LAYERNORM_FORWARD_RANGE layernorm_forward_range_f64
#define LAYERNORM_BACKWARD_RANGE layernorm_backward_range_f64
#define LAYERNORM_PARAMS_RANGE layernorm_params_range_f64
#include "nn.inc"
