#!/bin/sh
# Checks that the modules keep torch.nn's naming scheme (README, "Every module follows one
# convention"): nn.X is the struct tt_nn_<x> with functions tt_nn_<x>_<verb>, while functional
# ops keep F.*'s names. In the public headers of nn/ and compress/ (and models/<m>/, whose
# own stem tt_<m> is the model's), it fails when
#   - a type ends in _layer (tt_conv2d_layer): the old scheme (tt_nn_recurrent_layer, one layer
#     of a recurrent module's weights and not a module, is the exception);
#   - a function tt_<x>_forward or tt_<x>_module is declared outside tt_nn_ (tt_module_* and
#     tt_custom_* are nn.Module's interface, tt_act_module the activation enum's, tt_<m>_* a
#     model's);
#   - a function whose first argument is a module (a struct tt_nn_<x> that has a _forward or a
#     _module) is not named tt_nn_<x>_<verb>.
# Then checks scripts/nn_names.sed: fixed names map as documented, ops and look-alikes stay,
# a second run changes nothing, and no old name is left in the tree; and that a use of an old
# name warns, naming the new one (nn/deprecated.h). Last, that the header check fails on a
# header in the old scheme. Prints one line per problem and exits 1 when there is any.
# Usage: sh tests/check_names.sh [ROOT]   (ROOT: the source tree, default the current folder)
cd "${1:-.}" || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0

# Declarations of the headers given: "T name" and "F name first-argument-type" lines.
declarations() {
    cat "$@" | grep -v '^[[:space:]]*#' | sed 's://.*$::' | tr '\n' ' ' | tr ';' '\n' | awk '
        match($0, /^ *\} *tt_[a-z0-9_]+ *$/) { gsub(/[} ]/, ""); print "T " $0; next }
        /^ *typedef [^{(]* tt_[a-z0-9_]+ *$/ { print "T " $NF; next }
        match($0, /^ *(extern "C" \{ *)?(const +)?[a-z_][a-z0-9_]* *\**( +|\*)tt_[a-z0-9_]+\(/) {
            s = substr($0, RSTART, RLENGTH); sub(/\($/, "", s); n = split(s, w, /[ *]+/)
            arg = substr($0, RSTART + RLENGTH); sub(/[,)].*/, "", arg)
            sub(/^ *const +/, "", arg); sub(/ *\*.*/, "", arg); sub(/ .*/, "", arg)
            print "F " w[n] " " (arg == "" ? "-" : arg)
        }'
}

# Checks the headers given; model is the stem a models/<m>/ header may use ("" elsewhere).
check_headers() {  # model header...
    model=$1
    shift
    for h; do declarations "$h" | sed "s|^|$h |"; done > "$tmp/decl"
    awk -v model="$model" '
        $2 == "T" { type[$3] = 1; types[++nt] = $3; tfile[nt] = $1 }
        $2 == "F" { fn[++nf] = $3; arg[nf] = $4; file[nf] = $1 }
        END {
            for (i = 1; i <= nf; i++) if (fn[i] ~ /_(forward|module)$/) {
                stem = fn[i]; sub(/_(forward|module)$/, "", stem)
                if (stem in type && stem != "tt_module") module[stem] = 1
            }
            for (i = 1; i <= nt; i++)
                if (types[i] ~ /_layer$/ && types[i] != "tt_nn_recurrent_layer")
                    printf "%s: type %s: a module is tt_nn_<x>, no _layer\n", tfile[i], types[i]
            for (i = 1; i <= nf; i++) {
                f = fn[i]
                if (f ~ /^tt_(nn|module|custom)_/ || f == "tt_act_module") continue
                if (model != "" && (f ~ "^" model "_" || f == model)) continue
                if (f ~ /_(forward|module)$/)
                    printf "%s: %s: a module'"'"'s functions are tt_nn_<x>_<verb>\n", file[i], f
                else if (arg[i] in module && arg[i] ~ /^tt_nn_/)
                    printf "%s: %s takes a %s: name it %s_<verb>\n", file[i], f, arg[i], arg[i]
            }
        }' "$tmp/decl" > "$tmp/out"
    cat "$tmp/out"
    [ ! -s "$tmp/out" ]
}

# ---- the headers ----
pub=$(ls nn/*.h compress/*.h | grep -v -e '_internal\.h$' -e '/deprecated\.h$')
check_headers "" $pub || bad=1
for d in models/*/; do
    m=$(basename "$d")
    hs=$(ls "$d"*.h 2> /dev/null | grep -v '_internal\.h$')
    [ -z "$hs" ] || check_headers "tt_$m" $hs || bad=1
done

# ---- scripts/nn_names.sed ----
cat > "$tmp/in.c" << 'EOF'
tt_linear a; tt_linear_init tt_linear_new tt_conv2d_layer x; tt_conv2d_layer_new
tt_conv2d_opts tt_sequential_own tt_embedding_layer tt_embedding_init tt_embedding_bag_layer
tt_layernorm_init tt_batchnorm1d_init tt_dropout2d_layer_train tt_recurrent_layer
tt_flatten_module tt_qlinear
ops: tt_conv2d tt_conv2d_same tt_embedding tt_embedding_bag tt_embedding_bag_opts tt_dropout
look-alikes: tt_linearity my_tt_linear TT_LINEAR tt_layernorm tt_upsample_nearest2d tt_normal_
EOF
cat > "$tmp/want.c" << 'EOF'
tt_nn_linear a; tt_nn_linear_init tt_nn_linear_new tt_nn_conv2d x; tt_nn_conv2d_new
tt_nn_conv2d_opts tt_nn_sequential_own tt_nn_embedding tt_nn_embedding_init tt_nn_embedding_bag
tt_nn_layernorm_init tt_nn_batchnorm1d_init tt_nn_dropout2d_train tt_nn_recurrent_layer
tt_nn_flatten_module tt_nn_qlinear
ops: tt_conv2d tt_conv2d_same tt_embedding tt_embedding_bag tt_embedding_bag_opts tt_dropout
look-alikes: tt_linearity my_tt_linear TT_LINEAR tt_layernorm tt_upsample_nearest2d tt_normal_
EOF
sed -E -f scripts/nn_names.sed "$tmp/in.c" > "$tmp/got.c"
diff "$tmp/want.c" "$tmp/got.c" || { echo "scripts/nn_names.sed: renamed wrongly"; bad=1; }
sed -E -f scripts/nn_names.sed "$tmp/got.c" | cmp -s - "$tmp/got.c" \
    || { echo "scripts/nn_names.sed: a second run changes the text"; bad=1; }
# No old name left in the tree: the sed changes none of its files (the sed's own files aside).
if command -v git > /dev/null && git rev-parse --git-dir > /dev/null 2>&1; then
    git ls-files '*.c' '*.h' '*.md' '*.sh' '*.py' '*.inc' '*.def' \
        | grep -v -e '^scripts/nn_names' -e '^scripts/gen_nn_names.sh$' -e '/deprecated\.h$' \
            -e '^tests/test_deprecated.c$' -e '^tests/check_names.sh$' > "$tmp/files"
    xargs cat < "$tmp/files" > "$tmp/tree"
    if ! sed -E -f scripts/nn_names.sed "$tmp/tree" | cmp -s - "$tmp/tree"; then
        while read -r f; do
            sed -E -f scripts/nn_names.sed "$f" | cmp -s - "$f" \
                || { echo "$f: a name from before tt_nn_* (sed -E -i -f scripts/nn_names.sed)"; }
        done < "$tmp/files"
        bad=1
    fi
fi

# ---- a use of an old name warns and names the new one ----
CC=${CC:-cc}
printf '#include "tinytorch.h"\n%s\n%s\n' 'void f(tt_linear *m);' \
    'void f(tt_linear *m) { tt_linear_free(m); }' > "$tmp/old.c"
$CC -std=c11 -I. -c "$tmp/old.c" -o "$tmp/old.o" 2> "$tmp/warn"
for w in "use tt_nn_linear " "use tt_nn_linear_free "; do
    grep -q "$w\\[-Wdeprecated" "$tmp/warn" || { echo "nn/deprecated.h: no warning \"$w\""; bad=1; }
done
$CC -std=c11 -I. -DTT_NO_DEPRECATED -c "$tmp/old.c" -o "$tmp/old.o" 2> /dev/null \
    && { echo "nn/deprecated.h: included under TT_NO_DEPRECATED"; bad=1; }

# ---- the header check itself fails on the old scheme ----
printf 'typedef struct tt_foo_layer { int a; } tt_foo_layer;\n%s\n%s\n%s\n' \
    'tt_tensor *tt_bar_forward(tt_bar *m, tt_tensor *x);' \
    'typedef struct tt_nn_baz { int a; } tt_nn_baz;' \
    'tt_module tt_nn_baz_module(tt_nn_baz *m);
void tt_baz_train(tt_nn_baz *m, bool training);' > "$tmp/old.h"
check_headers "" "$tmp/old.h" > "$tmp/self" && { echo "check_names: passed an old header"; bad=1; }
for w in "type tt_foo_layer" "tt_bar_forward: a module" "tt_baz_train takes a tt_nn_baz"; do
    grep -q "$w" "$tmp/self" || { echo "check_names: did not report \"$w\""; bad=1; }
done
[ $bad = 1 ] || echo "names: every module is tt_nn_<x>, no old name is left, the aliases warn"
exit $bad
