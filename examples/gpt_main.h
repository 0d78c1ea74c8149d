// The GPT programs' shared entry point (examples/gpt_main.c): examples/gpt.c runs it with every
// command and tokenizer, examples/char_gpt.c with the char tokenizer and train / sample / eval.
#ifndef TT_GPT_MAIN_H
#define TT_GPT_MAIN_H

#include <stdbool.h>

typedef struct gpt_program {
    const char *name;         // in messages and the usage text: "gpt", "char_gpt"
    const char *default_out;  // train's --out: "out/gpt.ckpt"
    bool char_only;           // char_gpt: no --tokenizer, --preset, --init-from, no tools
} gpt_program;

// Runs the command of argv[1] and returns the exit status (bad input exits 2, failures 1).
int gpt_main(int argc, char **argv, const gpt_program *p);

#endif  // TT_GPT_MAIN_H
