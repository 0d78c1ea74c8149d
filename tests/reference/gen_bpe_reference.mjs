// Writes tests/reference/bpe_gpt2.txt: GPT-2 encodings of about 550 chosen strings made by
// js-tiktoken (getEncoding("gpt2"), an implementation independent of tinytorch's), checked by
// tests/test_bpe.c. js-tiktoken is installed in a temp dir (never needed at test time):
//     mkdir /tmp/jt && (cd /tmp/jt && npm install js-tiktoken@1.0.21)
//     NODE_PATH=/tmp/jt/node_modules node tests/reference/gen_bpe_reference.mjs \
//         > tests/reference/bpe_gpt2.txt
// (--corpus data/tinyshakespeare.txt prints the split's fingerprints instead, see below.)
// Each output line is one case:
//     MODE HEX IDS...
// MODE "o" = ordinary text (encode_ordinary), "s" = <|endoftext|> allowed as the special
// token; HEX = the UTF-8 bytes of the string ("-" when empty); IDS = the token ids.
import { createRequire } from "module";
import path from "path";

const require = createRequire(path.join(process.cwd(), "noop.js"));
const { getEncoding } = require("js-tiktoken");
const enc = getEncoding("gpt2");

// With --corpus FILE: the 90/10 split's token counts and FNV-1a 64 fingerprints of the ids
// (each id as 4 little-endian bytes), for test_gpt2_shakespeare_counts.
if (process.argv[2] === "--corpus") {
    const text = (await import("fs")).readFileSync(process.argv[3], "latin1");
    const cut = Math.floor(text.length * 0.9);
    for (const part of [text.slice(0, cut), text.slice(cut)]) {
        const ids = enc.encode(part, [], []);
        let h = 0xcbf29ce484222325n;
        for (const id of ids)
            for (let k = 0; k < 4; k++) {
                h ^= BigInt((id >>> (8 * k)) & 0xff);
                h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
            }
        console.log(`tokens=${ids.length} fnv1a64=0x${h.toString(16).padStart(16, "0")}`);
    }
    process.exit(0);
}

const cases = [];
const add = (s, mode = "o") => cases.push([s, mode]);

// ---- hand-picked ----
const hand = [
    "", "Hello world", "hello world", "Hello, world!", " Hello", "  Hello", "Hello ", "Hello  ",
    "a", " ", "  ", "   ", "\t", "\n", "\r\n", "\n\n\n", " \n ", "\t\tx", "x\t\t", "a\r\nb",
    "line one\r\nline two\r\n", "trailing spaces   ", "   leading", "a  b   c    d",
    "tabs\tand\tspaces \t mixed", "\n\nFirst Citizen:\nBefore we proceed any further, hear me.",
    "I'm", "you're", "they've", "she'll", "he'd", "it's", "don't", "I'M", "YOU'RE", "IT'S",
    "It'S", "DON'T", "We'Ll", "o'clock", "'s", "'t", " 's", "''s", "'''", "rock'n'roll",
    "y'all'd've", "John's book's cover", "'sup", "'S", "'Ve", "can't've", "x'LL", "ab'dc",
    "0", "1", "12", "123", "1234", "12345", "123456789012", " 42", "3.14159", "1,000,000",
    "2024-01-01", "v1.2.3", "$100.00", "100%", "1e-9", "0x1F", "٣٤٥", "१२३", "²³", "½ ¼",
    "Ⅻ", "①②", "№5", "abc123def", "abc 123 def",
    "👍", "👍🏽", "👍🏿 ok", "👨‍👩‍👧‍👦", "👩🏾‍💻", "🏳️‍🌈", "❤️", "🇺🇸🇯🇵", " 🙂🙂", "a👍b",
    "emoji at end 🎉", "🎉🎉🎉", "🧑‍🤝‍🧑", "☺", "✨ sparkles ✨",
    "你好，世界", "日本語のテキスト", "한국어 문장입니다", "中文 English 混合", "漢字かなカナ",
    "ひらがな", "カタカナ", "我爱北京天安门。", "東京タワー 333m",
    "مرحبا بالعالم", "שלום עולם", "abc שלום 123", "السلام عليكم ١٢٣", "עִבְרִית",
    "Ελληνικά", "Русский текст", "Привет, мир!", "ქართული", "Հայերեն", "ไทย ภาษา",
    "e\u0301", "cafe\u0301", "café", "Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǫ̗", "नमस्ते", "क्षत्रिय",
    "a\u0300\u0301\u0302", "\u0301", " \u0301", "ñ", "n\u0303",
    "ＡＢＣ１２３！", "ｈｅｌｌｏ　ｗｏｒｌｄ", "全角　スペース", "ﾊﾝｶｸ",
    "<|endoftext|>", "a<|endoftext|>b", "<|endoftext|><|endoftext|>", "<|endoftext",
    "<|endoftext|> hi", "x <|endoftext|>\n", "<|endoftext|>|>", "<<|endoftext|>",
    "!!!", "...", "?!", " ...", "---", "==>", "(a)", "[1, 2]", "{\"k\": \"v\"}",
    "#include <stdio.h>", "int main(void) { return 0; }", "    return x;\n", "\tif (a) {\n",
    "def f(x):\n    return x ** 2\n", "https://example.com/a?b=c&d=e", "user@example.com",
    "C:\\path\\to\\file", "a_b_c", "snake_case_name", "camelCaseName", "HTTPServer",
    "\u00a0", "a\u00a0b", "a \u00a0b", "\u3000", "a\u2003b", "a\u2028b", "\u200b", "a\u200db",
    "\u0000", "a\u0000b", "\u0001\u0002\u0003", "\u007f", "\u0080", "\u00ff", "ÿþ",
    "\uffff", "\ud7ff", "\u{10ffff}", "\u{1f600}", "\u{e000}",
    "MMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMM",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    " ".repeat(40), "\n".repeat(20), "ab".repeat(30), "=".repeat(64), "1".repeat(30),
    "antidisestablishmentarianism", "pneumonoultramicroscopicsilicovolcanoconiosis",
    "supercalifragilisticexpialidocious", " SolidGoldMagikarp", " petertodd", "ROMEO:",
    "To be, or not to be, that is the question:",
    "The quick brown fox jumps over the lazy dog.",
];
for (const s of hand) add(s);
for (const s of hand) if (s.includes("<|")) add(s, "s");
add("<|endoftext|>The end.<|endoftext|>", "s");
add("Hello world", "s");

// ---- contractions against letters, case and spaces ----
const suffixes = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'VE", "'M",
                  "'LL", "'D", "'x", "'"];
for (const pre of ["he", "HE", " we", "123", "", " ", "!"])
    for (const suf of suffixes) add(pre + suf + (pre === "" ? " ok" : ""));

// ---- whitespace runs between words ----
const ws = [" ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", " \n", "\n ", " \t ", "\u00a0",
            "\u3000", "\u2003 "];
for (const w of ws) {
    add("a" + w + "b");
    add("word" + w);
    add(w + "word");
    add("1" + w + "2");
    add("!" + w + "?");
}

// ---- seeded random strings over a mixed alphabet (characters of Unicode <= 9) ----
let seed = 12345;
const rnd = (n) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return Math.floor((seed / 2147483648) * n);
};
const alphabet = [..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
                  ..."      \t\n\r'.,;:!?-_()[]{}\"/\\@#$%^&*+=<>|~`",
                  ..."éüñçßøåÆŒ€£¥§°±×÷", ..."αβγδЖЯжя", ..."你好世界日本語한국", ..."١٢٣مرحباשלום",
                  "\u0301", "\u0308", "\u00a0", "\u3000", "👍", "🏽", "\u200d", "❤", "\ufe0f",
                  "１", "Ａ", "ｈ", "ﾊ", "²", "½", "Ⅻ", "'s", "'ll", "'T", "<|endoftext|>"];
for (let i = 0; i < 160; i++) {
    const len = 1 + rnd(40);
    let s = "";
    for (let k = 0; k < len; k++) s += alphabet[rnd(alphabet.length)];
    add(s, i % 4 === 3 ? "s" : "o");
}

// ---- long pre-tokens (the heap path for more than 64 bytes) ----
const letters = "etaoinshrdlucmfwypvbgkjqxz";
for (let i = 0; i < 12; i++) {
    const len = 65 + rnd(600);
    let s = i % 3 === 0 ? " " : "";
    for (let k = 0; k < len; k++) s += letters[rnd(i % 2 ? 26 : 6)];
    add(s);
}
add("a".repeat(1000));
add(" " + "ab".repeat(200) + " end");
add("9".repeat(300));
add(" ".repeat(300) + "x");
add("!?".repeat(100));

const hex = (s) => s === "" ? "-" : Buffer.from(s, "utf8").toString("hex");
const out = [];
for (const [s, mode] of cases) {
    const ids = mode === "s" ? enc.encode(s, "all") : enc.encode(s, [], []);
    out.push(`${mode} ${hex(s)}${ids.length ? " " + ids.join(" ") : ""}`);
}
process.stdout.write(out.join("\n") + "\n");
process.stderr.write(`gen_bpe_reference: ${out.length} cases\n`);
