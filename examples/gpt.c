// gpt: train, sample, evaluate and export a GPT on characters, GPT-2's BPE tokens or a trained
// BPE vocab, start from Hugging Face GPT-2 weights, and tokenize / encode / decode text or train
// a BPE vocab. The code is examples/gpt_main.c's (shared with char_gpt); see `gpt --help`.
#include "gpt_main.h"

int main(int argc, char **argv) {
    static const gpt_program gpt = {"gpt", "out/gpt.ckpt", false};
    return gpt_main(argc, argv, &gpt);
}
