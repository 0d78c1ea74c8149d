// Gradcheck cases of the creation and layout ops (autograd/ops_layout.c and their ops.def rows).
#include "gc_util.h"

const gc_case gc_cases_layout[] = {{0}};
