#!/usr/bin/python3
"""Renders chat templates with Python Jinja2 set up as transformers'
apply_chat_template sets it up (the renderer WARP must match byte for byte;
issue 16). Debian's python3-jinja2, run with /usr/bin/python3.

  reference_render.py TEMPLATE_FILE CONTEXT_JSON_FILE
      prints the rendering of the template with the context's keys as
      variables to stdout, exactly; on a template error prints it to stderr
      and exits 1.
  reference_render.py --batch CASES_JSON_FILE
      CASES is [{"template": "...", "context": {...}}, ...]; prints a JSON
      array of {"ok": true, "output": "..."} or {"ok": false, "error": "..."}
      (one python start for a whole test suite).

The environment, after transformers' _compile_jinja_template
(transformers/utils/chat_template_utils.py):
  - ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with
    the loopcontrols extension ({% break %}, {% continue %}) and the
    {% generation %} ... {% endgeneration %} block, which renders its body
    unchanged (transformers only records where it starts and ends);
  - the tojson filter replaced by json.dumps with ensure_ascii=False and the
    indent / separators / sort_keys options passed through (no HTML escaping);
  - the globals raise_exception(message), which raises a TemplateError, and
    strftime_now(format), datetime.now().strftime(format).
The context is passed as it comes (WARP's ChatTemplate::MakeContext builds
what apply_chat_template passes: messages, tools, documents,
add_generation_prompt, the special tokens and the template kwargs); JSON
objects keep their key order, as Python dicts do.
"""

import json
import sys
import warnings
from datetime import datetime

try:
    import jinja2
    import jinja2.ext
    import jinja2.nodes
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError as error:
    sys.stderr.write(f"cannot import jinja2: install python3-jinja2 (deploy/install-deps.sh) ({error})\n")
    sys.exit(2)


class GenerationBlock(jinja2.ext.Extension):
    """{% generation %}body{% endgeneration %}: the body, as rendered."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        call = self.call_method("_render_body")
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _render_body(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.now().strftime(format)


def make_environment():
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationBlock, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


warnings.filterwarnings("ignore")  # Python's SyntaxWarnings about compiled templates
ENV = make_environment()
_compiled = {}  # a batch renders the same template many times


def render(source, context):
    if source not in _compiled:
        _compiled[source] = ENV.from_string(source)
    return _compiled[source].render(**context)


def well_formed(text):
    # Lone surrogates (from "\ud800" escapes) become U+FFFD, as writing them
    # out as UTF-8 would.
    return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


def error_text(error):
    return f"{type(error).__name__}: {error}"


def main(args):
    if len(args) == 2 and args[0] == "--batch":
        with open(args[1], encoding="utf-8") as f:
            cases = json.load(f)
        results = []
        for case in cases:
            try:
                results.append({"ok": True, "output": well_formed(render(case["template"], case["context"]))})
            except Exception as error:  # any failure of the template is a failed render
                results.append({"ok": False, "error": well_formed(error_text(error))})
        sys.stdout.buffer.write(json.dumps(results, ensure_ascii=False).encode("utf-8"))
        return 0
    if len(args) == 2:
        with open(args[0], encoding="utf-8", newline="") as f:  # "\r\n" kept
            source = f.read()
        with open(args[1], encoding="utf-8") as f:
            context = json.load(f)
        try:
            output = render(source, context)
        except Exception as error:
            sys.stderr.write(error_text(error) + "\n")
            return 1
        sys.stdout.buffer.write(well_formed(output).encode("utf-8"))
        return 0
    sys.stderr.write("usage: reference_render.py TEMPLATE CONTEXT_JSON | --batch CASES_JSON\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
