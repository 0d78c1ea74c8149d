// The GPT programs' flags (examples/gpt/cli.c): each numeric flag's range, whose ends may be
// open; parsing with overflow detection; the one message for a value outside its range; the
// model flags of the usage text.
#ifndef TT_GPT_FLAGS_H
#define TT_GPT_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "models/gpt/gpt.h"

// [lo, hi], with ends "[]", "[)", "(]" or "()" saying which ends are open.
typedef struct gpt_range {
    const char *name;
    double lo, hi;
    const char *ends;
} gpt_range;

// The range of flag name (max_block caps --block); a flag with none takes any int64.
gpt_range gpt_flag_range(const char *name, int64_t max_block);

// Parses text as an integer (is_int: into *i) or a real (into *d) and returns the value to
// check against a range: +-inf for an integer beyond int64 or a real beyond a double (a real
// below the smallest normal double is the denormal number it is); NaN when text is no number.
double gpt_parse_number(const char *text, bool is_int, int64_t *i, double *d);

// Whether v lies in r (NaN never does).
bool gpt_range_has(gpt_range r, double v);

// "NAME TEXT<from> is out of range; use a value in [lo, hi]" (given) or "...; give NAME in
// [lo, hi]" (a value the user did not type) into buf; returns buf.
const char *gpt_range_message(gpt_range r, const char *text, const char *from, bool given,
                              bool is_int, char *buf, size_t n);

// The flag of config field i (tt_gpt_fields[i]): "--layers" for n_layer; NULL when it has
// none (vocab_size comes from the tokenizer). A bool's flag names the value it sets: --bias
// turns bias on, --no-tie turns tie_weights off.
const char *gpt_model_flag(int i);
// The index in tt_gpt_fields of the field whose flag is name; -1 when none.
int gpt_model_flag_field(const char *name);

// Parses text into enum field i of cfg; false, with "FLAG expects one of a, b, got 'text'" in
// buf, when text names none of its values (cfg unchanged).
bool gpt_parse_enum(tt_gpt_config *cfg, int i, const char *text, char *buf, size_t n);

// The model flags of the usage text ("[--layers 4] [--heads 4] ..."), from the config's field
// table with the defaults, wrapped at 90 columns, each line starting with indent.
void gpt_usage_model_flags(FILE *fp, const char *indent);

#endif  // TT_GPT_FLAGS_H
