// char_gpt: train, sample and evaluate a character-level GPT (nanoGPT's shakespeare_char "baby
// GPT") with AdamW, warmup + cosine decay, checkpoints and a bit-exact --resume. The code is
// examples/gpt_main.c's (`gpt` with the char tokenizer fixed); see `char_gpt --help`.
#include "gpt_main.h"

int main(int argc, char **argv) {
    static const gpt_program char_gpt = {"char_gpt", "out/char_gpt.ckpt", true};
    return gpt_main(argc, argv, &char_gpt);
}
