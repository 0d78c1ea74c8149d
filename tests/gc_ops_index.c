// Gradcheck cases of the indexing, sorting and scan ops (autograd/ops_index.c and their ops.def rows).
#include "gc_util.h"

const gc_case gc_cases_index[] = {{0}};
