// tinytorch.c GPT: a decoder-only transformer built from nn/ modules, with GPT-2/nanoGPT
// initialization, a fused loss, and generation with a KV cache.
//
//     tt_gpt_config cfg = tt_gpt_config_default();      // GPT-2 style
//     cfg.vocab_size = 65; cfg.block_size = 64; cfg.n_layer = 4; cfg.n_head = 4; cfg.n_embd = 128;
//     tt_gpt gpt;
//     if (tt_gpt_init(&gpt, &cfg, &rng) != TT_OK) { fprintf(stderr, "%s\n", tt_last_error()); ... }
//     tt_scope_begin();
//     tt_tensor *loss = tt_gpt_loss(&gpt, x, y);       // x, y: (B, T) token ids
//     tt_backward(loss);
//     tt_scope_end();
//     tt_gpt_free(&gpt);
//
// Configs are data (one field table: defaults, ranges, checkpoint keys), with presets:
//     tt_gpt_config_preset("gpt2", &cfg);                  // 124M, as OpenAI's checkpoints
//     tt_gpt_save("run.ckpt", &gpt, &optim, &state);       // tt_gpt_load reads it back
#ifndef TT_GPT_H
#define TT_GPT_H

#include "../../io/checkpoint.h"
#include "../../nn/nn.h"
#include "../../io/safetensors.h"
#include "../../io/gguf.h"
#include "../../compress/compress.h"
#include "../../optim/optim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tt_pos_kind { TT_POS_LEARNED, TT_POS_ROPE } tt_pos_kind;

typedef struct tt_gpt_config {
    int64_t vocab_size;
    int64_t block_size;   // longest context
    int64_t n_layer;
    int64_t n_head;
    int64_t n_kv_head;    // grouped-query attention when < n_head; 0 means n_head
    int64_t n_embd;
    double dropout;
    bool bias;            // in Linear layers and LayerNorms
    bool qkv_bias;        // in the q/k/v projections too (only when bias); GPT-2: true
    tt_pos_kind positional;
    tt_nn_norm_kind norm;  // layernorm, rmsnorm (with a gain) or rmsnorm_noweight (none)
    tt_act activation;     // TT_ACT_GELU (exact, as nanoGPT), TT_ACT_RELU2, TT_ACT_SWIGLU (gated)
    bool tie_weights;     // lm_head shares the token embedding
    bool qk_norm;
    int64_t mlp_hidden;  // the MLP's hidden size, SwiGLU's too; 0 means 4 n_embd
    double rope_base;    // RoPE's base (theta): angles p base^(-2i/HS); Hugging Face's rope_theta
    double norm_eps;     // the blocks' and ln_f's norms (not QK-norm's: 1e-6)
} tt_gpt_config;

// ---- config fields (gpt_config.c) ----
// One table describes every field of tt_gpt_config: its name (the checkpoint key is
// "cfg.<name>"), type, offset, default and valid range. Defaults, range checks, checkpoint
// save/load and the examples' model flags are all driven by it, so adding a config field is
// two edits: the member above and its row in tt_gpt_fields (gpt_config.c), then use it in
// gpt.c; a program that wants a flag for it names one (examples/gpt/flags.c). Older
// checkpoints without the new key load with the row's default.

typedef enum tt_gpt_field_type {
    TT_GPT_FIELD_I64,   // int64_t in [lo, hi]
    TT_GPT_FIELD_F64,   // double in [lo, hi)
    TT_GPT_FIELD_BOOL,  // bool
    TT_GPT_FIELD_ENUM,  // an enum (int-sized) in [lo, hi] named by names[value - lo]
} tt_gpt_field_type;

typedef struct tt_gpt_field {
    const char *name;           // the member's name, e.g. "n_layer"
    tt_gpt_field_type type;
    size_t offset;              // offsetof(tt_gpt_config, <member>)
    double def;                 // the default (bools 0/1, enums their value)
    double lo, hi;              // the valid range (I64, ENUM: [lo, hi]; F64: [lo, hi))
    const char *const *names;   // ENUM: a name per value lo .. hi (NULL: not allowed)
    const char *help;           // one line
} tt_gpt_field;

extern const tt_gpt_field tt_gpt_fields[];
extern const int tt_gpt_nfields;

// The row whose name is key ("n_layer"); NULL when none. (A program's flags, e.g. "--layers",
// are its own: examples/gpt/flags.c.)
const tt_gpt_field *tt_gpt_field_find(const char *key);
// A field's value as a double (bools 0/1, enums their value) and the reverse (no checks).
double tt_gpt_field_get(const tt_gpt_config *cfg, const tt_gpt_field *f);
void tt_gpt_field_set(tt_gpt_config *cfg, const tt_gpt_field *f, double v);
// Parses text ("4", "0.1", "rope", "true"/"false"/"1"/"0") into the field. Only the syntax
// (and an enum's names) is checked here: ranges are tt_gpt_config_validate's. TT_ERR_ARG naming
// the field and the expected values; cfg is unchanged then.
tt_status tt_gpt_field_parse(tt_gpt_config *cfg, const tt_gpt_field *f, const char *text);
// The value as text ("4", "0.1", "rope", "true") into buf, a number in the fewest digits that
// parse back to it; returns buf.
const char *tt_gpt_field_format(const tt_gpt_config *cfg, const tt_gpt_field *f, char *buf,
                                size_t n);

// The table's defaults, the single source of them: GPT-2 style (learned positions, layernorm,
// exact gelu, tied embeddings, no bias, no dropout, MHA) at the sizes of nanoGPT's char-level
// "baby GPT" (vocab 65, block 64, 4 layers, 4 heads, 128 wide).
tt_gpt_config tt_gpt_config_default(void);
// TT_OK, or TT_ERR_ARG with a message naming the field and the fix: every field within its
// table range, then the relations between fields (n_embd % n_head, n_head % n_kv_head, ...).
tt_status tt_gpt_config_validate(const tt_gpt_config *cfg);

// Named configs: "baby" (the default above), "gpt2" (124M: vocab 50257, block 1024, 12 layers,
// 12 heads, 768 wide) and "gpt2-medium" (350M: 24 layers, 16 heads, 1024 wide), the GPT-2
// ones as OpenAI's checkpoints: biases everywhere (qkv too), tanh GELU, tied head, dropout 0.1
// (GPT-2's training value; nanoGPT's GPTConfig uses 0.0, set cfg.dropout = 0 to match it).
// TT_ERR_ARG listing the names for an unknown one (out unchanged).
tt_status tt_gpt_config_preset(const char *name, tt_gpt_config *out);
// The MLP's hidden size of cfg: mlp_hidden, or 4 n_embd when it is 0 (for every activation;
// Llama's SwiGLU width, about 8/3 n_embd rounded up, is given as mlp_hidden).
int64_t tt_gpt_config_mlp_hidden(const tt_gpt_config *cfg);
// The parameter count of the model cfg describes, as tt_gpt_num_params would report it after
// tt_gpt_init, without building it (cfg must be valid; aborts otherwise).
int64_t tt_gpt_config_num_params(const tt_gpt_config *cfg, bool non_embedding);

// ---- memory (gpt_config.c) ----
// What a run of cfg needs at least, in bytes, before anything is allocated: the f32
// parameters and the causal masks (n_layer block_size^2 i32 entries), then for training
// (training true) the gradients, AdamW's two moments and the activations the backward keeps
// for a (B, T) batch (6 C + 2 H floats per token per layer, 6 C + 4 H with SwiGLU, H the MLP's
// hidden size: 14 C at GPT's 4 C; the logits and their gradient); for a
// forward only (eval, sample) the logits of a (B, T) batch, 2 C floats per token per layer
// (a scope holds them until it ends), the MLP's hidden layer and a KV cache. A lower bound
// (the buffer cache, bf16 copies, the data and the allocator's overhead come on top; measured
// 0.65-0.75x of the peak RSS of char_gpt runs), so a run it refuses could not have fitted.
// cfg must be valid.
double tt_gpt_memory_estimate(const tt_gpt_config *cfg, int64_t B, int64_t T, bool training);
// TT_OK, or TT_ERR_NOMEM when tt_gpt_memory_estimate exceeds tt_memory_limit: "<what> needs
// at least X GiB (P parameters, ...) but this machine allows Y GiB (physical memory)".
tt_status tt_gpt_check_memory(const tt_gpt_config *cfg, int64_t B, int64_t T, bool training,
                              const char *what);

typedef struct tt_gpt {
    tt_gpt_config cfg;
    tt_nn_embedding wte;      // (V, C)
    tt_nn_pos_embedding wpe;  // (block_size, C) when positional == TT_POS_LEARNED
    tt_nn_dropout drop;
    tt_nn_block *blocks;      // n_layer
    tt_nn_norm ln_f;
    tt_nn_linear lm_head;     // weight is NULL when tied (wte.weight is used)
    tt_rng dropout_rng;       // the model's own stream for dropout masks
    tt_params params;         // every parameter by name: wte.weight, blocks.0.attn.q_proj.weight
    tt_nn_linear *head_q;     // the tied head (wte's matrix) when quantized (tt_gpt_quantize_as)
    // Activation checkpointing, a training-time memory option (not part of the config, not
    // saved): when true, each block's forward runs under tt_activation_checkpoint (with
    // dropout_rng replayed) whenever grad mode is on, so the graph keeps one (B, T, C) input
    // per block instead of the block's activations, and the backward runs each block's
    // forward again. Losses and gradients are bitwise those without it. False after init.
    bool checkpoint_blocks;
} tt_gpt;

// Builds the model and initializes it as GPT-2/nanoGPT: normal(0, 0.02) for Linear and
// Embedding weights, zeros for biases, ones for norm gains, and 0.02/sqrt(2 n_layer) for the
// residual projections (attn.o_proj, mlp.proj), drawn from rng in parameter order; then seeds
// dropout_rng from rng. m->cfg.n_kv_head holds the resolved value (n_head when 0 was given).
// Returns TT_ERR_ARG (m zeroed) for an invalid config. The dropout layers point at
// m->dropout_rng, so the model must stay at its address until tt_gpt_free (do not copy it).
tt_status tt_gpt_init(tt_gpt *m, const tt_gpt_config *cfg, tt_rng *rng);
void tt_gpt_free(tt_gpt *m);  // safe on a zeroed struct
void tt_gpt_train(tt_gpt *m, bool training);
// Parameters as nanoGPT reports them: without the position embedding when non_embedding.
int64_t tt_gpt_num_params(const tt_gpt *m, bool non_embedding);

// tokens (B, T) i32/i64, T <= block_size (aborts otherwise) -> logits (B, T, V).
tt_tensor *tt_gpt_forward(tt_gpt *m, tt_tensor *tokens);
// Mean cross-entropy of the next-token logits against targets (B, T) (fused log-softmax + NLL);
// targets equal to -1 are ignored, as PyTorch's ignore_index in nanoGPT.
tt_tensor *tt_gpt_loss(tt_gpt *m, tt_tensor *tokens, tt_tensor *targets);

// ---- int8 inference (gpt.c) ----
// Post-training dynamic quantization (nn.h's QuantizedLinear): every Linear of the blocks
// (attention q/k/v/o, MLP fc/proj) and the head (lm_head, or wte's matrix when tied) run int8
// with per-output-channel weight scales and per-token activation scales; the embeddings, norms,
// attention scores, softmax and the KV cache stay f32, and so do the f32 weights (the
// embedding lookup and tt_gpt_dequantize use them; a checkpoint saves them as before).
// Inference only: tt_gpt_forward / tt_gpt_loss abort under grad mode (use tt_no_grad_begin());
// tt_gpt_generate already runs without grad. Quantizing again re-reads the f32 weights.
//
//     tt_gpt_quantize(&gpt);
//     tt_gpt_generate(&gpt, prompt, n_prompt, n_new, &opts, &rng, out, NULL, NULL);
void tt_gpt_quantize(tt_gpt *m);
// The same in any weight format (compress.h's tt_quant: int8, bf16, int4; NONE dequantizes):
// the Linears and the head run in it, everything else as above.
void tt_gpt_quantize_as(tt_gpt *m, tt_quant q);
void tt_gpt_dequantize(tt_gpt *m);  // back to f32 (safe when not quantized)
tt_quant tt_gpt_quantization(const tt_gpt *m);  // TT_QUANT_NONE when f32
bool tt_gpt_is_quantized(const tt_gpt *m);      // in any format but f32
// The bytes the forward reads for the weights of its matrix products (the Linears and the
// head, biases included): 4 per f32 element, or the format's packing
// (tt_nn_linear_quantized_bytes) when quantized. Embedding tables and norms are not counted (a tied head counts once, as a head).
int64_t tt_gpt_matmul_weight_bytes(const tt_gpt *m);

// ---- checkpoints (gpt_checkpoint.c; the file format is docs/checkpoint.md's) ----
// A GPT checkpoint holds "format" = TT_GPT_FORMAT (files of earlier versions say "char_gpt"
// and load as well), cfg.<field> for every table row (I64, BOOL and ENUM fields as i64, F64 as
// f64), the parameters as model.<name> (tt_gpt_module's names), the dropout stream as
// rng.model, and optionally the optimizer (optim.<state>, optim.step) and a training state.
// The caller may add its own entries (a vocab, hyperparameters) to the same tt_checkpoint.

#define TT_GPT_FORMAT "tinytorch.gpt"

typedef struct tt_gpt_state {
    int64_t step;           // training steps taken ("step")
    tt_rng data_rng;        // the training batches' stream ("rng.data")
    double best_val_loss;   // INFINITY before the first eval ("best_val_loss")
    double train_loss, val_loss;  // of the last eval, NAN before it
} tt_gpt_state;

// The optimizer to train m with (models/gpt/gpt_optim.c). muon NULL: nanoGPT's two groups of
// adamw's kind (matrices and embeddings decay by weight_decay, norms and biases do not).
// Otherwise nanochat's split: group 0 is Muon (*muon, its lr absolute, decoupled weight decay
// muon_weight_decay) over every block Linear's weight (tt_gpt_block_weights), groups 1 and 2
// are adamw's decay groups over the rest (embeddings, the head, norms, biases). A schedule
// (tt_optim_set_lr with adamw.lr as its base) scales every group's lr alike.
void tt_gpt_optim_init(tt_optim *o, const tt_gpt *m, tt_optim_config adamw, double weight_decay,
                       const tt_optim_config *muon, double muon_weight_decay);

// Adds m's format, config, parameters and dropout stream to ck, o's state when o is not NULL
// and st when st is not NULL (keys as above; entries already in ck stay).
void tt_gpt_ckpt_fill(tt_checkpoint *ck, const tt_gpt *m, const tt_optim *o,
                      const tt_gpt_state *st);
// The config of a loaded checkpoint: checks "format", reads each table field (a key absent
// from an older file takes the default) and validates. TT_ERR_FORMAT naming the key otherwise.
tt_status tt_gpt_ckpt_config(const tt_checkpoint *ck, tt_gpt_config *cfg);
// Builds the model of the checkpoint's config (m is zeroed on error) and copies its parameters
// and dropout stream. Before allocating, the config's parameter count must not exceed the
// model.* elements the file holds, so a corrupt config cannot ask for more memory than the file
// backs, and the causal masks (n_layer block_size^2 entries) must stay below 64x that count or
// 2^26 entries (tt_gpt_load_hf applies the same rule). Weights that are not finite are
// refused (tt_gpt_check_finite). TT_ERR_FORMAT / TT_ERR_MISMATCH naming the problem.
tt_status tt_gpt_ckpt_model(tt_gpt *m, const tt_checkpoint *ck);
// Restores o (built over m's parameters as when it was saved, e.g. tt_gpt_optim_init) from
// optim.* and optim.step: its state and step, with the saved groups' kinds checked; its
// hyperparameters stay o's, as the program set them (tt_ckpt_restore_optim_state; use
// tt_ckpt_restore_optim to take the saved ones). TT_ERR_MISMATCH / TT_ERR_FORMAT otherwise.
tt_status tt_gpt_ckpt_optim(tt_optim *o, const tt_checkpoint *ck);
// The training state. TT_ERR_FORMAT naming a missing or invalid key. A NaN best_val_loss
// (an older or foreign writer's) reads as INFINITY, no best yet: else no eval could beat it.
tt_status tt_gpt_ckpt_state(const tt_checkpoint *ck, tt_gpt_state *st);

// tt_gpt_ckpt_fill into a new checkpoint, then tt_ckpt_save (atomic). TT_ERR_IO on failure.
tt_status tt_gpt_save(const char *path, const tt_gpt *m, const tt_optim *o,
                      const tt_gpt_state *st);
// TT_OK when every parameter of m is finite; else TT_ERR_FORMAT naming the first tensor that
// holds a NaN or an infinity, the element, and the fix. tt_gpt_ckpt_model, tt_gpt_load and
// tt_gpt_load_hf call it, so weights that are not finite are refused at load.
tt_status tt_gpt_check_finite(const tt_gpt *m);

// tt_ckpt_load, then tt_gpt_ckpt_model. When ck is not NULL it receives the loaded checkpoint
// (free it with tt_ckpt_free) for tt_gpt_ckpt_optim, tt_gpt_ckpt_state and the caller's own
// entries; it is left empty on error. On error m is zeroed and the message names the path.
//
//     tt_gpt m; tt_checkpoint ck; tt_gpt_state st;
//     if (tt_gpt_load("out/char_gpt.ckpt", &m, &ck) != TT_OK) { puts(tt_last_error()); ... }
//     tt_optim_add_decay_groups(&o, &m.params, 0.1);   // as the run that saved it
//     if (tt_gpt_ckpt_optim(&o, &ck) != TT_OK || tt_gpt_ckpt_state(&ck, &st) != TT_OK) ...
//     tt_ckpt_free(&ck);
tt_status tt_gpt_load(const char *path, tt_gpt *m, tt_checkpoint *ck);

// ---- generation ----
// One call: tt_gpt_generate (one prompt, tokens out). Several prompts, stop conditions,
// streaming and logprobs: a tt_gpt_session (models/gpt/session.c).
//
//     tt_gpt_session *s = tt_gpt_session_new(&gpt, &(tt_gpt_session_config){.tokenizer = &tok,
//                                            .on_token = print_event, .ctx = stdout});
//     tt_gpt_request r = {.sample = tt_sample_opts_default(), .max_new_tokens = 64,
//                         .stop_strings = (const char *[]){"\n\n"}, .n_stop_strings = 1};
//     for (int i = 0; i < n_prompts; i++) tt_gpt_session_add(s, ids[i], n_ids[i], &r);
//     tt_gpt_session_run(s);            // decodes the prompts together, one batch per step
//     const char *text = tt_gpt_session_text(s, 0, &len);
//     tt_gpt_session_free(s);

#define TT_GPT_TOP_LOGPROBS 20  // the most alternatives a token reports

// The samplers run in Hugging Face generate()'s order: penalties (repetition, then presence
// and frequency), temperature, top-k, softmax, top-p, min-p, then one uniform draw (greedy,
// temperature 0, takes the first largest logit after the penalties). A zeroed field is off,
// except top_p (1 is off) and the temperature (0 is greedy).
typedef struct tt_sample_opts {
    double temperature;  // 0: greedy (argmax)
    int top_k;           // 0: off
    double top_p;        // 1: off (nucleus sampling otherwise)
    bool use_cache;      // KV cache (true) or a full recompute per token (for comparison)
    int64_t n_vocab;     // > 0: only ids below it are sampled (a vocab padded beyond the
                         // tokenizer's, as nanoGPT's 50304 for GPT-2's 50257); 0: every id
    double min_p;        // [0, 1]; 0: off. After top-p, tokens whose probability is below
                         // min_p times the largest one's are cut (Nguyen et al. 2024)
    double repetition_penalty;  // 0 or 1: off. Hugging Face's (CTRL's): the logit of a token
                                // seen is divided by it when > 0, multiplied when < 0
    double presence_penalty;    // 0: off. OpenAI's / llama.cpp's: subtracted from the logit
                                // of every token seen
    double frequency_penalty;   // 0: off. Subtracted once per time a token was seen
    int64_t penalty_last_n;     // the penalties look at the last N tokens of the prompt and
                                // the output (llama.cpp's repeat_last_n); 0: all of them
    uint64_t seed;       // a session sequence's own rng (tt_gpt_generate uses its rng argument)
    bool logprobs;       // a session reports each token's log-probability (see tt_gpt_logprob)
    int top_logprobs;    // [0, TT_GPT_TOP_LOGPROBS]: the most likely alternatives reported too
} tt_sample_opts;

tt_sample_opts tt_sample_opts_default(void);  // temperature 0.8, top_k 200, top_p 1, cache on

// Appends n_new tokens to prompt[0 .. n_prompt) (n_prompt >= 1) into out (room for n_new).
// The context is a window of at most block_size tokens (it starts as the prompt's last ones);
// when a new token does not fit, the window keeps its newer half, the newest
// (block_size + 1) / 2 tokens with the new one, and the KV cache is rebuilt from them by one
// forward. The same rule holds with and without the cache, so with the same rng state both
// produce identical tokens. on_token (may be NULL) is called with each new token.
// Runs with grad mode off and the model in eval mode, and restores both; each token draws one
// tt_rng_uniform from rng (none when greedy). opts NULL means tt_sample_opts_default(). A
// session of one sequence: the penalties see the prompt and the tokens generated.
void tt_gpt_generate(tt_gpt *m, const int32_t *prompt, int64_t n_prompt, int64_t n_new,
                     const tt_sample_opts *opts, tt_rng *rng, int32_t *out,
                     void (*on_token)(int32_t token, void *ctx), void *ctx);

// Samples one token from logits (V,) (any float dtype and layout) with the options above:
// logits / temperature, top-k (every token tied with the k-th is kept, as nanoGPT), softmax in
// double, nucleus cut, min-p cut, then the inverse CDF at one tt_rng_uniform draw, over the
// first n_vocab logits when set (the others are ignored, NaN or not). No history: the penalties
// do nothing here. Aborts on NaN logits or invalid options (each message names the field and
// its range). use_cache, seed and the logprobs fields are ignored.
int32_t tt_sample_logits(const tt_tensor *logits, const tt_sample_opts *opts, tt_rng *rng);

// ---- generation sessions (models/gpt/session.c) ----
// A session decodes any number of sequences (prompts) together: each is prefilled when added
// (one forward over its prompt window), then every step samples one token for each active
// sequence and runs the model once on the batch of their (n_active, C) rows (the Linears and
// the head read their weights once per step; attention runs per sequence over its own cache).
// A sequence that finishes frees its cache and leaves the batch. Each sequence keeps
// tt_gpt_generate's context-window rule on its own (a full window keeps its newer half and is
// rebuilt by one forward of that sequence alone). Greedy, a sequence's tokens do not depend on
// the others in its batch (tests/test_generate.c checks 8 prompts against each alone).

typedef enum tt_gpt_finish {
    TT_GPT_RUNNING,            // still decoding
    TT_GPT_FINISH_LENGTH,      // max_new_tokens generated
    TT_GPT_FINISH_STOP_TOKEN,  // a stop token was sampled (kept in the tokens, not the text)
    TT_GPT_FINISH_STOP_STRING, // the text reached a stop string (the text ends before it)
    TT_GPT_FINISH_COUNT
} tt_gpt_finish;

// A log-probability: log softmax of the model's raw logits (over the first n_vocab ids when
// set), before penalties, temperature and the cuts: the model's own distribution.
typedef struct tt_gpt_logprob {
    int32_t token;
    double logprob;
} tt_gpt_logprob;

// What the callback gets for each token, in order: step by step, and within a step by
// sequence index (the order of tt_gpt_session_add).
typedef struct tt_gpt_token_event {
    int seq;                 // the sequence (tt_gpt_session_add's return)
    int32_t token;           // the token sampled
    const char *text;        // the bytes of the text released by this token (not 0-terminated;
    size_t text_len;         // may be 0): bytes that could still begin a stop string are held
                             // back until they cannot; the concatenation of every event's text
                             // of a sequence is tt_gpt_session_text's. NULL without a tokenizer
    double logprob;          // the token's (tt_gpt_logprob); NAN unless opts.logprobs
    const tt_gpt_logprob *top;  // the top_logprobs most likely ids, most likely first
    int n_top;
    tt_gpt_finish finish;    // TT_GPT_RUNNING, or why the sequence ended with this token
} tt_gpt_token_event;

typedef void (*tt_gpt_token_fn)(const tt_gpt_token_event *e, void *ctx);

typedef struct tt_gpt_session_config {
    bool kv_bf16;  // store keys and values as bf16 (rounded to nearest even; halves the
                   // cache, widened to f32 per layer and step: a step attends to its own new
                   // key and value unrounded); false: the model's dtype
    const struct tt_tokenizer *tokenizer;  // text of the tokens (data/tokenizer.h); NULL: no
                                           // text (stop strings then abort)
    tt_gpt_token_fn on_token;  // may be NULL
    void *ctx;
} tt_gpt_session_config;

// One prompt's request. The stop lists are copied by tt_gpt_session_add.
typedef struct tt_gpt_request {
    tt_sample_opts sample;       // the sequence's rng is seeded with sample.seed
    int64_t max_new_tokens;      // >= 1
    const int32_t *stop_tokens;  // e.g. GPT-2's 50256 <|endoftext|>
    int n_stop_tokens;
    const char *const *stop_strings;  // matched on the decoded text, across token boundaries
    int n_stop_strings;
} tt_gpt_request;

typedef struct tt_gpt_session tt_gpt_session;

// A session over m (borrowed; it must outlive the session and not change meanwhile). Turns
// grad mode off and m to eval mode until tt_gpt_session_free, which restores both.
tt_gpt_session *tt_gpt_session_new(tt_gpt *m, const tt_gpt_session_config *cfg);
// Adds a sequence and prefills it: prompt[0 .. n_prompt) (n_prompt >= 1; its last block_size
// tokens form the window). Returns its index (0, 1, ...). Aborts on an invalid request,
// naming the field.
int tt_gpt_session_add(tt_gpt_session *s, const int32_t *prompt, int64_t n_prompt,
                       const tt_gpt_request *r);
// One token for every active sequence (callbacks as they come). Returns how many are active.
int tt_gpt_session_step(tt_gpt_session *s);
void tt_gpt_session_run(tt_gpt_session *s);  // steps until no sequence is active
int tt_gpt_session_active(const tt_gpt_session *s);
int tt_gpt_session_count(const tt_gpt_session *s);  // sequences added
// The tokens sampled for seq (a stop token included), n of them; valid until the next step.
const int32_t *tt_gpt_session_tokens(const tt_gpt_session *s, int seq, int64_t *n);
// Its text (0-terminated; len may be NULL): the tokens' bytes, without a stop token's and
// cut before a stop string. Empty without a tokenizer. Valid until the next step.
const char *tt_gpt_session_text(const tt_gpt_session *s, int seq, size_t *len);
tt_gpt_finish tt_gpt_session_finish(const tt_gpt_session *s, int seq);
// Bytes of key/value cache held now (active sequences and the bf16 widening buffers).
size_t tt_gpt_session_kv_bytes(const tt_gpt_session *s);
void tt_gpt_session_free(tt_gpt_session *s);  // NULL is fine

// ---- Hugging Face GPT-2 weights (models/gpt/gpt2_hf.c) ----

// Builds m from a GPT-2 model.safetensors (GPT2LMHeadModel's or GPT2Model's; names with or
// without the "transformer." prefix; F32, F64, F16 or BF16). The config comes from the shapes:
// vocab_size and n_embd from wte (V, C), block_size from wpe (N, C), n_layer from the h.<l>
// layers; bias, learned positions, LayerNorm (eps 1e-5), the tanh GELU, no dropout. n_head is
// the argument, else the file's "n_head" metadata, else n_embd / 64 (every published GPT-2).
// Conv1D (in, out) weights are transposed to our (out, in); attn.c_attn is split into
// attn.q_proj/k_proj/v_proj; the attn.bias and attn.masked_bias buffers are ignored; lm_head
// is tied to wte when absent or equal to it. TT_ERR_MISMATCH naming a missing, misshapen or
// unexpected tensor (m zeroed then), or the errors of tt_safetensors_open. A file cannot make
// it allocate more than its tensors back: the causal masks (n_layer N^2 entries) must stay
// below 64x the parameters or 2^26 entries (tt_gpt_ckpt_model's rule; a position table too
// long for its model is refused, not cut, so the model built is the file's), and weights that
// are not finite are refused (tt_gpt_check_finite).
tt_status tt_gpt_load_hf(tt_gpt *m, const char *path, int64_t n_head);
// The same from a safetensors file already open (its metadata, e.g. a tokenizer's, can then be
// read without opening it twice); f stays open.
tt_status tt_gpt_load_hf_file(tt_gpt *m, const tt_safetensors *f, int64_t n_head);
// Writes m in GPT2LMHeadModel's layout (names "transformer.wte.weight", ...
// "transformer.h.<l>.attn.c_attn.weight" (C, 3C), lm_head.weight only when untied; metadata
// format = pt and n_head) with its float tensors as dtype, atomically. TT_ERR_ARG when m is
// not GPT-2-shaped (no bias, RoPE, RMSNorm, another activation than TT_ACT_GELU_TANH,
// grouped-query attention, QK-norm).
tt_status tt_gpt_save_hf(const tt_gpt *m, const char *path, tt_st_dtype dtype);
// The same with more metadata: {key, value, ..., NULL} (or NULL) after format and n_head,
// e.g. tt_tokenizer_metadata's; a key given twice aborts.
tt_status tt_gpt_save_hf_meta(const tt_gpt *m, const char *path, tt_st_dtype dtype,
                              const char *const *metadata);

// ---- Hugging Face Llama weights (models/gpt/llama_hf.c) ----
// LlamaForCausalLM's layout: model.embed_tokens.weight, model.layers.<l>.{input_layernorm,
// self_attn.{q,k,v,o}_proj, post_attention_layernorm, mlp.{gate,up,down}_proj}.weight,
// model.norm.weight and lm_head.weight (absent when tied). The Linears are nn.Linear's (out, in)
// as ours, and Hugging Face's RoPE rotates the pairs (i, i + HS/2) as ours does (rotate-half),
// so every tensor is copied as it is: no transpose, no q/k permutation. A safetensors file holds
// no config.json, so the hyperparameters travel in its metadata under config.json's names:
// vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
// num_key_value_heads, max_position_embeddings, rope_theta, rms_norm_eps, tie_word_embeddings.

// Whether f is in Llama's layout (it has model.embed_tokens.weight): what a program checks to
// pick tt_gpt_load_llama_file over tt_gpt_load_hf_file.
bool tt_gpt_is_llama(const tt_safetensors *f);
// Builds m from a Llama model.safetensors (F32, F64, F16 or BF16): RoPE, RMSNorm with a gain,
// SwiGLU, no bias, no dropout. vocab_size and n_embd come from embed_tokens, n_layer from the
// layers, mlp_hidden from gate_proj, tie_weights from lm_head (absent or equal to
// embed_tokens); from the metadata n_head (num_attention_heads, required), n_kv_head
// (num_key_value_heads, else k_proj's rows / head size), block_size (max_position_embeddings,
// else 2048), rope_base (rope_theta, else 10000) and norm_eps (rms_norm_eps, else 1e-6):
// LlamaConfig's defaults. The rotary_emb.inv_freq buffers of older files are ignored.
// TT_ERR_MISMATCH naming a missing, misshapen or unexpected tensor, a missing
// num_attention_heads or an invalid config; TT_ERR_FORMAT for metadata that does not parse or
// weights that are not finite; tt_safetensors_open's errors. As tt_gpt_load_hf, a file cannot
// make it allocate more than its tensors back. m is zeroed on error.
tt_status tt_gpt_load_llama(tt_gpt *m, const char *path);
// The same from an open file (its tokenizer metadata can then be read from the same f).
tt_status tt_gpt_load_llama_file(tt_gpt *m, const tt_safetensors *f);
// Writes m in that layout (its float tensors as dtype, atomically), the metadata format = pt,
// the hyperparameters above, then metadata ({key, value, ..., NULL} or NULL; a key given twice
// aborts). tt_gpt_load_llama reads it back bit for bit (f32). TT_ERR_ARG when m is not
// Llama-shaped: learned positions, LayerNorm or RMSNorm without a gain, another MLP than
// SwiGLU, biases, QK-norm.
tt_status tt_gpt_save_llama(const tt_gpt *m, const char *path, tt_st_dtype dtype,
                            const char *const *metadata);

// ---- GGUF (models/gpt/gpt_gguf.c): llama.cpp's "gpt2" architecture ----

// Adds m to w as GGUF's gpt2: general.architecture, general.file_type, gpt2.context_length,
// .embedding_length, .feed_forward_length (4 C), .block_count, .attention.head_count and
// .attention.layer_norm_epsilon (1e-5); tensors token_embd, position_embd, output_norm, output
// (only when untied) and blk.<l>.{attn_norm, attn_qkv (q, k, v fused: ne {C, 3C}),
// attn_output, ffn_norm, ffn_up, ffn_down} .weight / .bias, ne our shapes reversed. Matrices
// are stored as type, vectors as F32 (and the position table as F32 when type is quantized).
// TT_ERR_ARG naming the feature when m is not GPT-2-shaped (as tt_gpt_save_hf), or n_embd is
// not a multiple of 32 for Q8_0 / Q4_0. The tokenizer is the caller's (tt_tokenizer_gguf_add).
tt_status tt_gpt_gguf_add(const tt_gpt *m, tt_gguf_writer *w, tt_ggml_type type);
// tt_gpt_gguf_add into a new file at path (atomically), without a tokenizer.
tt_status tt_gpt_save_gguf(const tt_gpt *m, const char *path, tt_ggml_type type);
// Builds m from a GGUF gpt2 model (any of F32, F16, BF16, Q8_0, Q4_0 tensors, dequantized to
// f32): the config from the hparams and shapes, q/k/v split from attn_qkv, tied when there is
// no output.weight. TT_ERR_MISMATCH for another architecture (named), missing hparams, a
// missing, misshapen or unexpected tensor, or the sizes tt_gpt_load_hf refuses; TT_ERR_FORMAT
// for weights that are not finite; tt_gguf_open's errors. m is zeroed on error.
tt_status tt_gpt_load_gguf(tt_gpt *m, const char *path);
// The same from an open file (its tokenizer can then be read from the same f).
tt_status tt_gpt_load_gguf_file(tt_gpt *m, const tt_gguf *f);

// ---- the GPT as a tt_module (models/gpt/gpt_module.c) ----
// The model's structure, described once: forward is tt_gpt_forward on tokens (B, T); its
// children, a chain in forward order: wte, wpe (learned positions), drop, blocks (a chain of
// "0" ..), ln_f, and lm_head (untied) or head (tied to wte: no parameters). m->params is
// tt_module_params of it, tt_gpt_train its tt_module_train, and the Linears that int8,
// pruning and low rank handle are its tt_module_linears (nn/walk.h). The module borrows m
// (tt_gpt_free frees the model).
//
//     tt_model_summary(stderr, tt_gpt_module(&gpt), tokens);  // parameters, FLOPs, memory
tt_module tt_gpt_module(tt_gpt *m);

// ---- compression (models/gpt/compress.c): pruning and low rank on a GPT ----

// The weights of every block's Linears (attn.q/k/v/o_proj, mlp.fc/proj) under their names in
// m->params (retained into out): what magnitude pruning of a GPT prunes. The embeddings, the
// norms and the head (tied to wte, or lm_head) are left out. A low-rank Linear contributes its
// two factors.
void tt_gpt_block_weights(const tt_gpt *m, tt_params *out);
// Structured pruning of whole attention heads: for each head h of heads (in [0, n_head)) of
// block layer, masks the rows h*HS .. (h+1)*HS of attn.q_proj.weight, the columns of the same
// range of attn.o_proj.weight (so the head adds nothing to the residual stream) and, without
// grouped-query attention, the rows of k_proj and v_proj too (shared by several heads
// otherwise, so kept). Recorded in p under m->params' names; biases are not masked (the head's
// output is cut by o_proj). Aborts for a layer, head or Linear that does not fit.
void tt_gpt_prune_heads(tt_gpt *m, tt_pruning *p, int64_t layer, const int64_t *heads, int n);
// Replaces every block Linear by its truncated SVD at rank max(1, floor(fraction * min(in,
// out))) (nn.h's tt_nn_linear_low_rank; fraction in (0, 1]) and rebuilds m->params, whose names
// become blocks.<l>.mlp.fc.0.weight, ...fc.1.weight, ...fc.1.bias. The head is kept dense (the
// tied one is the embedding table). Build an optimizer after this call, not before. A low-rank
// GPT cannot be quantized, saved with tt_gpt_save and reloaded (the loader builds dense
// Linears), or factored again; tt_gpt_matmul_weight_bytes counts both factors.
void tt_gpt_low_rank(tt_gpt *m, double fraction);

#ifdef __cplusplus
}
#endif

#endif  // TT_GPT_H
