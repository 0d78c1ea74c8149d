// STUB: replaced by the real implementation of this family.
#include "autograd_internal.h"

tt_tensor *tt_add(tt_tensor *a, tt_tensor *b) {
    (void)a;
    (void)b;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_sub(tt_tensor *a, tt_tensor *b) {
    (void)a;
    (void)b;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_mul(tt_tensor *a, tt_tensor *b) {
    (void)a;
    (void)b;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_div(tt_tensor *a, tt_tensor *b) {
    (void)a;
    (void)b;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_pow(tt_tensor *a, tt_tensor *b) {
    (void)a;
    (void)b;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_maximum(tt_tensor *a, tt_tensor *b) {
    (void)a;
    (void)b;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_minimum(tt_tensor *a, tt_tensor *b) {
    (void)a;
    (void)b;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_add_scalar(tt_tensor *a, double s) {
    (void)a;
    (void)s;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_sub_scalar(tt_tensor *a, double s) {
    (void)a;
    (void)s;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_mul_scalar(tt_tensor *a, double s) {
    (void)a;
    (void)s;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_div_scalar(tt_tensor *a, double s) {
    (void)a;
    (void)s;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_rsub_scalar(double s, tt_tensor *a) {
    (void)s;
    (void)a;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_pow_scalar(tt_tensor *a, double p) {
    (void)a;
    (void)p;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_neg(tt_tensor *x) {
    (void)x;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_exp(tt_tensor *x) {
    (void)x;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_log(tt_tensor *x) {
    (void)x;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_sqrt(tt_tensor *x) {
    (void)x;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_rsqrt(tt_tensor *x) {
    (void)x;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_abs(tt_tensor *x) {
    (void)x;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_tanh(tt_tensor *x) {
    (void)x;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_sigmoid(tt_tensor *x) {
    (void)x;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_relu(tt_tensor *x) {
    (void)x;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_gelu(tt_tensor *x) {
    (void)x;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_gelu_tanh(tt_tensor *x) {
    (void)x;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_silu(tt_tensor *x) {
    (void)x;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_square(tt_tensor *x) {
    (void)x;
    TT_CHECK(0, "not implemented yet");
}
void tt__backward_add(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_sub(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_mul(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_div(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_pow(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_maximum(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_minimum(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_add_scalar(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_mul_scalar(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_div_scalar(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_rsub_scalar(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_pow_scalar(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_neg(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_exp(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_log(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_sqrt(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_rsqrt(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_abs(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_tanh(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_sigmoid(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_relu(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_gelu(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_gelu_tanh(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_silu(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_square(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
