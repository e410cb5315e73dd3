// Renders chat templates with @huggingface/jinja (the reference the C++
// renderer must match byte for byte), from tests/npm/node_modules.
//
//   node reference_render.mjs TEMPLATE_FILE CONTEXT_JSON_FILE
//       prints new Template(source).render(context) to stdout, exactly;
//       on a template error prints it to stderr and exits 1.
//   node reference_render.mjs --batch CASES_JSON_FILE
//       CASES is [{"template": "...", "context": {...}}, ...]; prints a JSON
//       array of {"ok": true, "output": "..."} or {"ok": false, "error": "..."}
//       (one node start for a whole test suite).
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const npmDir = process.env.WARP_NPM_DIR ?? join(here, "..", "npm");
const entry = join(npmDir, "node_modules", "@huggingface", "jinja", "dist", "index.js");

let Template;
try {
  ({ Template } = await import(pathToFileURL(entry).href));
} catch (error) {
  process.stderr.write(`cannot load @huggingface/jinja from ${entry}: run tests/npm/install.sh (${error.message})\n`);
  process.exit(2);
}

const parsed = new Map();  // a batch renders the same template many times
function render(source, context) {
  if (!parsed.has(source)) parsed.set(source, new Template(source));
  return parsed.get(source).render(context);
}

const args = process.argv.slice(2);
if (args[0] === "--batch" && args.length === 2) {
  const cases = JSON.parse(readFileSync(args[1], "utf8"));
  const results = cases.map(({ template, context }) => {
    try {
      // Lone surrogates become U+FFFD, as writing them to stdout as UTF-8 would.
      return { ok: true, output: render(template, context).toWellFormed() };
    } catch (error) {
      return { ok: false, error: String(error?.message ?? error) };
    }
  });
  process.stdout.write(JSON.stringify(results));
} else if (args.length === 2) {
  const source = readFileSync(args[0], "utf8");
  const context = JSON.parse(readFileSync(args[1], "utf8"));
  try {
    process.stdout.write(render(source, context));
  } catch (error) {
    process.stderr.write(`${error?.message ?? error}\n`);
    process.exit(1);
  }
} else {
  process.stderr.write("usage: reference_render.mjs TEMPLATE CONTEXT_JSON | --batch CASES_JSON\n");
  process.exit(2);
}
