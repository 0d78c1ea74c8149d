// The GPT programs' flags (flags.h): the numeric flags' ranges, parsing with overflow
// detection, the message for a value outside a range, and the model flags of the usage text.
// Which flags a command takes, and where a value came from, are examples/gpt/cli.c's.
#include "flags.h"

#include "tinytorch.h"
#include "models/gpt/gpt.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Every numeric flag but the model flags (the field table's ranges) and --seed (any int64).
static const gpt_range ranges[] = {
    {"--block", 1, 0, "[]"},  // hi: max_block
    {"--batch", 1, 1 << 16, "[]"},      {"--grad-accum", 1, 1 << 16, "[]"},
    {"--iters", 1, 0x1p62, "[]"},       {"--decay-iters", 1, 0x1p62, "[]"},
    {"--warmup", 0, 0x1p62, "[]"},      {"--eval-every", 1, 0x1p62, "[]"},
    {"--eval-iters", 1, 1 << 20, "[]"}, {"--threads", 1, 1024, "[]"},
    {"--lr", 0, INFINITY, "()"},        {"--min-lr", 0, INFINITY, "[)"},
    {"--weight-decay", 0, 1e6, "[]"},   {"--beta2", 0, 1, "[)"},
    {"--grad-clip", 0, 1e9, "[]"},      {"--bucket", 1, INT32_MAX, "[]"},
    {"--muon-lr", 0, INFINITY, "()"},   {"--muon-weight-decay", 0, 1e6, "[]"},
    {"--tokens", 0, 1 << 24, "[]"},     {"--top-k", 0, 1 << 20, "[]"},
    {"--temperature", 0, 1e6, "[]"},    {"--top-p", 0, 1, "(]"},
    {"--merges", 1, 1 << 20, "[]"},     {"--shard-tokens", 1, INT32_MAX, "[]"},
    {"--min-p", 0, 1, "[]"},            {"--repeat-penalty", 0, 1e6, "(]"},
    {"--warmdown", 0, 0x1p62, "[]"},    {"--final-lr-frac", 0, 1, "[]"},
    {"--pct-start", 0, 1, "[]"},        {"--div-factor", 0, 1e12, "(]"},
    {"--final-div-factor", 0, 1e12, "(]"},
    {"--factor", 0, 1, "[)"},           {"--patience", 0, 0x1p62, "[]"},
    {"--cooldown", 0, 0x1p62, "[]"},    {"--threshold", 0, 1e6, "[]"},
};

gpt_range gpt_flag_range(const char *name, int64_t max_block) {
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        gpt_range r = ranges[i];
        if (strcmp(r.name, name) != 0) continue;
        if (strcmp(name, "--block") == 0) r.hi = (double)max_block;
        return r;
    }
    return (gpt_range){name, -0x1p63, 0x1p63, "[]"};
}

double gpt_parse_number(const char *text, bool is_int, int64_t *i, double *d) {
    char *end = NULL;
    errno = 0;
    if (is_int) {
        long long x = strtoll(text, &end, 10);
        *i = x;
        if (!*text || *end) return NAN;
        return errno == ERANGE ? copysign(INFINITY, (double)x) : (double)x;
    }
    *d = strtod(text, &end);  // ERANGE on underflow too: *d is then the denormal (or 0)
    return !*text || *end ? NAN : *d;
}

bool gpt_range_has(gpt_range r, double v) {
    return (r.ends[0] == '[' ? v >= r.lo : v > r.lo) && (r.ends[1] == ']' ? v <= r.hi : v < r.hi);
}

const char *gpt_range_message(gpt_range r, const char *text, const char *from, bool given,
                              bool is_int, char *buf, size_t n) {
    char lo[32], hi[32];
    snprintf(lo, sizeof lo, is_int ? "%.0f" : "%g", r.lo);
    snprintf(hi, sizeof hi, is_int ? "%.0f" : "%g", r.hi);
    if (is_int && r.hi >= 0x1p63) snprintf(hi, sizeof hi, "%lld", (long long)INT64_MAX);
    snprintf(buf, n, "%s %s%s is out of range; %s%s in %c%s, %s%c", r.name, text, from,
             given ? "use a value" : "give ", given ? "" : r.name, r.ends[0], lo, hi, r.ends[1]);
    return buf;
}

// ---- the model flags: a flag per config field ----

// The library's table holds each field's name, type, default and range; the spellings on the
// command line are these programs'.
static const struct {
    const char *field, *flag;
} model_flags[] = {
    {"block_size", "--block"},
    {"n_layer", "--layers"},
    {"n_head", "--heads"},
    {"n_kv_head", "--kv-heads"},
    {"n_embd", "--embd"},
    {"dropout", "--dropout"},
    {"bias", "--bias"},
    {"positional", "--pos"},
    {"norm", "--norm"},
    {"activation", "--act"},
    {"tie_weights", "--no-tie"},
    {"qk_norm", "--qk-norm"},
    {"qkv_bias", "--no-qkv-bias"},
    {"mlp_hidden", "--mlp-hidden"},
    {"rope_base", "--rope-base"},
    {"norm_eps", "--norm-eps"},
};
#define N_MODEL_FLAGS (sizeof model_flags / sizeof model_flags[0])

const char *gpt_model_flag(int i) {
    for (size_t k = 0; k < N_MODEL_FLAGS; k++)
        if (strcmp(model_flags[k].field, tt_gpt_fields[i].name) == 0) return model_flags[k].flag;
    return NULL;
}

int gpt_model_flag_field(const char *name) {
    for (int i = 0; i < tt_gpt_nfields; i++) {
        const char *f = gpt_model_flag(i);
        if (f && strcmp(f, name) == 0) return i;
    }
    return -1;
}

// "learned|rope" (sep "|") or "learned, rope": the names of enum field f's values.
static void enum_names(const tt_gpt_field *f, const char *sep, char *buf, size_t n) {
    size_t k = 0;
    buf[0] = 0;
    for (int v = (int)f->lo; v <= (int)f->hi; v++)
        if (f->names[v - (int)f->lo] && k < n)
            k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? sep : "", f->names[v - (int)f->lo]);
}

bool gpt_parse_enum(tt_gpt_config *cfg, int i, const char *text, char *buf, size_t n) {
    const tt_gpt_field *f = &tt_gpt_fields[i];
    for (int v = (int)f->lo; v <= (int)f->hi; v++) {
        const char *name = f->names[v - (int)f->lo];
        if (name && strcmp(name, text) == 0) {
            tt_gpt_field_set(cfg, f, v);
            return true;
        }
    }
    char list[256];
    enum_names(f, ", ", list, sizeof list);
    snprintf(buf, n, "%s expects one of %s, got '%s'", gpt_model_flag(i), list, text);
    return false;
}

// ---- the usage text's model flags ----

void gpt_usage_model_flags(FILE *fp, const char *indent) {
    int col = fprintf(fp, "%s", indent);
    tt_gpt_config d = tt_gpt_config_default();
    for (int i = 0; i < tt_gpt_nfields; i++) {
        const tt_gpt_field *f = &tt_gpt_fields[i];
        const char *flag = gpt_model_flag(i);
        if (!flag) continue;
        char item[200], val[100];
        if (f->type == TT_GPT_FIELD_BOOL) {
            snprintf(item, sizeof item, "[%s]", flag);
        } else if (f->type == TT_GPT_FIELD_ENUM) {
            enum_names(f, "|", val, sizeof val);
            snprintf(item, sizeof item, "[%s %s]", flag, val);
        } else if (strcmp(f->name, "n_kv_head") == 0) {
            snprintf(item, sizeof item, "[%s HEADS]", flag);  // defaults to --heads
        } else if (strcmp(f->name, "mlp_hidden") == 0) {
            snprintf(item, sizeof item, "[%s 4xEMBD]", flag);  // 0: 4 n_embd
        } else {
            snprintf(item, sizeof item, "[%s %s]", flag, tt_gpt_field_format(&d, f, val,
                                                                           sizeof val));
        }
        if (col + 1 + (int)strlen(item) > 90) col = fprintf(fp, "\n%s", indent) - 1;
        col += fprintf(fp, "%s%s", col > (int)strlen(indent) ? " " : "", item);
    }
    fputc('\n', fp);
}
