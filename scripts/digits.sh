#!/bin/sh
# make data: data/digits.csv.gz, scikit-learn's 8 x 8 digits (1,797 rows of 64 pixels 0 .. 16
# and a label), as Debian's python3-sklearn ships it. Copied from ../shared/data/ or from an
# installed python3-sklearn when present, else `apt-get download python3-sklearn` in a temp dir
# and only that file is extracted (no install, no dependencies). Checked against its sha256
# before it is moved into place; skipped when already there. Never committed (.gitignore).
set -u
out=data/digits.csv.gz
sha=46abec6b12486ad9e51943373abcf22bbea1b5a51a1619b361570d8893f1464a
member=usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz

part=$out.part.$$  # this run's own temp name: a second run at once cannot clobber it
fail() { echo "data: $*" >&2; rm -f "$part"; exit 1; }
ok_sha() { [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$sha" ]; }

[ -s "$out" ] && ok_sha "$out" && exit 0
command -v sha256sum >/dev/null 2>&1 || fail "sha256sum (coreutils) is needed to check the file"
mkdir -p data || fail "cannot create data/"
from=""
for f in ../shared/data/digits.csv.gz "/$member"; do
    if [ -s "$f" ] && ok_sha "$f"; then
        cp "$f" "$part" && chmod 644 "$part" && from="copied $f" && break
    fi
done
if [ -z "$from" ]; then
    command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1 ||
        fail "no apt-get/dpkg-deb: copy scikit-learn's sklearn/datasets/data/digits.csv.gz to $out"
    tmp=$(mktemp -d) || fail "mktemp failed"
    chmod 755 "$tmp"  # apt's download user writes here
    # A machine whose package lists were never fetched has no download address: as root,
    # fetch them once and retry.
    dl() { (cd "$tmp" && apt-get download -qq python3-sklearn >/dev/null 2>&1); }
    dl || { [ "$(id -u)" = 0 ] && apt-get update -qq >/dev/null 2>&1 && dl; }
    if (cd "$tmp" && ls python3-sklearn_*.deb >/dev/null 2>&1 &&
        dpkg-deb --fsys-tarfile python3-sklearn_*.deb | tar -x -O "./$member" > digits.csv.gz)
    then
        cp "$tmp/digits.csv.gz" "$part"
    fi
    rm -rf "$tmp"
    [ -s "$part" ] ||
        fail "apt-get download python3-sklearn failed (offline? run apt-get update); or copy" \
             "scikit-learn's sklearn/datasets/data/digits.csv.gz to $out"
    from="apt-get download python3-sklearn"
fi
ok_sha "$part" || fail "digits.csv.gz from $from: wrong sha256"
mv "$part" "$out" || fail "cannot move the file to $out"
echo "data: $out ($from, sha256 ok)"
