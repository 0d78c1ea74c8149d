// STUB: replaced by the real implementation of this family.
#include "autograd_internal.h"

tt_tensor *tt_softmax(tt_tensor *x, int dim) {
    (void)x;
    (void)dim;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_log_softmax(tt_tensor *x, int dim) {
    (void)x;
    (void)dim;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_masked_fill(tt_tensor *x, tt_tensor *mask, double value) {
    (void)x;
    (void)mask;
    (void)value;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_layernorm(tt_tensor *x, int norm_ndim, tt_tensor *weight, tt_tensor *bias,
                        double eps) {
    (void)x;
    (void)norm_ndim;
    (void)weight;
    (void)bias;
    (void)eps;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_rmsnorm(tt_tensor *x, tt_tensor *weight, double eps) {
    (void)x;
    (void)weight;
    (void)eps;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_embedding(tt_tensor *weight, tt_tensor *indices) {
    (void)weight;
    (void)indices;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_cross_entropy(tt_tensor *logits, tt_tensor *targets, int64_t ignore_index) {
    (void)logits;
    (void)targets;
    (void)ignore_index;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_cross_entropy_smooth(tt_tensor *logits, tt_tensor *targets,
                                   int64_t ignore_index, double label_smoothing) {
    (void)logits;
    (void)targets;
    (void)ignore_index;
    (void)label_smoothing;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_dropout(tt_tensor *x, double p, bool training, tt_rng *rng) {
    (void)x;
    (void)p;
    (void)training;
    (void)rng;
    TT_CHECK(0, "not implemented yet");
}
void tt__backward_softmax(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_log_softmax(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_masked_fill(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_layernorm(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_rmsnorm(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_embedding(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_cross_entropy(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_dropout(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
