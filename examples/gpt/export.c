// gpt's export command: a checkpoint's model in GPT-2's safetensors layout (f32, f16, bf16),
// its tokenizer in the metadata (tt_tokenizer_metadata), so eval and sample need no flag.
#include "cli.h"

#include <stdio.h>
#include <string.h>

int cmd_export(void) {
    if (!opt.ckpt) die_usage("export needs --ckpt FILE (a checkpoint of %s train)", prog->name);
    if (!given("--out")) die_usage("export needs --out FILE.safetensors");
    tt_st_dtype dt = TT_ST_F32;
    if (opt.dtype && strcmp(opt.dtype, "f16") == 0) dt = TT_ST_F16;
    else if (opt.dtype && strcmp(opt.dtype, "bf16") == 0) dt = TT_ST_BF16;
    else if (opt.dtype && strcmp(opt.dtype, "f32") != 0)
        die_usage("--dtype '%s' is not one of f32, f16, bf16", opt.dtype);
    tt_checkpoint ck;
    train_state s;
    load_ckpt(&ck, opt.ckpt, &s);
    tt_gpt gpt;
    model_from_ckpt(&gpt, &ck, opt.ckpt);
    tt_ckpt_free(&ck);
    check_outputs(CMD_EXPORT);
    const char **meta = tt_tokenizer_metadata(&s.tok);  // the tokenizer travels with it
    tt_status st = tt_gpt_save_hf_meta(&gpt, opt.out, dt, meta);
    tt_free(meta);
    if (st == TT_ERR_ARG)
        die_usage("export: '%s': %s; train with --preset gpt2 (other flags may shrink it) to "
                  "export", opt.ckpt, tt_last_error());
    if (st != TT_OK) die("export: %s", tt_last_error());
    fprintf(stderr, "%s: wrote %s (GPT-2 layout, its %s tokenizer in the metadata)\n",
            prog->name, opt.out, tt_tokenizer_name(&s.tok));
    tt_gpt_free(&gpt);
    tt_tokenizer_free(&s.tok);
    return 0;
}
