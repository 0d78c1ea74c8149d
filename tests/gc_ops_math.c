// Gradcheck cases of the the math ops beyond the first elementwise set (autograd/ops_math.c and their ops.def rows).
#include "gc_util.h"

const gc_case gc_cases_math[] = {{0}};
