// Reference token ids for tests/text: runs the reference implementations
// (@huggingface/tokenizers for tokenizer.json, tiktoken for tiktoken files)
// on a JSON array of strings and prints JSON to stdout.
//
//   node reference_tokenize.mjs NODE_MODULES hf TOKENIZER_JSON CONFIG_JSON|- STRINGS_JSON
//     -> {"plain": [[ids]...], "special": [[ids]...], "decoded": [text...]}
//        plain: add_special_tokens false; special: true; decoded: decode(plain)
//        with clean_up_tokenization_spaces false.
//   node reference_tokenize.mjs NODE_MODULES tiktoken RANKS_FILE PATTERN SPECIALS_JSON STRINGS_JSON
//     -> {"plain": [[ids]...], "decoded": [text...]}   (special tokens allowed in text)
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const [node_modules, format, ...args] = process.argv.slice(2);
const read_json = (file) => JSON.parse(fs.readFileSync(file, "utf8"));

async function run_hf([tokenizer_file, config_file, strings_file]) {
  const entry = path.join(node_modules, "@huggingface/tokenizers/dist/tokenizers.mjs");
  const { Tokenizer } = await import(pathToFileURL(entry).href);
  const config = config_file === "-" ? {} : read_json(config_file);
  const tokenizer = new Tokenizer(read_json(tokenizer_file), config);
  const strings = read_json(strings_file);
  const plain = strings.map((s) => tokenizer.encode(s, { add_special_tokens: false }).ids);
  const special = strings.map((s) => tokenizer.encode(s, { add_special_tokens: true }).ids);
  const decoded = plain.map((ids) =>
    ids.length === 0 ? "" : tokenizer.decode(ids, { clean_up_tokenization_spaces: false }));
  return { plain, special, decoded };
}

function run_tiktoken([ranks_file, pattern, specials_file, strings_file]) {
  const require = createRequire(path.join(node_modules, "..", "package.json"));
  const { Tiktoken } = require("tiktoken/lite");
  const encoder = new Tiktoken(fs.readFileSync(ranks_file, "utf8"), read_json(specials_file), pattern);
  const strings = read_json(strings_file);
  const plain = strings.map((s) => Array.from(encoder.encode(s, "all")));
  const text_decoder = new TextDecoder();
  const decoded = plain.map((ids) => text_decoder.decode(encoder.decode(Uint32Array.from(ids))));
  encoder.free();
  return { plain, decoded };
}

const result = format === "hf" ? await run_hf(args) : run_tiktoken(args);
process.stdout.write(JSON.stringify(result));
