// gpt: train, sample, evaluate and export a GPT on characters, GPT-2's BPE tokens or a trained
// BPE vocab, start from Hugging Face GPT-2 weights, and tokenize / encode / decode text or train
// a BPE vocab. One file per command in examples/gpt/ (shared with char_gpt); see `gpt --help`.
#include "gpt/cli.h"

// gpt's usage text: the model flags between head and tail come from the config's field table.
static const char gpt_usage_head[] =
    "usage:\n"
    "  gpt train [--tokenizer char|gpt2|VOCAB] [--preset baby|gpt2|gpt2-medium]\n"
    "            [--init-from FILE] [--data FILE|SHARDS] [--out FILE] [--resume FILE]\n"
    "            [--log FILE.csv]\n";
static const char gpt_usage_synopsis[] =
    "            [--batch 12] [--iters 2000] [--decay-iters ITERS] [--lr 1e-3]\n"
    "            [--min-lr 1e-4] [--warmup 100] [--weight-decay 0.1] [--beta2 0.99]\n"
    "            [--optim adamw|muon] [--muon-lr 0.02] [--muon-weight-decay 0]\n"
    "            [--grad-clip 1.0] [--eval-every 250] [--eval-iters 20] [--seed 1337]\n"
    "            [--threads N] [--precision f32|bf16] [--grad-accum 1] [--profile]\n"
    "            [--trace FILE.json] [--overlap] [--bucket 4194304] [--checkpoint-blocks]\n"
    "            [--schedule cosine|wsd|onecycle|plateau|constant] [--warmdown ITERS/5]\n"
    "            [--final-lr-frac 0] [--pct-start 0.3] [--anneal cos|linear]\n"
    "            [--div-factor 25] [--final-div-factor 1e4] [--three-phase] [--factor 0.1]\n"
    "            [--patience 10] [--cooldown 0] [--threshold 1e-4]\n"
    "  gpt sample --ckpt FILE | --init-from FILE [--tokenizer T] [--prompt TEXT] [--tokens 500]\n"
    "            [--prompts FILE] [--batch 1] [--stop STR]... [--min-p 0] [--repeat-penalty 1]\n"
    "            [--temperature 0.8] [--top-k 200] [--top-p 1.0] [--seed 1337] [--no-cache]\n"
    "            [--block N] [--threads N] [--quantize f32|int8|bf16|int4]\n"
    "  gpt eval --ckpt FILE | --init-from FILE [--tokenizer T] [--data FILE] [--eval-iters N]\n"
    "            [--batch N] [--seed N] [--threads N] [--quantize f32|int8|bf16|int4]\n"
    "  gpt tokenize [--tokenizer T | --ckpt FILE] [--data FILE]\n"
    "  gpt encode [--tokenizer T | --ckpt FILE] [--data FILE]  < bytes  > ids\n"
    "  gpt decode [--tokenizer T | --ckpt FILE] [--data FILE]  < ids  > bytes\n"
    "  gpt bpe-train --merges N --out VOCAB [--data FILE]\n"
    "  gpt export --ckpt FILE --out FILE.safetensors [--dtype f32|f16|bf16] [--layout gpt2|llama]\n"
    "  gpt export --format gguf --ckpt FILE --out FILE.gguf [--dtype f32|f16|q8_0|q4_0]\n"
    "  gpt prepare --out DIR [--tokenizer T] [--data FILE|DIR...] [--shard-tokens 100000000]\n";
static const char gpt_usage_tail[] =
    "\n"
    "--tokenizer: char (one token per distinct byte of --data; the default), gpt2 (GPT-2's\n"
    "BPE, its " TT_GPT2_ENCODER " and " TT_GPT2_MERGES
    " found in $TINYTORCH_DATA,\n"
    "PREFIX/share/tinytorch (make install) or the source tree's data/ (make data), in that order)\n"
    "or the path of a VOCAB written by `gpt bpe-train`. A checkpoint keeps its tokenizer (a\n"
    "trained vocab whole), so sample, eval, tokenize, encode and decode with --ckpt need no\n"
    "--tokenizer. --data defaults to " DEFAULT_DATA
    " (when absent, tinyshakespeare.txt found\n"
    "as GPT-2's files are); --out of train to out/gpt.ckpt.\n"
    "train: --preset sets every model flag (flags you give override it; the vocab size is the\n"
    "tokenizer's). --init-from starts from the weights of a checkpoint of gpt train or of a\n"
    "Hugging Face GPT-2 or Llama model.safetensors (the config is the file's, so model flags\n"
    "are refused; the optimizer starts fresh). The rest is char_gpt's: --out holds the last "
    "state,\n"
    "its .best name (out/gpt.best.ckpt) the best val loss; --resume FILE continues bit for bit\n"
    "(into FILE unless --out is given); outputs, divergence and signals as char_gpt's; a\n"
    "default that conflicts with a flag you give is lowered with a note; stdout: `eval step=N\n"
    "train_loss=F val_loss=F` at each eval and a `done ...` line. --grad-accum, mpirun,\n"
    "--schedule and --checkpoint-blocks (recompute each block's activations in backward: less\n"
    "memory, the same losses) as char_gpt's.\n"
    "sample prints the prompt and the generated text (--temperature 0: greedy); eval prints\n"
    "`eval train_loss=F val_loss=F`. A --init-from FILE.safetensors or FILE.gguf holds GPT-2\n"
    "(or Llama) weights and the tokenizer its metadata names (export writes it); without one\n"
    "(Hugging Face's), gpt2 unless --tokenizer names another. --quantize as char_gpt's.\n"
    "sample streams the text as it comes. --prompts FILE: one prompt per line, each printed\n"
    "with its text (in order, one per line); --batch N decodes N of them together. --stop STR\n"
    "(repeatable): the text ends before the first one; --min-p and --repeat-penalty (Hugging\n"
    "Face's) as tt_sample_opts'.\n"
    "tokenize prints `tokens=N train=N val=N` (the text split 90/10 by characters, each part\n"
    "encoded on its own); encode prints the ids of stdin's bytes on one line; decode writes the\n"
    "bytes of the ids on stdin (whitespace-separated); bpe-train learns --merges merges from\n"
    "--data and writes VOCAB; export writes a checkpoint's model in GPT-2's safetensors layout\n"
    "(the model must be GPT-2-shaped: train it with --preset gpt2) or, --layout llama, in\n"
    "Llama's (--pos rope --norm rmsnorm --act swiglu), its tokenizer (a char or\n"
    "trained vocab whole) in the file's metadata; --format gguf writes llama.cpp's gpt2 GGUF\n"
    "instead (matrices as --dtype; GPT-2's BPE as tokenizer.ggml.*), which --init-from reads.\n";
// The rest of the usage text: prepare and token shards.
static const char gpt_usage_shards[] =
    "prepare tokenizes text files (each one document; a directory's files in name order) into\n"
    "llm.c's token shards in DIR: NAME_val_000000.bin, then NAME_train_000001.bin, ... (NAME the\n"
    "first --data's base name), at most --shard-tokens tokens each, the first 90% of the tokens\n"
    "train and the rest val, GPT-2's <|endoftext|> between documents (none for char and a\n"
    "trained vocab: they have no such token), and the tokenizer in DIR/tokenizer.ckpt; it\n"
    "prints `prepared documents=N tokens=N train=N val=N files=V+T dtype=uint16|uint32`.\n"
    "SHARDS (train, eval, tokenize): a directory, a glob pattern or a .bin file of token shards,\n"
    "memory-mapped; nanoGPT's headerless train.bin and val.bin read too. Their tokenizer comes\n"
    "from tokenizer.ckpt beside them (else --tokenizer); the same --seed draws the same batches\n"
    "as from the text.\n";

int main(int argc, char **argv) {
    static const gpt_program gpt = {"gpt", "out/gpt.ckpt", false, gpt_usage_head,
                                    "            ", gpt_usage_synopsis, gpt_usage_tail,
                                    gpt_usage_shards};
    static const struct {
        int cmd;
        int (*run)(void);
    } commands[] = {
        {CMD_TRAIN, cmd_train},       {CMD_SAMPLE, cmd_sample},     {CMD_EVAL, cmd_eval},
        {CMD_TOKENIZE, cmd_tokenize}, {CMD_ENCODE, cmd_encode},     {CMD_DECODE, cmd_decode},
        {CMD_BPE_TRAIN, cmd_bpe_train}, {CMD_EXPORT, cmd_export},
        {CMD_PREPARE, cmd_prepare},
    };
    int cmd = gpt_cli_begin(argc, argv, &gpt);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (commands[i].cmd == cmd) return gpt_cli_end(commands[i].run());
    die("internal error: command %d has no function", cmd);
}
