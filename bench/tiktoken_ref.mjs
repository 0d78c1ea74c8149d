// js-tiktoken's GPT-2 encode on the same corpus as bench_tokenizer, for comparison: the first
// encode (cold) and the median of 7 more (warm), one thread. Prints `bench tiktoken ...`, or a
// skip message when js-tiktoken cannot be found (it is never a dependency of the project):
//     mkdir /tmp/jt && (cd /tmp/jt && npm install js-tiktoken)
//     NODE_PATH=/tmp/jt/node_modules node bench/tiktoken_ref.mjs [data/tinyshakespeare.txt]
import { createRequire } from "module";
import fs from "fs";
import path from "path";

const file = process.argv[2] || "data/tinyshakespeare.txt";
const require = createRequire(path.join(process.cwd(), "noop.js"));
let getEncoding;
try {
    ({ getEncoding } = require("js-tiktoken"));
} catch {
    console.log("bench tiktoken: skipped (js-tiktoken not found; npm install js-tiktoken in a " +
                "temp dir and set NODE_PATH to its node_modules)");
    process.exit(0);
}
if (!fs.existsSync(file)) {
    console.log(`bench tiktoken: skipped (no ${file}; run make data)`);
    process.exit(0);
}
const text = fs.readFileSync(file, "utf8");
const bytes = Buffer.byteLength(text, "utf8");
let t0 = process.hrtime.bigint();
const enc = getEncoding("gpt2");
const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
const time = () => {
    const s = process.hrtime.bigint();
    const n = enc.encode(text, [], []).length;
    return [Number(process.hrtime.bigint() - s) / 1e9, n];
};
const [cold, tokens] = time();
const warm = [];
for (let i = 0; i < 7; i++) warm.push(time()[0]);
warm.sort((a, b) => a - b);
const mb = bytes / 1e6;
console.log(`bench tiktoken impl=js-tiktoken name=gpt2 load_ms=${loadMs.toFixed(1)}`);
console.log(`bench tiktoken impl=js-tiktoken name=gpt2 cache=cold bytes=${bytes} ` +
            `tokens=${tokens} mb_per_s=${(mb / cold).toFixed(1)}`);
console.log(`bench tiktoken impl=js-tiktoken name=gpt2 cache=warm bytes=${bytes} ` +
            `tokens=${tokens} mb_per_s=${(mb / warm[3]).toFixed(1)}`);
