// tinytorch.c compress: int8 QuantizedLinear, dynamic and static quantization of a module tree,
// pruning, low rank. A layer above nn: a compressed Linear is a module of its own (an int8
// QuantizedLinear, a low-rank pair, a calibrating observer) that these functions swap in for a
// tt_nn_linear (tt_nn_linear.swap, nn/layers.h), so nn knows nothing of compression.
//
//     tt_quantize_dynamic(tt_nn_sequential_module(&seq));  // every Linear of the tree runs int8
//     tt_nn_linear_low_rank(&fc, 16);                      // fc runs as two Linears of rank 16
#ifndef TT_COMPRESS_H
#define TT_COMPRESS_H

#include "../nn/layers.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- QuantizedLinear: int8 inference (compress/qlinear.c) ----
// Post-training dynamic quantization of a Linear for inference. The weight W (out, in) becomes
// int8 with one scale per output channel, sw[n] = max_k |W[n, k]| / 127, q = round(W / sw);
// each input row is quantized at run time to u8 with its own scale and zero point (255 levels
// over [min(0, min x), max(0, max x)]); the product runs in int32 (AVX512-VNNI vpdpbusd, AVX2
// or portable C, the same bits on each) and is scaled back to f32, plus the f32 bias. An
// output y[m, n] differs from the f32 Linear's by at most sx[m] / 2 sum_k |W[n, k]| + sw[n] / 2
// sum_k |x[m, k]| + K sx[m] sw[n] / 4 (half a step of each quantizer on every term; typically
// a tenth to a half of that: the rounding errors partly cancel). tests/test_qlinear.c.
// No autograd: the forward aborts when grad mode is on and its input requires grad (run it
// under tt_no_grad_begin()/tt_no_grad_end() or tt_set_grad_enabled(false)).
//
//     tt_nn_qlinear q;
//     tt_nn_qlinear_from_linear(&q, &fc);           // a copy: fc is unchanged and may be freed
//     tt_no_grad_begin();
//     tt_tensor *y = tt_nn_qlinear_forward(&q, x);  // x (..., in) f32 -> (..., out) f32
//     tt_no_grad_end();
//     tt_nn_qlinear_free(&q);
// Or in place, so every module that calls tt_nn_linear_forward runs int8 (a whole module tree:
// tt_quantize_dynamic below; a GPT: tt_gpt_quantize):
//     tt_nn_linear_quantize(&fc);   // fc's f32 weight stays (tt_nn_linear_dequantize goes back)

typedef struct tt_nn_qlinear {
    struct tt_k_qweight *qweight;  // packed int8 weight, per-channel scales (owned)
    tt_tensor *bias;               // (out,) f32 or NULL (owned)
    int64_t in_features, out_features;
    // Static activations (tt_nn_qlinear_set_static): every row quantized with this one scale and
    // zero point instead of its own range. false: dynamic, per row.
    bool act_static;
    float act_scale;
    int32_t act_zero;
} tt_nn_qlinear;

// From a weight (out, in) and a bias (out,) or NULL of any float dtype (copied and rounded to
// f32 first); in <= 65536. tt_nn_qlinear_from_linear(q, m) is this with m's weight and bias.
void tt_nn_qlinear_init(tt_nn_qlinear *q, const tt_tensor *weight, const tt_tensor *bias);
void tt_nn_qlinear_from_linear(tt_nn_qlinear *q, const tt_nn_linear *m);
// x (..., in) f32, any layout -> y (..., out) f32, a new tensor without history.
tt_tensor *tt_nn_qlinear_forward(tt_nn_qlinear *q, tt_tensor *x);
// The bytes the forward reads for its parameters: packed int8 weight, scales, sums and bias.
int64_t tt_nn_qlinear_bytes(const tt_nn_qlinear *q);
void tt_nn_qlinear_free(tt_nn_qlinear *q);  // safe on a zeroed struct
tt_module tt_nn_qlinear_module(tt_nn_qlinear *q);  // type "QuantizedLinear", no parameters

// Swaps in for m (m->swap) an int8 QuantizedLinear made from m's current weight, replacing an
// older one or an observer: tt_nn_linear_forward then runs int8, while tt_nn_linear_params still
// lists the f32 weight and bias. Re-quantize after changing the weight. _dequantize swaps the
// int8 module (or a calibration observer) out again (safe when there is neither).
void tt_nn_linear_quantize(tt_nn_linear *m);
void tt_nn_linear_dequantize(tt_nn_linear *m);
// The int8 module running in m's place (borrowed), NULL when m is not quantized.
tt_nn_qlinear *tt_nn_linear_quantized(const tt_nn_linear *m);

// ---- weight formats for inference (compress/qlinear.c) ----
// A Linear's weight may run in another format than f32: tt_nn_linear_quantize_as swaps in a
// module that holds the weight packed in that format and multiplies f32 inputs by it (f32
// outputs, no autograd: inference only, as QuantizedLinear above). The f32 weight and bias
// stay, so tt_nn_linear_params, checkpoints and tt_nn_linear_dequantize see them unchanged.
//
//     tt_quant q;
//     if (tt_quant_parse("bf16", &q) != TT_OK) { puts(tt_last_error()); ... }
//     tt_quantize_dynamic_as(tt_nn_sequential_module(&seq), q);  // every Linear runs bf16
typedef enum tt_quant {
    TT_QUANT_NONE,  // "f32": the Linear's own weight
    TT_QUANT_INT8,  // "int8": QuantizedLinear above (per-channel int8, per-row u8 inputs)
    TT_QUANT_BF16,  // "bf16": bfloat16 weights, f32 inputs and sums
    // "int4" (qlinear_int4.c): 4-bit weights in blocks of 32 inputs with an f16 scale each
    // (w ~= d (e - 8), e in [0, 15], d the least-squares choice among six candidates; 4.5 bits
    // a weight, about 0.56 byte), inputs quantized at run time to int8 in blocks of 32, exact
    // int32 block sums (VNNI, AVX2 or portable C, the same bits) accumulated in f32. Each
    // weight is within one step d of its f32 value (tensor/kernels/q4gemm.h: the scheme and
    // its error); a GPT's perplexity moves by well under 1% (docs/performance.md).
    TT_QUANT_INT4,
    TT_QUANT_COUNT
} tt_quant;

const char *tt_quant_name(tt_quant q);  // "f32", "int8", "bf16", "int4"
// The format named name; TT_ERR_ARG listing the names otherwise (q unchanged).
tt_status tt_quant_parse(const char *name, tt_quant *q);
// Swaps in for m a module running m's current weight in format q (replacing an earlier format
// or an observer); TT_QUANT_NONE goes back to f32. tt_nn_linear_quantize(m) is q = INT8.
// Aborts when the weight does not fit the format (int8: in_features <= 65536).
void tt_nn_linear_quantize_as(tt_nn_linear *m, tt_quant q);
// m's format: TT_QUANT_NONE for an f32 Linear (low-rank and observed ones too).
tt_quant tt_nn_linear_quantization(const tt_nn_linear *m);
// The bytes a quantized m's forward reads for its weight and bias; 0 when m is not quantized.
int64_t tt_nn_linear_quantized_bytes(const tt_nn_linear *m);
// tt_quantize_dynamic in format q (not NONE): returns how many Linears it swapped.
int tt_quantize_dynamic_as(tt_module m, tt_quant q);
//
// TT_QUANT_BF16 (compress/qbf16.c, tensor/kernels/bf16_linear.h): every weight rounded once to
// bf16 (round to nearest even) and packed in k-pair panels of 32 output channels, 2 bytes a
// weight; each input row rounded to bf16 at run time, products exact in f32, f32 sums, plus the
// f32 bias. One arithmetic on every path (AVX512-BF16 vdpbf16ps, AVX-512 and AVX2 widening to
// f32 with FMA, portable C) and thread count: per output, blocks of 384 steps of k, each a
// chain over k pairs adding the odd step's product, then the even one's (vdpbf16ps's order),
// y = bias + block 0, then y + each later block; bit for bit tt_k_gemm_bias_bf16's result (the
// autocast GEMM) with the weight as a pre-cast bf16 operand. An output differs from the exact
// product of the bf16 values by at most gamma(K + blocks) (|bias| + sum_k |x_k w_k|),
// gamma(n) = n 2^-24 / (1 - n 2^-24). One row (decoding) runs a matrix-vector kernel reading
// the weight once, two panels at a time; more rows run the bf16 micro-kernels over the panels
// in place (no repacking). tests/test_qlinear_bf16.c.

// ---- pruning (compress/prune.c) ----
// torch.nn.utils.prune's magnitude and structured pruning over named tensors. A tt_pruning
// records each pruned tensor and its mask (same shape and dtype, 1 kept, 0 pruned), the masks
// named as PyTorch's buffers: "<parameter name>_mask" ("blocks.0.mlp.fc.weight_mask").
// Unlike PyTorch, which keeps weight_orig and recomputes weight = weight_orig * mask in a
// forward pre-hook, the pruned entries of the tensor itself are set to 0, so a model runs
// unchanged. To fine-tune, call tt_prune_apply after every optimizer step: it sets the pruned
// entries to exactly +0.0 again, so neither their gradient (which is not zero: dW = dY^T X
// does not depend on W), AdamW's momentum nor its weight decay can revive them (their
// optimizer state keeps moving; only the weight is held).
//
//     tt_pruning pr;
//     tt_pruning_init(&pr);
//     tt_prune_global_unstructured(&pr, &weights, 0.5);   // the 50% smallest |w| of the list
//     for (...) { ...; tt_optim_step(&o); tt_prune_apply(&pr); }
//     tt_ckpt_add_params(&ck, "model.", &pr.masks);       // saved as model.<name>_mask
//     tt_prune_remove(&pr, NULL);                          // permanent: forget the masks
//     tt_pruning_free(&pr);
//
// amount is a fraction in [0, 1] (aborts otherwise) of the units (entries, or slices along
// dim) that are still unpruned, as PyTorch's PruningContainer: pruning 0.5 twice leaves 25%.
// round(amount * units) units are pruned (round half to even, Python's round), those of the
// smallest magnitude; ties go in index order (the lower flat index, or the lower slice,
// is pruned first; a global list is indexed in list order). Tensors are float and contiguous
// (parameters are); pruning a tensor again under the same name combines the masks.

typedef struct tt_pruning {
    tt_params params;  // the pruned tensors (retained) under their names
    tt_params masks;   // params.items[i]'s mask as "<name>_mask": buffers, no grad
} tt_pruning;

void tt_pruning_init(tt_pruning *p);
void tt_pruning_free(tt_pruning *p);  // releases the references; the tensors keep their values

// prune.l1_unstructured: the round(amount * n) unpruned entries of t with the smallest |t|.
void tt_prune_l1_unstructured(tt_pruning *p, const char *name, tt_tensor *t, double amount);
// prune.global_unstructured with L1Unstructured: one threshold over every entry of every
// tensor of list, so layers lose different fractions.
void tt_prune_global_unstructured(tt_pruning *p, const tt_params *list, double amount);
// prune.ln_structured: whole slices along dim (dim 0 of a Linear's (out, in) weight: output
// channels, i.e. rows) with the smallest L-n norm of the masked tensor, n > 0 or INFINITY.
void tt_prune_ln_structured(tt_pruning *p, const char *name, tt_tensor *t, double amount,
                            double n, int dim);
// Prunes exactly the entries where keep[i] is false (keep: numel(t) flags, row-major), as
// prune.custom_from_mask; other pruners and tt_gpt_prune_heads build on it.
void tt_prune_custom(tt_pruning *p, const char *name, tt_tensor *t, const bool *keep);
// Sets every pruned entry to 0 (after each optimizer step while fine-tuning).
void tt_prune_apply(const tt_pruning *p);
// prune.remove: applies the mask of the tensor named name one last time and forgets it, so the
// zeros become ordinary weights; name NULL removes every one. Aborts for an unknown name.
void tt_prune_remove(tt_pruning *p, const char *name);
// The mask of name (borrowed), NULL when it is not pruned.
tt_tensor *tt_prune_mask(const tt_pruning *p, const char *name);
// Restores masks saved with tt_ckpt_add_params(ck, prefix, &p->masks): for each tensor of list
// with a prefix + "<name>_mask" entry in ck (io/checkpoint.h), records
// it as pruned with that mask and applies it. TT_ERR_MISMATCH for a mask whose dtype or shape
// differs from its tensor, TT_ERR_FORMAT for values other than 0 and 1; nothing changes then.
struct tt_checkpoint;
tt_status tt_prune_restore(tt_pruning *p, const struct tt_checkpoint *ck, const char *prefix,
                           const tt_params *list);

// The fraction of entries equal to 0 (either sign) of a tensor, and over a whole list.
int64_t tt_count_nonzero(const tt_tensor *t);
double tt_tensor_sparsity(const tt_tensor *t);
double tt_sparsity(const tt_params *list);

// ---- low rank (compress/lowrank.c) ----

// The thin SVD A = U diag(S) Vt of a row-major (m, n) f64 matrix by one-sided Jacobi
// (Hestenes: rotate column pairs of A, or of A^T when m < n, until they are orthogonal to
// machine precision), k = min(m, n): U (m, k), S (k) descending and >= 0, Vt (k, n), all
// row-major, caller-allocated. Columns of U for zero singular values are zero.
void tt_svd_jacobi(double *U, double *S, double *Vt, const double *A, int64_t m, int64_t n);
// The same on a float matrix (m, n) (any layout): new f64 tensors U (m, k), S (k), Vh (k, n),
// as torch.linalg.svd(A, full_matrices=False) up to the signs of singular vector pairs.
void tt_svd(const tt_tensor *A, tt_tensor **U, tt_tensor **S, tt_tensor **Vh);

// Replaces m's weight W (out, in) by its best rank-r approximation (Eckart-Young) as two
// Linears, torch.nn.Sequential(Linear(in, r, bias=False), Linear(r, out)), swapped in for m
// (m->swap, type "LowRankLinear"): factor 0 weight sqrt(S_r) Vt_r (r, in), factor 1 weight
// U_r sqrt(S_r) (out, r) and m's bias. The forward then runs both (2 r (in + out) FLOPs per
// row instead of 2 in out);
// tt_nn_linear_params lists "prefix.0.weight", "prefix.1.weight", "prefix.1.bias" (Sequential's
// names), so rebuild a parameter list made before. The dense weight is released. Aborts for
// rank outside [1, min(in, out)], a quantized Linear or one already factored.
void tt_nn_linear_low_rank(tt_nn_linear *m, int64_t rank);
// The two factors (borrowed) of a Linear made low rank, NULL for any other.
tt_nn_linear *tt_nn_linear_factors(const tt_nn_linear *m);

// ---- dynamic quantization of a module tree (compress/qlinear.c) ----
// PyTorch's torch.ao.quantization.quantize_dynamic for Linear: walks m and its children
// (tt_module_ops.children, depth first) and runs tt_nn_linear_quantize on every Linear it
// reaches, so their forwards run int8 (QuantizedLinear above); everything else stays f32, as
// PyTorch's dynamic quantization leaves convolutions, norms and embeddings. Returns how many
// Linears it quantized (a Linear reached twice counts twice; one with in > 65536, the int8
// product's limit, stays f32 and is not counted). Quantizing again re-reads the f32 weights.
// tt_dequantize_model frees them again (the forwards are then the f32 ones, bit for bit) and
// returns how many it freed. A Linear is recognized by tt_nn_linear_module's ops, so a custom
// module's Linears are reached when its children callback lists them. The GPT's tied head is
// no Linear: tt_gpt_quantize (models/gpt/gpt.h) handles it.
//
//     int n = tt_quantize_dynamic(tt_nn_sequential_module(&seq));  // seq: conv, ..., 3 Linears
//     tt_no_grad_begin();
//     tt_tensor *logits = tt_nn_sequential_forward(&seq, x);      // Linears int8, convs f32
//     tt_no_grad_end();
//     tt_dequantize_model(tt_nn_sequential_module(&seq));          // back to f32
int tt_quantize_dynamic(tt_module m);
int tt_dequantize_model(tt_module m);

// ---- static quantization: calibrated activation ranges (compress/qlinear.c) ----
// PyTorch's prepare / calibrate / convert with MinMaxObserver (affine quint8, per tensor):
// tt_quantize_static_prepare swaps an observer in for every Linear of m (their forwards stay
// f32 and record the min and max of their inputs); run calibration batches through m's
// forward (under tt_no_grad_begin()); tt_quantize_static_convert then quantizes each observed
// Linear as tt_nn_linear_quantize does, with its input quantized by one fixed scale and zero
// point from the recorded range (tt_k_qact_from_range: the range widened to hold 0, 255 steps)
// instead of per row at run time, and frees the observers. Inputs outside the calibrated range
// clamp to its ends. Both return how many Linears they handled; convert aborts for a Linear
// whose observer saw no input. tt_dequantize_model undoes either (and frees the observers).
// tests/test_quantize.c, tests/test_milestone_digits.c.
//
//     tt_quantize_static_prepare(tt_nn_sequential_module(&seq));
//     tt_no_grad_begin();
//     for (int b = 0; b < n_calib; b++) tt_scope_begin(), tt_nn_sequential_forward(&seq, xb[b]),
//                                        tt_scope_end();
//     tt_no_grad_end();
//     tt_quantize_static_convert(tt_nn_sequential_module(&seq));  // the Linears run static int8
typedef struct tt_observer {
    double min, max;  // of every input element seen (NaNs skipped); +inf, -inf before any
    int64_t batches;  // forwards observed
} tt_observer;

void tt_observer_update(tt_observer *o, const tt_tensor *x);  // x: any float dtype and layout
// The observer of a Linear prepared for static quantization (borrowed), NULL for any other.
tt_observer *tt_nn_linear_observer(const tt_nn_linear *m);
int tt_quantize_static_prepare(tt_module m);
int tt_quantize_static_convert(tt_module m);
// Fixes q's activation quantization to the range [lo, hi] (widened to hold 0).
void tt_nn_qlinear_set_static(tt_nn_qlinear *q, double lo, double hi);

#ifdef __cplusplus
}
#endif

// The names from before the tt_nn_* scheme, deprecated for one release.
#ifndef TT_NO_DEPRECATED
#include "deprecated.h"
#endif

#endif  // TT_COMPRESS_H
