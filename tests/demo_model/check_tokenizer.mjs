// Cross-checks the Python BPE tokenizer against the reference JS implementations.
//
//   node tests/demo_model/check_tokenizer.mjs MODEL_DIR CASES.json
//
// CASES.json (written by train.py): {"texts": [...], "ids": [[...]...],
//   "chat": {"messages": [...], "add_generation_prompt": bool, "rendered": "..."}}
// Checks: @huggingface/tokenizers encode(text, {add_special_tokens: true}) == ids and
// decode(ids) == text for every case; @huggingface/jinja renders the chat template
// exactly like Python. Prints "OK ..." and exits 0, or prints the first mismatch and exits 1.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const nm = path.join(root, "tests", "npm", "node_modules");
if (!fs.existsSync(path.join(nm, "@huggingface", "tokenizers"))) {
  console.error(`missing ${nm}/@huggingface/tokenizers: run tests/npm/install.sh`);
  process.exit(1);
}
const { Tokenizer } = await import(path.join(nm, "@huggingface/tokenizers/dist/tokenizers.mjs"));
const { Template } = await import(path.join(nm, "@huggingface/jinja/dist/index.js"));

const [modelDir, casesPath] = process.argv.slice(2);
const tj = JSON.parse(fs.readFileSync(path.join(modelDir, "tokenizer.json"), "utf8"));
const tc = JSON.parse(fs.readFileSync(path.join(modelDir, "tokenizer_config.json"), "utf8"));
const cases = JSON.parse(fs.readFileSync(casesPath, "utf8"));
const tok = new Tokenizer(tj, tc);

let nTokens = 0;
for (let i = 0; i < cases.texts.length; ++i) {
  const text = cases.texts[i];
  const want = cases.ids[i];
  const got = Array.from(tok.encode(text, { add_special_tokens: true }).ids, Number);
  if (JSON.stringify(got) !== JSON.stringify(want)) {
    let k = 0;
    while (k < got.length && got[k] === want[k]) ++k;
    console.error(`case ${i}: ids differ at index ${k}: js=${got.slice(k, k + 8)} py=${want.slice(k, k + 8)}\n` +
                  `text: ${JSON.stringify(text.slice(0, 200))}`);
    process.exit(1);
  }
  const back = tok.decode(want, { skip_special_tokens: false });
  if (back !== text) {
    console.error(`case ${i}: decode differs: ${JSON.stringify(back.slice(0, 200))}`);
    process.exit(1);
  }
  nTokens += want.length;
}
const c = cases.chat;
const rendered = new Template(tc.chat_template).render({
  messages: c.messages, bos_token: tc.bos_token, eos_token: tc.eos_token,
  add_generation_prompt: c.add_generation_prompt,
});
if (rendered !== c.rendered) {
  console.error(`chat template: js=${JSON.stringify(rendered)} py=${JSON.stringify(c.rendered)}`);
  process.exit(1);
}
console.log(`OK ${cases.texts.length} texts, ${nTokens} tokens identical (encode+decode); chat template identical`);
