// STUB: replaced by the real implementation of this family.
#include "autograd_internal.h"

tt_tensor *tt_sum(tt_tensor *x, int ndims, const int *dims, bool keepdim) {
    (void)x;
    (void)ndims;
    (void)dims;
    (void)keepdim;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_mean(tt_tensor *x, int ndims, const int *dims, bool keepdim) {
    (void)x;
    (void)ndims;
    (void)dims;
    (void)keepdim;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_max(tt_tensor *x, int ndims, const int *dims, bool keepdim) {
    (void)x;
    (void)ndims;
    (void)dims;
    (void)keepdim;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_var(tt_tensor *x, int ndims, const int *dims, int correction, bool keepdim) {
    (void)x;
    (void)ndims;
    (void)dims;
    (void)correction;
    (void)keepdim;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_argmax(tt_tensor *x, int dim, bool keepdim) {
    (void)x;
    (void)dim;
    (void)keepdim;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_sum_all(tt_tensor *x) {
    (void)x;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_mean_all(tt_tensor *x) {
    (void)x;
    TT_CHECK(0, "not implemented yet");
}
void tt__backward_sum(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_mean(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_max(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_var(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
