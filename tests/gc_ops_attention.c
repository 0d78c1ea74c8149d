// STUB: replaced by the real cases.
#include "gc_util.h"

const gc_case gc_cases_attention[] = {{0, NULL, NULL}};
