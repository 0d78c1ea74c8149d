// STUB: replaced by the real implementation of this family.
#include "autograd_internal.h"

tt_tensor *tt_reshape(tt_tensor *x, int ndim, const int64_t *shape) {
    (void)x;
    (void)ndim;
    (void)shape;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_view(tt_tensor *x, int ndim, const int64_t *shape) {
    (void)x;
    (void)ndim;
    (void)shape;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_flatten(tt_tensor *x) {
    (void)x;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_transpose(tt_tensor *x, int dim0, int dim1) {
    (void)x;
    (void)dim0;
    (void)dim1;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_permute(tt_tensor *x, const int *dims) {
    (void)x;
    (void)dims;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_slice(tt_tensor *x, int dim, int64_t start, int64_t end, int64_t step) {
    (void)x;
    (void)dim;
    (void)start;
    (void)end;
    (void)step;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_narrow(tt_tensor *x, int dim, int64_t start, int64_t length) {
    (void)x;
    (void)dim;
    (void)start;
    (void)length;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_expand(tt_tensor *x, int ndim, const int64_t *shape) {
    (void)x;
    (void)ndim;
    (void)shape;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_broadcast_to(tt_tensor *x, int ndim, const int64_t *shape) {
    (void)x;
    (void)ndim;
    (void)shape;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_squeeze(tt_tensor *x, int dim) {
    (void)x;
    (void)dim;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_unsqueeze(tt_tensor *x, int dim) {
    (void)x;
    (void)dim;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_cat(int n, tt_tensor *const *xs, int dim) {
    (void)n;
    (void)xs;
    (void)dim;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_stack(int n, tt_tensor *const *xs, int dim) {
    (void)n;
    (void)xs;
    (void)dim;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_contiguous(tt_tensor *x) {
    (void)x;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_clone(tt_tensor *x) {
    (void)x;
    TT_CHECK(0, "not implemented yet");
}
tt_tensor *tt_to_dtype(tt_tensor *x, tt_dtype dtype) {
    (void)x;
    (void)dtype;
    TT_CHECK(0, "not implemented yet");
}
void tt__backward_reshape(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_transpose(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_permute(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_slice(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_expand(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_squeeze(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_unsqueeze(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_cat(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_stack(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_contiguous(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_clone(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
void tt__backward_to_dtype(tt_node *n) { (void)n; TT_CHECK(0, "not implemented yet"); }
