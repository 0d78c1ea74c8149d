// tinytorch.c train: what train.c and progress.c share (not public).
#ifndef TT_TRAIN_INTERNAL_H
#define TT_TRAIN_INTERNAL_H

#include "train.h"

double tt__train_now(void);  // CLOCK_MONOTONIC seconds
// The progress after a step: the bar on a TTY (at most every 0.1 s, and at the last step),
// else a line at step 1, every 50 steps and the last.
void tt__progress_step(tt_trainer *tr, double ms, double tok_s);

#endif  // TT_TRAIN_INTERNAL_H
