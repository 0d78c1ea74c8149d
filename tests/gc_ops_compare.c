// Gradcheck cases of the comparison and selection (autograd/ops_compare.c and their ops.def rows).
#include "gc_util.h"

const gc_case gc_cases_compare[] = {{0}};
