// The npm reference's side of tokenizer_bench.sh: load time and encode MB/s
// of @huggingface/tokenizers on the same file, line by line and whole.
//   node tokenizer_reference.mjs NODE_MODULES TOKENIZER_JSON TEXT_FILE
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [node_modules, tokenizer_file, text_file] = process.argv.slice(2);
const text = fs.readFileSync(text_file, "utf8");
const entry = path.join(node_modules, "@huggingface/tokenizers/dist/tokenizers.mjs");
const { Tokenizer } = await import(pathToFileURL(entry).href);
let start = performance.now();
const tokenizer = new Tokenizer(JSON.parse(fs.readFileSync(tokenizer_file, "utf8")), {});
const load = (performance.now() - start) / 1000;
start = performance.now();
let tokens = 0;
for (const line of text.split("\n")) tokens += tokenizer.encode(line, { add_special_tokens: false }).ids.length;
const by_line = (performance.now() - start) / 1000;
start = performance.now();
const whole = tokenizer.encode(text, { add_special_tokens: false }).ids.length;
const at_once = (performance.now() - start) / 1000;
const mb = Buffer.byteLength(text) / 1e6;
console.log(`npm     load ${load.toFixed(3)} s | by line ${(mb / by_line).toFixed(1)} MB/s (${tokens} tokens) | whole ${(mb / at_once).toFixed(1)} MB/s (${whole} tokens)`);
