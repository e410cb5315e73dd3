#!/usr/bin/python3
"""DeepSeek V4.1 Flash, measured (issue 46, part 5): the v41-flash-slice synth preset (the
release's MXFP4 experts of 2304 x 5120, 384 a layer, top-6; two engram tables in the
release's 264-byte row format, cut to the disk) run beyond RAM in a memory cgroup at the
seeds' ratio: the release's config planned for a 16 GB machine (`computed plan --config
... --ram 16G`) gives the fraction of one token's expert working set its cache holds, and
the slice runs with --budget = trunk + KV + the default engram cache + that fraction of its
own working set, in a cgroup of 4/3 the budget (plus any engram cache beyond the default),
sampled at temperature 1, as tests/bench/seed_machines.py runs the other seeds.

Per --engram-cache-mib (256, 1024, 4096): decode tok/s, the experts' and the engram's bytes
read a token, the engram's rows a token and hit rate, and when a pass's engram rows arrived
(from the pass's start, when EngramReader::Begin issues their reads) against when its first
engram layer (layer 1) started; then a 64-token prompt in one chunk, the same timing at
prefill. The bound: fio O_DIRECT random 4 KiB reads on the same engram table (qd 4, the
store's 4 I/O threads, and qd 32), and the experts' as seed_machines.py takes it.

Synthetic tokens at temperature 1 hash to near-uniform rows whose n-grams never repeat: the
hit rate here is a floor, all but compulsory misses whatever the cache size. With
--text-sim, tests/bench/engram_text_sim replays a real text's rows (the release's own
config; a stand-in tokenizer) through LRUs of those sizes.

  v41_engram.py --computed build/bin/computed --work /tmp/v41 \\
      [--text-sim build/bench/engram_text_sim --tokenizer PATH/tokenizer.json TEXT...]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seed_machines as seeds  # noqa: E402  (release_plan, plan_rows, working_set, stats_of, run)
import vs_llamacpp as v  # noqa: E402  (sh, Cgroup, fio_bound, UNITS)

GIB, MIB = 1 << 30, 1 << 20
SLICE = "deepseek_v41/v41-flash-slice"


def decode_section(stderr):
    """The `--stages` lines of the decode phase."""
    at = stderr.find("  decode, ")
    return stderr[at:] if at >= 0 else ""


def prefill_section(stderr):
    at, end = stderr.find("  prefill, "), stderr.find("  decode, ")
    return stderr[at:end if end > at else None] if at >= 0 else ""


def engram_figures(section):
    """(rows a token, hit %, bytes read a token) and (arrive, need, wait) ms of a phase."""
    out = {}
    m = re.search(r"engram +(\d+) rows a token, ([0-9.]+)% in its cache, ([0-9.]+ \w+) read a token",
                  section)
    if m:
        out.update(rows=int(m.group(1)), hit=float(m.group(2)), read=seeds.parse_size(m.group(3)))
    m = re.search(r"engram time +rows in ([0-9.]+) ms from a pass's start; its first engram layer "
                  r"starts at ([0-9.]+) ms, waits ([0-9.]+) ms", section)
    if m:
        out.update(arrive=float(m.group(1)), need=float(m.group(2)), wait=float(m.group(3)))
    m = re.search(r"total +[0-9.]+ s: compute [0-9.]+ s, waiting for reads [0-9.]+%, ([0-9.]+ \w+) "
                  r"read a token", section)
    if m:
        out["expert_read"] = seeds.parse_size(m.group(1))
    return out


def fio_4k(path, depth, seconds=10):
    """fio O_DIRECT random 4 KiB reads: (IOPS, mean latency us)."""
    out = v.sh(["fio", "--name=engram", f"--filename={path}", "--rw=randread", "--bs=4k",
                "--direct=1", "--ioengine=libaio", f"--iodepth={depth}", "--readonly",
                f"--runtime={seconds}", "--time_based", "--output-format=json"])
    job = json.loads(out)["jobs"][0]["read"]
    return job["iops"], job["clat_ns"]["mean"] / 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--computed", required=True)
    ap.add_argument("--config", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                     "..", "configs", "deepseek_v41_flash.config.json"))
    ap.add_argument("--ram", default="16G", help="the release's target machine")
    ap.add_argument("--work", required=True, help="a directory under /tmp")
    ap.add_argument("--gen", type=int, default=24)
    ap.add_argument("--cache-mib", default="256,1024,4096")
    ap.add_argument("--keep", action="store_true", help="keep the synthetic model")
    ap.add_argument("--text-sim", help="build/bench/engram_text_sim")
    ap.add_argument("--tokenizer", help="a tokenizer.json standing in for the release's")
    ap.add_argument("texts", nargs="*", help="real text for --text-sim")
    a = ap.parse_args()

    release = seeds.release_plan(a.computed, a.config, a.ram, "native")
    fraction = release["fraction"]
    print(f"release {os.path.basename(a.config)} on {a.ram}: expert cache "
          f"{release['cache'] / GIB:.2f} GiB, working set {release['working_set'] / GIB:.2f} GiB: "
          f"{fraction:.3f} of a working set")
    for line in release["out"].splitlines():
        if line.startswith("engram"):
            print("  " + line)

    arch, preset = SLICE.split("/")
    os.makedirs(a.work, exist_ok=True)
    model = os.path.join(a.work, preset + ".warp")
    if not os.path.exists(os.path.join(model, "manifest.json")):
        free = shutil.disk_usage(a.work).free
        if free < 62e9:
            sys.exit(f"v41_engram: {a.work} has {free / 1e9:.1f} GB free; the slice needs ~57 GB")
        started = time.monotonic()
        v.sh([a.computed, "synth", "--quiet", "--arch", arch, "--preset", preset, model])
        print(f"synth: {time.monotonic() - started:.0f} s")
    gen, prompt_len = a.gen, 64
    rows = seeds.plan_rows(v.sh([a.computed, "plan", model, "--context", str(prompt_len + gen + 8)]))
    ws, top_k, layers, record = seeds.working_set(rows)
    engram_cache = rows["engram cache"][0]
    fixed = rows["trunk"][0] + rows["kv/state"][0] + engram_cache
    budget = int(fixed + fraction * ws)
    tables = sorted(f for f in os.listdir(model) if f.startswith("engram-L"))
    table_bytes = sum(os.path.getsize(os.path.join(model, f)) for f in tables)
    print(f"slice: {layers} MoE layers, top-{top_k}, records of {record} B; working set "
          f"{ws / GIB:.2f} GiB, banks {rows['banks'][0] / GIB:.1f} GiB, engram tables "
          f"{len(tables)} x {table_bytes / len(tables) / GIB:.2f} GiB; budget {budget / GIB:.2f} GiB "
          f"(trunk + KV + engram cache {fixed / GIB:.2f} GiB + cache {fraction:.3f} x working set)")

    bank = os.path.join(model, sorted(f for f in os.listdir(model) if f.startswith("experts-L"))[0])
    table = os.path.join(model, tables[0])
    cgroup = v.Cgroup(f"warp-v41.{os.getpid()}")
    try:
        expert_fio = seeds.disk_bound(bank, record)
        iops4, lat4 = fio_4k(table, 4)
        iops32, lat32 = fio_4k(table, 32)
        print(f"fio O_DIRECT randread 4 KiB on {os.path.basename(table)}: qd 4 {iops4:.0f} IOPS "
              f"({lat4:.0f} us), qd 32 {iops32:.0f} IOPS ({lat32:.0f} us)")
        prompt = v.prompt(16, 32768)
        print()
        print("| engram cache | decode tok/s | expert hit rate | experts read a token | engram rows "
              "a token | engram hit rate | engram read a token | rows arrive (ms from pass start) | "
              "layer 1 starts (ms) | layer 1 waits (ms) | cgroup peak |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for mib in (int(x) for x in a.cache_mib.split(",")):
            cgroup.limit(budget // 3 * 4 + max(0, mib * MIB - int(engram_cache)))
            err = seeds.run(a.computed, cgroup, model, prompt,
                            ["--ids", "-n", str(gen), "--budget", str(budget), "--prefill-chunk", "1",
                             "--engram-cache-mib", str(mib)])
            s = seeds.stats_of(err)
            e = engram_figures(decode_section(err))
            stats = next((line for line in err.splitlines() if line.startswith("[")), "")
            print(f"<!-- {stats} -->")
            print(f"| {mib} MiB | {s['tok_s']:.2f} | {100 * s['hit_rate']:.1f}% | "
                  f"{e.get('expert_read', 0) / MIB:.0f} MiB | {e.get('rows', '-')} | "
                  f"{e.get('hit', float('nan')):.1f}% | {e.get('read', 0) / 1024:.0f} KiB | "
                  f"{e.get('arrive', float('nan')):.2f} | {e.get('need', float('nan')):.2f} | "
                  f"{e.get('wait', float('nan')):.2f} | {(cgroup.peak() or 0) / GIB:.2f} GiB |")
        # A 64-token prompt in one chunk: 64 x 48 rows at once.
        cgroup.limit(budget // 3 * 4)
        err = seeds.run(a.computed, cgroup, model, v.prompt(prompt_len, 32768),
                        ["--ids", "-n", "1", "--budget", str(budget), "--prefill-chunk",
                         str(prompt_len)])
        e = engram_figures(prefill_section(err))
        stats = next((line for line in err.splitlines() if line.startswith("[")), "")
        print()
        print(f"<!-- {stats} -->")
        print(f"prefill of {prompt_len} in one chunk: {e.get('rows', '-')} rows a token, "
              f"{e.get('hit', float('nan')):.1f}% hits; rows arrive {e.get('arrive', float('nan')):.1f} ms "
              f"from the pass's start, layer 1 starts at {e.get('need', float('nan')):.1f} ms, waits "
              f"{e.get('wait', float('nan')):.1f} ms")
        rows_per_token = e.get("rows", 48)
        print(f"bound: {rows_per_token} records a token at fio qd 4 = "
              f"{1e3 * rows_per_token / iops4:.2f} ms, at qd 32 = {1e3 * rows_per_token / iops32:.2f} ms")
    finally:
        cgroup.remove()
        if not a.keep:
            shutil.rmtree(model, ignore_errors=True)

    if a.text_sim:
        if not a.tokenizer or not a.texts:
            sys.exit("v41_engram: --text-sim needs --tokenizer and TEXT files")
        print()
        print(subprocess.run([a.text_sim, a.tokenizer, a.config, a.cache_mib] + a.texts,
                             check=True, capture_output=True, text=True).stdout)


if __name__ == "__main__":
    main()
