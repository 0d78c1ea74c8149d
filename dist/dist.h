// tinytorch.c dist: data parallelism over MPI. Built against Open MPI with `make MPI=1`
// (dist/dist_mpi.c); the default build has dist/dist_serial.c, where the program is rank 0 of 1
// and every call below is a no-op that succeeds, so a trainer calls them unconditionally.
//
//     tt_dist_init(&argc, &argv);                   // MPI_Init; rank and size of the job
//     tt_dist_broadcast_params(&gpt.params);        // every rank starts from rank 0's weights
//     for (...) {                                   // each rank: its own batch, backward
//         tt_backward(loss);
//         tt_dist_allreduce_grads(&gpt.params);     // .grad = the mean over the ranks
//         tt_clip_grad_norm(...); tt_optim_step(...);  // identical on every rank
//     }
//     tt_dist_finalize();
//
// Failures (a rank that died, a network error) return TT_ERR_IO with a one-line tt_last_error()
// naming the call and MPI's message (MPI_ERRORS_RETURN is set on the world communicator); the
// caller prints it and calls tt_dist_abort to end every rank. The reductions are deterministic
// for a given world size: MPI_Allreduce with MPI_SUM in Open MPI picks its algorithm from the
// size and the message length only; with 2 ranks each element is one addition a + b, the same
// bits as a sequential sum in rank order.
#ifndef TT_DIST_H
#define TT_DIST_H

#include <stdbool.h>
#include <stddef.h>

#include "../nn/nn.h"

bool tt_dist_available(void);  // built with MPI (make MPI=1)
// MPI_Init once (argc, argv may be NULL); later calls return TT_OK. TT_ERR_IO when MPI cannot
// start. Without MPI it only records rank 0 of 1.
tt_status tt_dist_init(int *argc, char ***argv);
int tt_dist_rank(void);        // 0 before tt_dist_init
int tt_dist_world_size(void);  // 1 before tt_dist_init
// The host name of this rank (MPI_Get_processor_name; gethostname without MPI).
const char *tt_dist_host(void);
void tt_dist_finalize(void);   // MPI_Finalize when initialized; safe to call twice
// With several ranks: MPI_Abort(code), which ends every rank of the job and does not return.
// With one rank (or without MPI) it returns, and the caller exits as usual.
void tt_dist_abort(int code);

// ---- collectives (every rank calls them in the same order) ----

// Rank 0's values of every parameter into the other ranks' (contiguous f32 or f64 tensors).
tt_status tt_dist_broadcast_params(const tt_params *p);
// Each parameter's .grad becomes the mean over the ranks: the sum (MPI_Allreduce, MPI_SUM),
// then x / world_size in the grad's dtype. Gradients travel in buckets of at most
// TT_DIST_BUCKET elements (tt_dist_set_bucket_size) packed into one buffer, one MPI call per
// bucket rather than per tensor; a gradient larger than a bucket is reduced in place in pieces.
// A parameter without a .grad takes part with zeros (its .grad is allocated). With one rank it
// leaves the gradients untouched.
#define TT_DIST_BUCKET ((size_t)1 << 22)
tt_status tt_dist_allreduce_grads(const tt_params *p);
// Elements per bucket, 1 .. INT32_MAX (aborts otherwise); TT_DIST_BUCKET until set.
void tt_dist_set_bucket_size(size_t elements);
// x[0 .. n) summed over the ranks, in place.
tt_status tt_dist_allreduce_f64(double *x, size_t n);
// Every rank's nbytes of send, in rank order, into recv (world_size * nbytes bytes) on every
// rank.
tt_status tt_dist_allgather(void *recv, const void *send, size_t nbytes);
// Seconds spent in tt_dist_allreduce_grads, and in tt_dist_overlap_end and the overlap's
// announcements, since the start (for benchmarks and logs).
double tt_dist_allreduce_seconds(void);

// ---- the all-reduce overlapped with the backward ----
// The same mean as tt_dist_allreduce_grads, started while the backward runs: call
// tt_dist_overlap_begin before the backward that completes the step's gradients and
// tt_dist_overlap_end after it, in place of tt_dist_allreduce_grads:
//
//     tt_dist_overlap_begin(&gpt.params, NULL, NULL);
//     tt_backward(loss);                  // buckets start as their gradients become final
//     tt_dist_overlap_end(&gpt.params);   // waits for them: .grad = the mean over the ranks
//
// The buckets are those of tt_dist_allreduce_grads (same contents, same order of elements),
// so the sums are its sums; with 2 ranks each element is a + b either way, the same bits.
// Backward announces each parameter when its gradient is final (tt_backward_set_grad_ready);
// prepare(i, grad, ctx), when given, may then rewrite p->items[i]'s gradient in place (a
// trainer's last micro-batch adds its running sum there) before it is packed; the parameter's
// bucket starts (MPI_Iallreduce) once all of it is packed and the buckets after it have
// started, last bucket first, so that every rank starts them in the same order. Each
// announcement also progresses the started ones (MPI_Test: Open MPI moves a non-blocking
// collective on only inside MPI calls). tt_dist_overlap_end packs the parameters backward did
// not announce (zeros for one without a gradient), starts what is left, waits, divides by the
// world size. With one rank (or without MPI) begin does nothing and end calls prepare on every
// parameter with a gradient. Failures: as tt_dist_allreduce_grads, returned by end.
// It pays when the bytes move without the cores that run the backward (a NIC between
// machines, a slow link: the all-reduce a sizeable share of the step). On one machine over
// shared memory the same cores copy the buckets, and MPI_Iallreduce is no faster than
// MPI_Allreduce, so it does not: bench_dist `alternate` measured it slower or level there.
// char_gpt turns it on with --overlap only.
typedef void (*tt_dist_grad_prepare)(int index, tt_tensor *grad, void *ctx);
tt_status tt_dist_overlap_begin(const tt_params *p, tt_dist_grad_prepare prepare, void *ctx);
tt_status tt_dist_overlap_end(const tt_params *p);

#endif  // TT_DIST_H
