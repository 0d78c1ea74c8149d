#!/usr/bin/env python3
"""Re-aligns continuation lines after scripts/nn_names.sed renamed names on the line above.

    python3 scripts/nn_names_realign.py REV FILE...

For each FILE, pairs its lines with those of its version at git revision REV (renamed by
scripts/nn_names.sed, spaces aside: lines wrapped by hand since stay unpaired). Where a renamed
line ends inside an open parenthesis and the lines after it were aligned one column past that
parenthesis, they move with it; a renamed line's trailing // comment keeps its place (aligned
with its neighbours' or two spaces after the code). Lines then longer than 100 columns are
listed on stderr, to be wrapped by hand. Running it twice changes nothing.
"""
import difflib
import os
import subprocess
import sys


def scan(line):
    """(the column of the innermost parenthesis still open at the end of the code, or None;
    the column of a // comment after code, or None), skipping strings."""
    stack, quote = [], None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote and line[i - 1] != "\\":
                quote = None
        elif ch in "\"'":
            quote = ch
        elif line.startswith("//", i):
            return (stack[-1] if stack else None), (i if line[:i].strip() else None)
        elif ch in "([{":
            stack.append(i)
        elif ch in ")]}" and stack:
            stack.pop()
    return (stack[-1] if stack else None), None


def open_paren(line):
    return scan(line)[0]


def comment_col(line):
    return scan(line)[1]


def recomment(old, new):
    """new with its trailing comment where old had it: two spaces after the code as before, or
    at old's column when old's was aligned further out (and the code still fits before it)."""
    co, cn = comment_col(old), comment_col(new)
    if co is None or cn is None:
        return new
    code, gap = new[:cn].rstrip(), co - len(old[:co].rstrip())
    col = co if gap > 2 and len(code) + 2 <= co else len(code) + min(gap, 2)
    return code + " " * (col - len(code)) + new[cn:]


def indent(line):
    return len(line) - len(line.lstrip(" "))


def pairs(old, new, sed):
    """{i: j}: old line i is new line j, matched after renaming old and ignoring spaces."""
    renamed = subprocess.run(["sed", "-E", "-f", sed], input="\n".join(old), capture_output=True,
                             text=True, check=True).stdout.split("\n")
    squash = [" ".join(line.split()) for line in renamed]
    matcher = difflib.SequenceMatcher(None, squash, [" ".join(line.split()) for line in new],
                                      autojunk=False)
    out = {}
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            out[block.a + k] = block.b + k
    return out


def realign(old, new, match):
    """new with its continuation lines moved as their anchors moved; old is REV's text."""
    out = list(new)
    for i, o in enumerate(old):
        if i not in match or o == new[match[i]]:
            continue
        po, pn = open_paren(o), open_paren(out[match[i]])
        if po is None or pn is None or po == pn:
            continue
        k = i + 1
        while k < len(old) and match.get(k) == match[i] + k - i and old[k].strip() \
                and indent(old[k]) > po:
            j = match[k]
            out[j] = " " * (indent(old[k]) + pn - po) + out[j].lstrip(" ")
            if old[k].rstrip().endswith((";", "{")):
                break
            k += 1
    return out


def main():
    rev, files = sys.argv[1], sys.argv[2:]
    sed = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nn_names.sed")
    for path in files:
        old = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True,
                             text=True).stdout.split("\n")
        with open(path) as f:
            new = f.read().split("\n")
        match = pairs(old, new, sed)
        out = realign(old, new, match)
        for i, j in match.items():
            if old[i] != out[j]:
                out[j] = recomment(old[i], out[j])
        if out != new:
            with open(path, "w") as f:
                f.write("\n".join(out))
        for i, j in sorted(match.items()):
            if len(out[j]) > 100 and len(old[i]) <= 100:
                print(f"{path}:{j + 1}: {len(out[j])} columns", file=sys.stderr)


if __name__ == "__main__":
    main()
