#include <stdio.h>
#include "tinytorch.h"

int main(void) {
    tt_rng rng;
    tt_rng_seed(&rng, 42);
    tt_tensor *w1 = tt_set_requires_grad(tt_randn(&rng, TT_F32, TT_SHAPE(3, 4)), true);
    tt_tensor *w2 = tt_set_requires_grad(tt_randn(&rng, TT_F32, TT_SHAPE(4, 1)), true);
    tt_scope_begin();                               // what ops return is freed at scope end
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(8, 3));
    tt_tensor *h = tt_relu(tt_matmul(x, w1));       // (8, 4)
    tt_tensor *loss = tt_mean_all(tt_square(tt_matmul(h, w2)));
    tt_backward(loss);                              // fills w1->grad and w2->grad
    printf("loss %.4f\n", tt_item(loss));
    tt_print(tt_grad(w2));                          // d loss / d w2, shape (4, 1)
    tt_scope_end();
    tt_release(w1);
    tt_release(w2);
    return 0;
}
