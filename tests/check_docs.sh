#!/bin/sh
# Checks every code block of README.md and docs/*.md against the build, then runs the tour.
# A block's kind comes from its fence and the HTML comment on the line(s) right before it:
#   ```c after <!-- verbatim: FILE -->   the block is a region of FILE (any indent), verbatim
#   ```c after <!-- compile: fragment    the block, after the prelude lines up to -->, is the
#              PRELUDE... -->           body of a function compiled and linked with the library
#   ```c after <!-- compile: file -->    the block is a translation unit's top level (+ main)
#   ``` after <!-- help: PROGRAM -->    the block is a region of `build/PROGRAM --help`
#   ```sh                               `make T` names targets of the Makefile; build/P exists
#                                       (or is a Makefile target) and takes each --flag given
#                                       (checked against its --help for the CLI programs)
#   any block after <!-- nocheck: WHY --> not checked; listed with its reason
# A ```c block without a marker fails; other ``` blocks are program output, listed as such.
# Usage: sh tests/check_docs.sh [BUILD]; CC, CFLAGS and LDLIBS as the Makefile passes them.
build=${1:-build}
CC=${CC:-cc}
LDLIBS=${LDLIBS:--lxxhash -ljansson -lpcre2-8 -lz -lm -fopenmp}
CFLAGS=${CFLAGS:--std=c11 -D_POSIX_C_SOURCE=200809L -O1 -fopenmp}
dir="$build/docs_check"
rm -rf "$dir" && mkdir -p "$dir" || exit 1
fail=0
err() { echo "check_docs: $*" >&2; fail=1; }

# ---- extract: one file per block (N.block), its marker (N.mark), an index line ----
for md in README.md docs/*.md; do
    awk -v md="$md" -v dir="$dir" '
        BEGIN { n = 0; fence = 0; comment = ""; incomment = 0; last = 0 }
        fence == 0 && incomment { comment = comment "\n" $0; if (/-->/) incomment = 0; next }
        fence == 0 && /^<!--/ { comment = $0; incomment = !/-->/; last = 1; next }
        fence == 0 && /^```/ {
            lang = substr($0, 4); n++
            id = md; gsub(/[\/.]/, "_", id); id = id "_" n
            blk = dir "/" id ".block"; printf "" > blk
            printf "%s\n", (last ? comment : "") > (dir "/" id ".mark")
            close(dir "/" id ".mark")
            print id "\t" md "\t" FNR "\t" (lang == "" ? "-" : lang) >> (dir "/index")
            fence = 1; last = 0; next
        }
        fence == 1 && /^```/ { fence = 0; close(blk); next }
        fence == 1 { print > blk; next }
        { last = 0 }
    ' "$md"
done

# A region check: the lines of $1 occur in $2 one after another, each behind the indent the
# first one has there (blank lines match blank lines).
region_in() {
    awk -v want="$1" '
        BEGIN { nb = 0; while ((getline l < want) > 0) b[++nb] = l }
        { f[++nf] = $0 }
        END {
            if (nb == 0) exit 1
            for (i = 1; i + nb - 1 <= nf; i++) {
                k = index(f[i], b[1]); if (k == 0) continue
                ind = substr(f[i], 1, k - 1); if (ind ~ /[^ ]/ || f[i] != ind b[1]) continue
                ok = 1
                for (j = 2; j <= nb && ok; j++)
                    ok = (b[j] == "" ? f[i+j-1] ~ /^ *$/ : f[i+j-1] == ind b[j])
                if (ok) exit 0
            }
            exit 1
        }' "$2"
}

# ---- ```c blocks ----
compile_block() {  # $1 id, $2 where, $3 kind (fragment|file), $4 the .md, $5 the fence's line
    src="$dir/$1.c"
    {
        printf '#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n'
        printf '#include <string.h>\n#include "tinytorch.h"\n'
        if [ "$3" = file ]; then
            printf '#line %d "%s"\n' $(($5 + 1)) "$4"; cat "$dir/$1.block"
            printf 'int main(void) { return 0; }\n'
        else
            printf 'int docs_fragment(void);\nint docs_fragment(void) {\n'
            sed '1d;$d' "$dir/$1.mark"
            printf '#line %d "%s"\n' $(($5 + 1)) "$4"; cat "$dir/$1.block"
            printf '    return 0;\n}\nint main(void) { return docs_fragment() * 0; }\n'
        fi
    } > "$src"
    # shellcheck disable=SC2086
    if ! $CC $CFLAGS -I. -Werror -Wno-unused-variable -Wno-unused-but-set-variable \
            -Wno-unused-function -Wno-unused-parameter -Wno-missing-prototypes \
            "$src" -o "$dir/$1" "$build/libtinytorch.a" $LDLIBS 2> "$dir/$1.log"; then
        err "$2: the block does not compile or link ($src):"; cat "$dir/$1.log" >&2
    fi
}

# ---- ```sh blocks ----
help_of() {  # the --help text of a built program, cached
    [ -f "$dir/help_$1" ] || timeout 20 "$build/$1" --help > "$dir/help_$1" 2>&1 ||
        : > "$dir/help_$1"
    cat "$dir/help_$1"
}
is_target() {
    grep -Eq "^([^:=#	]* )?$1( [^:=#]*)?:([^=]|$)" Makefile ||
        grep -Eq "^\.PHONY:.* $1( |$)" Makefile
}
check_command() {  # $1 where, $2 the command line
    w=$1
    set -f
    # A quoted argument (LOG="a.csv b.csv") is one word: its spaces are not separators.
    for part in $(printf '%s\n' "$2" | sed 's/"[^"]*"/Q/g' | sed 's/[|;&]\{1,2\}/\n/g' |
                  tr ' ' '\001'); do
        set -- $(printf '%s' "$part" | tr '\001' ' ')
        while [ $# -gt 0 ]; do case $1 in *=*|sudo|time) shift ;; *) break ;; esac; done
        [ $# -gt 0 ] || continue
        case $1 in
        make)
            shift
            for t in "$@"; do
                case $t in -*|*=*|'#'*) continue ;; esac
                is_target "$t" || err "$w: make target '$t' is not in the Makefile"
            done ;;
        mpirun|*build*/*|./build*)
            while [ $# -gt 0 ]; do case $1 in *build*/*) break ;; *) shift ;; esac; done
            [ $# -gt 0 ] || { echo "  not checked: $w: $part" | tr '\001' ' '; continue; }
            prog=${1#./}; prog=${prog#*/}; shift
            if [ ! -x "$build/$prog" ] && ! grep -q "$prog" Makefile; then
                err "$w: $build/$prog is neither built nor named in the Makefile"; continue
            fi
            case $prog in
            char_gpt|gpt|lenet|compress)
                help=$(help_of "$prog")
                for a in "$@"; do
                    case $a in --*) ;; *) continue ;; esac
                    f=${a%%=*}
                    [ "$f" = --help ] && continue
                    printf '%s\n' "$help" | grep -q -- "$f\b" ||
                        err "$w: $prog has no flag $f (not in its --help)"
                done ;;
            esac ;;
        echo|printf|cat|cd|export|mkdir|grep|head|tail|sed|awk) ;;
        *) echo "  not checked: $w: $*" ;;
        esac
    done
    set +f
}
check_sh_block() {  # $1 id, $2 where
    awk 'FNR == NR { if (/^\$ /) p = 1; next }
         p && cont { print; cont = /\\$/; next }
         p && /^\$ / { sub(/^\$ /, ""); print; cont = /\\$/; next }
         !p' "$dir/$1.block" "$dir/$1.block" |
        sed 's/[[:space:]]#.*$//; /^#/d' | awk '/\\$/ { sub(/\\$/, ""); acc = acc $0; next }
        { print acc $0; acc = "" }' > "$dir/$1.cmds"
    while IFS= read -r cmd; do
        [ -n "$cmd" ] && check_command "$2" "$cmd"
    done < "$dir/$1.cmds"
}

# ---- every block ----
nverb=0; ncomp=0; nhelp=0; nsh=0; nout=0; nskip=0
while IFS='	' read -r id md line lang; do
    where="$md:$line"
    mark=$(head -n 1 "$dir/$id.mark")
    case $mark in
    '<!-- nocheck:'*)
        nskip=$((nskip + 1)); echo "  not checked: $where: ${mark#<!-- nocheck: }"; continue ;;
    esac
    case $lang in
    c)
        case $mark in
        '<!-- verbatim: '*)
            f=${mark#<!-- verbatim: }; f=${f% -->}; nverb=$((nverb + 1))
            if [ ! -f "$f" ]; then err "$where: $f does not exist"
            elif ! region_in "$dir/$id.block" "$f"; then
                err "$where: the block is not a region of $f"
            fi ;;
        '<!-- compile: fragment'*)
            ncomp=$((ncomp + 1)); compile_block "$id" "$where" fragment "$md" "$line" ;;
        '<!-- compile: file -->')
            ncomp=$((ncomp + 1)); compile_block "$id" "$where" file "$md" "$line" ;;
        *) err "$where: a C block needs a <!-- verbatim: FILE -->, <!-- compile: ... -->" \
               "or <!-- nocheck: WHY --> line before it" ;;
        esac ;;
    sh) nsh=$((nsh + 1)); check_sh_block "$id" "$where" ;;
    *)
        case $mark in
        '<!-- help: '*)
            p=${mark#<!-- help: }; p=${p% -->}; nhelp=$((nhelp + 1))
            help_of "$p" > "$dir/$id.help"
            region_in "$dir/$id.block" "$dir/$id.help" ||
                err "$where: the block is not a region of \`$build/$p --help\`"
            ;;
        *) nout=$((nout + 1)); echo "$where" >> "$dir/output_blocks" ;;
        esac ;;
    esac
done < "$dir/index"

# ---- every tt_ / TT_ name the pages mention is in the sources ----
find tensor autograd nn optim io compress data train dist models examples bench tests \
    -name '*.[ch]' -o -name '*.def' -o -name '*.inc' | xargs cat | grep -oE '\b[tT][tT]_\w+' |
    sort -u > "$dir/names_src"
cat README.md docs/*.md | grep -oE '\b[tT][tT]_[A-Za-z0-9_]+<?' | grep -v '<$' |
    grep -vE '^[tT][tT]_+$' | sort -u > "$dir/names_docs"
nnames=$(wc -l < "$dir/names_docs")
for n in $(comm -23 "$dir/names_docs" "$dir/names_src"); do
    case $n in  # TT_OP_<ROW> is pasted together from a row of tensor/ops.def
    TT_OP_*) grep -q "^TT_[A-Z_]*(${n#TT_OP_}," tensor/ops.def && continue ;;
    esac
    err "the docs name $n, which no source file declares or uses"
done

# ---- every relative link leads to a file ----
nlinks=0
for md in README.md docs/*.md; do
    for t in $(grep -oE '\]\([^)#[:space:]]+' "$md" | sed 's/^](//' | grep -v '^[a-z]*:'); do
        nlinks=$((nlinks + 1))
        [ -e "$(dirname "$md")/$t" ] || err "$md: the link $t leads nowhere"
    done
done

# ---- the tour: README's block is examples/tour.c (checked above); run it ----
out=$("$build/tour") || err "tour exited non-zero"
echo "$out" | grep -q '^loss [0-9]' && echo "$out" | grep -q 'shape=(4, 1), dtype=f32' ||
    err "tour: unexpected output: $out"

echo "docs: $nverb verbatim and $ncomp compiled C blocks, $nhelp usage blocks, $nsh command" \
     "blocks, $nnames tt_/TT_ names and $nlinks links checked; $nskip marked not checkable," \
     "$nout output blocks not checked (listed in $dir/output_blocks)"
[ $fail -eq 0 ] && echo "docs: ok"
exit $fail
