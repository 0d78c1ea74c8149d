#!/bin/sh
# Checks the source of the Check suites: every test registered to expect SIGABRT opens with
# tt_expect_abort("...") and sits in a case made by tt_tcase_aborts or tt_tcase, whose fixtures
# hook tt_fatal. The hook fails at run time a test that aborts with another message; this
# catches what it cannot see: an abort test that names no message in a case without the hook,
# which would pass on any SIGABRT. Usage: sh tests/check_abort_tests.sh [tests/test_*.c]
[ $# -gt 0 ] || set -- tests/test_*.c
awk '
# the TCase variables and the function that made each
match($0, /TCase \*[A-Za-z_0-9]+ = [A-Za-z_0-9]+\(/) {
    s = substr($0, RSTART + 7, RLENGTH - 8)
    split(s, p, / = /)
    creator[FILENAME, p[1]] = p[2]
}
# the first statement of every test
/^START_TEST\(/ {
    name = $0
    sub(/^START_TEST\(/, "", name)
    sub(/\).*/, "", name)
    if ($0 ~ /tt_expect_abort\(/) opens[FILENAME, name] = 1
    else pending = name
    next
}
pending != "" {
    if ($0 ~ /^    tt_expect_abort\("/) opens[FILENAME, pending] = 1
    pending = ""
}
/tcase_add_(loop_)?test_raise_signal\(/ {
    line = $0
    sub(/.*tcase_add_(loop_)?test_raise_signal\( */, "", line)
    n = split(line, a, /, */)
    tc = a[1]
    fn = a[2]
    if (n < 2 || fn == "") {
        printf "%s:%d: cannot read this registration; keep it on one line\n", FILENAME, FNR
        bad++
        next
    }
    regs[++nregs] = FILENAME SUBSEP fn SUBSEP tc SUBSEP FNR
    made[FILENAME, tc] = creator[FILENAME, tc]
}
END {
    for (i = 1; i <= nregs; i++) {
        split(regs[i], r, SUBSEP)
        f = r[1]; fn = r[2]; tc = r[3]; ln = r[4]
        if (!((f, fn) in opens)) {
            printf "%s:%d: %s expects SIGABRT but does not open with tt_expect_abort(\"...\")\n",
                   f, ln, fn
            bad++
        }
        c = made[f, tc]
        if (c != "tt_tcase_aborts" && c != "tt_tcase") {
            printf "%s:%d: %s is in case %s made by %s; make it with tt_tcase_aborts\n", f, ln,
                   fn, tc, (c == "" ? "?" : c)
            bad++
        }
    }
    if (bad) { printf "abort tests: %d problem(s)\n", bad; exit 1 }
    printf "abort tests: %d, each names its message\n", nregs
}' "$@"
