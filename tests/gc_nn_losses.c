// Gradcheck cases of the losses of nn/loss.c, each reduction.
#include "gc_util.h"

const gc_module_case gc_modules_nn_losses[] = {{0}};
