// char_gpt: train, sample and evaluate a character-level GPT (nanoGPT's shakespeare_char "baby
// GPT") with AdamW, warmup + cosine decay, checkpoints and a bit-exact --resume. The training
// step is main's loop below; the command line, checkpoints, sample and eval are examples/gpt/'s,
// shared with `gpt` (which adds other tokenizers). See `char_gpt --help`.
#include "gpt/train.h"

// The usage text of char_gpt: the model flags between head and tail come from the config's
// field table.
static const char char_usage_head[] =
    "usage:\n"
    "  char_gpt train [--data FILE] [--out FILE] [--resume FILE] [--log FILE.csv]\n";
static const char char_usage_tail[] =
    "                 [--batch 12] [--iters 2000] [--decay-iters ITERS] [--lr 1e-3]\n"
    "                 [--min-lr 1e-4] [--warmup 100] [--weight-decay 0.1] [--beta2 0.99]\n"
    "                 [--optim adamw|muon] [--muon-lr 0.02]\n"
    "                 [--grad-clip 1.0] [--eval-every 250] [--eval-iters 20] [--seed 1337]\n"
    "                 [--threads N] [--precision f32|bf16] [--grad-accum 1] [--profile]\n"
    "                 [--trace FILE.json] [--overlap] [--bucket 4194304]\n"
    "  char_gpt sample --ckpt FILE [--prompt TEXT] [--tokens 500] [--temperature 0.8]\n"
    "                 [--top-k 200] [--top-p 1.0] [--seed 1337] [--no-cache] [--block N]\n"
    "                 [--threads N] [--quantize f32|int8|bf16|int4]\n"
    "  char_gpt eval --ckpt FILE [--data FILE] [--eval-iters N] [--batch N] [--seed N]\n"
    "                 [--threads N] [--quantize f32|int8|bf16|int4]\n"
    "\n"
    "train: --data defaults to " DEFAULT_DATA ", --out to out/char_gpt.ckpt (its directory is\n"
    "created). --out is written at each eval (every --eval-every steps and at the end), so it\n"
    "holds the last state; the state with the best val loss so far is also kept in the --out\n"
    "name with .best before its extension (out/char_gpt.best.ckpt). --resume FILE continues\n"
    "from FILE with the losses an uninterrupted run would have had, saving into FILE unless\n"
    "--out is given. An output that is an input, a directory, FIFO or device is refused; a\n"
    "non-finite loss or weight stops training unsaved; the first SIGINT/SIGTERM saves --out\n"
    "after the step and exits 130/143 (a second one kills). On --resume, flags you do\n"
    "not give come from the checkpoint; model flags you give must match it. --decay-iters\n"
    "(default --iters) is where the cosine schedule reaches --min-lr, so a run can stop early\n"
    "and be resumed on the same schedule. A default that conflicts with a flag you give\n"
    "(--warmup 100 with --iters 40, --min-lr 1e-4 with --lr 1e-5) is lowered with a note on\n"
    "stderr. --precision bf16 trains with bf16 matmul products (f32 accumulation; weights,\n"
    "gradients, optimizer and checkpoint stay f32). --optim muon: Muon at --muon-lr for the\n"
    "blocks' matrices, AdamW for the rest. stdout: `eval step=N train_loss=F\n"
    "val_loss=F` at each eval and\n"
    "`done steps=N train_loss=F val_loss=F ms_per_step=F tokens_per_s=F`.\n"
    "--profile prints the model summary before training and, at the end, a table of the\n"
    "training steps' ops (calls, forward / backward time, share of the step time, FLOPs, bytes\n"
    "moved, peak memory) on stderr; --trace FILE.json writes one event per op of the steps\n"
    "(open it in ui.perfetto.dev or chrome://tracing). Evals are not profiled.\n"
    DIST_USAGE
    "sample prints the prompt and the generated text; eval prints\n"
    "`eval train_loss=F val_loss=F` (mean over --eval-iters batches per split).\n"
    "--quantize int8 (sample, eval) runs every Linear and the head in int8 (weights with a\n"
    "scale per output channel, activations with a scale per token, int32 sums; embeddings,\n"
    "norms, attention and the KV cache stay f32) and notes the weight bytes on stderr;\n"
    "--quantize bf16 likewise with bf16 weights (rounded once, f32 sums); --quantize int4 in\n"
    "4 bits (blocks of 32 inputs with an f16 scale each, activations in int8 blocks of 32), a\n"
    "quarter of int8's weight bytes plus an eighth; f32: unchanged.\n";

int main(int argc, char **argv) {
    static const gpt_program char_gpt = {"char_gpt", "out/char_gpt.ckpt", true, char_usage_head,
                                         "                 ", char_usage_tail, NULL};
    int cmd = gpt_cli_begin(argc, argv, &char_gpt);
    if (cmd == CMD_SAMPLE) return gpt_cli_end(cmd_sample());
    if (cmd == CMD_EVAL) return gpt_cli_end(cmd_eval());

    gpt_run r;  // train: the data, model, AdamW and trainer (train/train.h) of the flags
    gpt_train_begin(&r);
    while (tt_trainer_next(&r.tr)) {                      // the learning rate of the step
        for (int64_t a = 0; a < r.tr.accum; a++) {        // --grad-accum micro-batches
            tt_scope_begin();
            tt_tensor *x, *y;
            gpt_train_batch(&r, a, &x, &y);               // (B, T) tokens and the next ones
            tt_tensor *loss = tt_gpt_loss(&r.gpt, x, y);  // forward: mean cross-entropy
            tt_trainer_backward(&r.tr, loss);             // backward: gradients summed
            tt_scope_end();
        }
        tt_trainer_step(&r.tr);  // mean over micro-batches and ranks, clip, AdamW, eval, save
    }
    return gpt_cli_end(gpt_train_end(&r));
}
