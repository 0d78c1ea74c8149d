#!/bin/sh
# Checks that the #include lines follow the layering of README's Layout section:
#   tensor < autograd < nn < {optim, io} < compress < train < models
# A library file includes headers of its own layer or of a lower one; optim and io sit beside
# each other (neither includes the other); compress reads its masks from io's checkpoints;
# data and dist sit beside the stack: they may use tensor, autograd, nn and io (a tokenizer
# saves itself into a checkpoint), and only train and models (above them) may include them. A module's
# *_internal.h is for its own folder, except that another module's *_internal.h may include
# tensor/tensor_internal.h (the tensor layer's internals reach autograd and nn that way); other
# layers use tensor/tensor_ext.h. examples/ use public headers only (no *_internal.h, no
# tensor_ext.h, nothing under tensor/kernels/). Folders that do not exist yet are known too.
# Prints one line per violation and exits 1 when there is any.
# Usage: sh tests/check_layers.sh [ROOT]   (ROOT: the source tree, default the current folder)
cd "${1:-.}" || exit 2

rank() {
    case $1 in
        tensor) echo 0 ;;
        autograd) echo 1 ;;
        nn) echo 2 ;;
        optim | io) echo 3 ;;
        compress) echo 4 ;;
        train) echo 5 ;;
        models) echo 6 ;;
        data | dist) echo side ;;
        *) echo none ;;
    esac
}

files=$(find tensor autograd nn optim io compress train models data dist examples \
    -type f \( -name '*.c' -o -name '*.h' -o -name '*.inc' -o -name '*.def' \) \
    2> /dev/null | sort)
bad=0
for f in $files; do
    dir=$(dirname "$f")
    from=${f%%/*}
    grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
        sed 's/^\([0-9]*\):.*"\([^"]*\)".*/\1 \2/' > "${TMPDIR:-/tmp}/layers.$$"
    while read -r line inc; do
        # resolve as the compiler does: next to the file, else from the root (-I.)
        target=$(realpath -m --relative-to=. "$dir/$inc")
        [ -e "$target" ] || [ ! -e "$inc" ] || target=$inc
        to=${target%%/*}
        [ "$target" = tinytorch.h ] && to=tinytorch
        why=""
        rf=$(rank "$from") rt=$(rank "$to")
        if [ "$from" = examples ]; then
            case $target in
                *_internal.h | tensor/tensor_ext.h | tensor/kernels/*)
                    why="examples use public headers only" ;;
            esac
        elif [ "$from" != "$to" ] && [ "$to" != tinytorch ]; then
            if [ "$rt" = none ]; then
                why="$to is not a library layer"
            elif [ "$rt" = side ]; then
                [ "$from" = train ] || [ "$from" = models ] ||
                    why="only train and models may use $to (data and dist sit beside the stack)"
            elif [ "$rf" = side ]; then
                [ "$rt" -le 2 ] || [ "$to" = io ] ||
                    why="$from may use tensor, autograd, nn and io only"
            elif [ "$rt" -gt "$rf" ]; then
                why="$to is above $from (tensor < autograd < nn < {optim, io} < compress < train < models)"
            elif [ "$rt" -eq "$rf" ]; then
                why="$from and $to sit beside each other"
            fi
            case $target in
                *_internal.h)
                    case $f:$target in
                        *_internal.h:tensor/tensor_internal.h) ;;
                        *) why="${why:+$why; }$target is internal to $to/" ;;
                    esac ;;
            esac
        fi
        if [ -n "$why" ]; then
            echo "$f:$line: includes $target: $why"
            bad=1
        fi
    done < "${TMPDIR:-/tmp}/layers.$$"
done
rm -f "${TMPDIR:-/tmp}/layers.$$"
[ $bad = 0 ] && echo "layers: every #include follows the layering"
exit $bad
