#!/usr/bin/env bash
# What `computed serve` costs over `computed run`: the same greedy decode of
# the demo model (the smallest per-token time, so the server's share is at
# its largest), alternating run and serve, ROUNDS times, in one run.
#   tests/bench/serve_overhead.sh BUILD_DIR [TOKENS] [ROUNDS]
# For each: decode tok/s as the engine counts it, and the wall time of the
# whole request (process start excluded for serve: it stays up).
set -euo pipefail
build=${1:-build}
tokens=${2:-200}
rounds=${3:-5}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/warp-serve.XXXXXX")
server=""
trap '[[ -n $server ]] && kill $server 2>/dev/null; rm -rf "$work"' EXIT
computed="$build/bin/computed"
"$computed" --log-level warn convert --quiet "$root/tests/demo_model/kjv-moe" "$work/kjv.warp"

"$computed" --log-level warn serve "$work/kjv.warp" --listen 127.0.0.1:0 --context 512 \
  > "$work/serve.out" 2>&1 &
server=$!
for _ in $(seq 100); do grep -q '^listening ' "$work/serve.out" && break; sleep 0.1; done
url="http://$(sed -n 's/^listening //p' "$work/serve.out")"

printf '%-6s %-8s %12s %10s\n' round path "decode tok/s" "wall s"
for round in $(seq "$rounds"); do
  start=$(date +%s.%N)
  out=$("$computed" --log-level warn run "$work/kjv.warp" "In the beginning" -n "$tokens" \
        --ignore-eos 2>&1)
  wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
  rate=$(sed -n 's/.*decode [0-9]* tokens \([0-9.]*\) tok\/s.*/\1/p' <<<"$out")
  printf '%-6s %-8s %12s %10s\n' "$round" run "$rate" "$wall"
  for stream in false true; do
    /usr/bin/python3 - "$url" "$tokens" "$stream" "$round" <<'PY'
import json, sys, time, urllib.request
url, tokens, stream, round_ = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "true", sys.argv[4]
body = {"messages": [{"role": "user", "content": "In the beginning"}], "max_tokens": tokens,
        "temperature": 0, "ignore_eos": True, "stream": stream}
request = urllib.request.Request(url + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
start = time.monotonic()
with urllib.request.urlopen(request) as response:
    text = response.read().decode()
wall = time.monotonic() - start
if stream:
    events = [json.loads(e[6:]) for e in text.split("\n\n") if e.startswith("data: {")]
    figures = [e["warp"] for e in events if "warp" in e][0]
else:
    figures = json.loads(text)["warp"]
print(f"{round_:<6} {'sse' if stream else 'serve':<8} {figures['decode_tokens_per_second']:12.1f} "
      f"{wall:10.3f}")
PY
  done
done
