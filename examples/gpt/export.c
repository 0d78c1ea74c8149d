// gpt's export command: a checkpoint's model in GPT-2's safetensors layout (f32, f16, bf16), or
// Llama's with --layout llama, its tokenizer in the metadata (tt_tokenizer_metadata), so eval
// and sample need no flag; or, with --format gguf, llama.cpp's gpt2 GGUF (f32, f16, q8_0, q4_0;
// tt_tokenizer_gguf_add).
#include "cli.h"

#include <stdio.h>
#include <string.h>

// The GGUF file of --out: the model as --dtype, the tokenizer in its metadata.
static tt_status write_gguf(const tt_gpt *gpt, const tt_tokenizer *tok) {
    static const struct {
        const char *name;
        tt_ggml_type type;
    } types[] = {{"f32", TT_GGML_F32}, {"f16", TT_GGML_F16}, {"q8_0", TT_GGML_Q8_0},
                 {"q4_0", TT_GGML_Q4_0}};
    int k = 0;
    while (k < 4 && opt.dtype && strcmp(opt.dtype, types[k].name) != 0) k++;
    if (k == 4) die_usage("--dtype '%s' is not one of f32, f16, q8_0, q4_0 (--format gguf)",
                          opt.dtype);
    tt_gguf_writer w;
    tt_gguf_writer_init(&w);
    tt_status st = tt_gpt_gguf_add(gpt, &w, types[k].type);
    if (st == TT_OK) {
        tt_tokenizer_gguf_add(tok, &w, gpt->cfg.vocab_size);
        st = tt_gguf_writer_save(&w, opt.out);
    }
    tt_gguf_writer_free(&w);
    return st;
}

// The safetensors file of --out in --layout's tensor names (llama: true; gpt2: false).
static tt_status write_safetensors(const tt_gpt *gpt, const tt_tokenizer *tok, bool llama) {
    tt_st_dtype dt = TT_ST_F32;
    if (opt.dtype && strcmp(opt.dtype, "f16") == 0) dt = TT_ST_F16;
    else if (opt.dtype && strcmp(opt.dtype, "bf16") == 0) dt = TT_ST_BF16;
    else if (opt.dtype && strcmp(opt.dtype, "f32") != 0)
        die_usage("--dtype '%s' is not one of f32, f16, bf16", opt.dtype);
    const char **meta = tt_tokenizer_metadata(tok);  // the tokenizer travels with it
    tt_status st = llama ? tt_gpt_save_llama(gpt, opt.out, dt, meta)
                         : tt_gpt_save_hf_meta(gpt, opt.out, dt, meta);
    tt_free(meta);
    return st;
}

// Whether --layout asks for Llama's names (exits on a layout that is neither).
static bool llama_layout(bool gguf) {
    if (!opt.layout || strcmp(opt.layout, "gpt2") == 0) return false;
    if (strcmp(opt.layout, "llama") != 0)
        die_usage("--layout '%s' is not gpt2 (the default) or llama", opt.layout);
    if (gguf) die_usage("--layout llama names safetensors' tensors; leave out --format gguf");
    return true;
}

int cmd_export(void) {
    bool gguf = opt.format && strcmp(opt.format, "gguf") == 0;
    if (opt.format && !gguf && strcmp(opt.format, "safetensors") != 0)
        die_usage("--format '%s' is not safetensors (the default) or gguf", opt.format);
    bool llama = llama_layout(gguf);
    if (!opt.ckpt) die_usage("export needs --ckpt FILE (a checkpoint of %s train)", prog->name);
    if (!given("--out"))
        die_usage("export needs --out FILE.%s", gguf ? "gguf" : "safetensors");
    if (!gguf && opt.dtype && (strcmp(opt.dtype, "q8_0") == 0 || strcmp(opt.dtype, "q4_0") == 0))
        die_usage("--dtype %s needs --format gguf (safetensors holds f32, f16, bf16)",
                  opt.dtype);
    tt_checkpoint ck;
    train_state s;
    load_ckpt(&ck, opt.ckpt, &s);
    tt_gpt gpt;
    model_from_ckpt(&gpt, &ck, opt.ckpt);
    tt_ckpt_free(&ck);
    check_outputs(CMD_EXPORT);
    tt_status st = gguf ? write_gguf(&gpt, &s.tok) : write_safetensors(&gpt, &s.tok, llama);
    if (st == TT_ERR_ARG && llama)
        die_usage(
            "export: '%s': %s; train with --pos rope --norm rmsnorm --act swiglu (and "
            "no --bias or --qk-norm) to export it in Llama's layout",
            opt.ckpt, tt_last_error());
    if (st == TT_ERR_ARG)
        die_usage(
            "export: '%s': %s; train with --preset gpt2 (other flags may shrink it) to "
            "export%s",
            opt.ckpt, tt_last_error(), gguf ? "" : ", or a Llama-shaped model with --layout llama");
    if (st != TT_OK) die("export: %s", tt_last_error());
    fprintf(stderr, "%s: wrote %s (%s, its %s tokenizer in the metadata)\n", prog->name, opt.out,
            gguf    ? "GGUF gpt2"
            : llama ? "Llama layout"
                    : "GPT-2 layout",
            tt_tokenizer_name(&s.tok));
    tt_gpt_free(&gpt);
    tt_tokenizer_free(&s.tok);
    return 0;
}
