// STUB: replaced by the real cases.
#include "gc_util.h"

const gc_case gc_cases_reduce[] = {{0, NULL, NULL}};
