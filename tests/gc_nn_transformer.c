// STUB: replaced by the real cases.
#include "gc_util.h"

const gc_module_case gc_modules_nn_transformer[] = {{NULL, NULL, NULL}};
