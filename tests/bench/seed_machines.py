#!/usr/bin/python3
"""The seeds' machines (issue 43, section 5): a release's expert shapes run with a cache
that holds the same fraction of one token's working set as the release would get on its
target machine.

The fraction comes from the release's own config.json planned for that machine
(`computed plan --config CONFIG --ram R [--trunk T]`: the default's expert cache over the
working set). A synthetic slice at the release's expert shapes and dtypes (`computed synth
--preset`) runs with --budget = trunk + KV + fraction x its own working set, inside a
memory cgroup of 4/3 that budget, sampled at temperature 1 (greedy decoding of random
weights repeats a token and flatters every cache). Synthetic routing is near uniform: a
trained model's hot experts would raise the hit rate, so these hit rates are a floor.

Per run: decode tok/s, the hit rate, disk bytes a token against what the demand needed
(misses and the records a prediction brought in, x record bytes), the disk's speed while
reads were in flight against fio O_DIRECT random reads on the same bank (the larger of the
record size at qd 4 and WARP's 1 MiB pieces at qd 32), the overlap max(I/O, compute) / wall, and the
decode rate the disk allows at the measured hit rate: fio / (needed bytes a token). Then a
64-token prompt in one chunk (its union read in waves) against the same prompt a token at
a time. Last, the projection to the whole release: tok/s = disk / (its working set x the
measured miss share), at 7 GB/s (a Gen4 NVMe) and at this disk's fio; a disk-bound
ceiling that leaves compute out.

  seed_machines.py --computed build/bin/computed --preset kimi_k3/k3-slice --size 64G \
      --config tests/configs/kimi_k3.config.json --ram 64G --trunk q4 --work /tmp/seeds
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vs_llamacpp as v  # noqa: E402  (sh, Cgroup, fio_bound, the stats-line readers)

GIB = 1 << 30
NVME_GEN4 = 7e9


def parse_size(text):
    m = re.match(r"([0-9.]+) (B|KiB|MiB|GiB|TiB)", text)
    return float(m.group(1)) * v.UNITS[m.group(2)]


def plan_rows(out):
    """{row name: (bytes, detail)} of `computed plan`'s table."""
    rows = {}
    for line in out.splitlines():
        m = re.match(r"(\S+(?: \S+)?)\s{2,}([0-9.]+ (?:B|KiB|MiB|GiB|TiB))\s+(.*)", line)
        if m:
            rows[m.group(1)] = (parse_size(m.group(2)), m.group(3))
    return rows


def working_set(rows):
    """(bytes, top_k, MoE layers, record bytes) of the working-set row."""
    m = re.match(r"(\d+) experts x (\d+) MoE layers x (\d+) B records", rows["working set"][1])
    top_k, layers, record = (int(g) for g in m.groups())
    return top_k * layers * record, top_k, layers, record


def release_plan(computed, config, ram, trunk):
    out = v.sh([computed, "plan", "--config", config, "--ram", ram, "--trunk", trunk])
    rows = plan_rows(out)
    ws = working_set(rows)[0]
    cache = parse_size(re.search(r"expert cache ([0-9.]+ \w+)", rows["default"][1]).group(1))
    return dict(out=out, working_set=ws, cache=cache, fraction=cache / ws)


def stats_of(stderr):
    """The decode and prefill figures of one `computed run --stages`."""
    decode = re.search(r"decode (\d+) tokens ([0-9.]+) tok/s: experts (\d+) hit / (\d+) miss",
                       stderr)
    prefill = re.search(r"prefill (\d+) tokens ([0-9.]+) tok/s: experts (\d+) hit / (\d+) miss"
                        r"[^|]*?read ([0-9.]+ \w+)", stderr)
    waves = re.search(r"waves (\d+) over (\d+) layer passes", stderr)
    out = {}
    if decode:
        segment = stderr[decode.start():].split("|")[0]
        brought = sum(int(n) for n in re.findall(r"(\d+) (?:lookahead|certain) hits", segment))
        hits, misses = int(decode.group(3)), int(decode.group(4))
        out.update(tokens=int(decode.group(1)), tok_s=float(decode.group(2)), hits=hits,
                   misses=misses, brought=brought,
                   hit_rate=hits / max(1, hits + misses + brought))
    if prefill:
        out.update(prefill_tokens=int(prefill.group(1)), prefill_tok_s=float(prefill.group(2)),
                   prefill_read=parse_size(prefill.group(5)))
    if waves:
        out.update(waves=int(waves.group(1)), passes=int(waves.group(2)))
    return out


def fio_pieces(bank, seconds=10):
    """fio O_DIRECT random reads as WARP's io_uring reads a record: 1 MiB pieces, 32 in flight."""
    out = v.sh(["fio", "--name=pieces", f"--filename={bank}", "--rw=randread", "--bs=1M",
                "--direct=1", "--ioengine=libaio", "--iodepth=32", "--readonly",
                f"--runtime={seconds}", "--time_based", "--output-format=json"])
    return json.loads(out)["jobs"][0]["read"]["bw_bytes"]


def disk_bound(bank, record):
    """The larger of fio at the record size (qd 4) and at WARP's pieces: what the disk gives."""
    whole, pieces = v.fio_bound(bank, record), fio_pieces(bank)
    print(f"fio O_DIRECT randread on {os.path.basename(bank)}: {record} B qd 4 {whole / 1e9:.2f} GB/s, "
          f"1 MiB qd 32 {pieces / 1e9:.2f} GB/s")
    return max(whole, pieces)


def run(computed, cgroup, model, prompt, args):
    cmd = [computed, "--log-level", "warn", "run", model, ",".join(map(str, prompt)),
           "--temperature", "1", "--seed", "7", "--stages"] + args
    proc = subprocess.run(["bash", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"',
                           cgroup.path] + cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"seed_machines: {' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    return proc.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--computed", required=True)
    ap.add_argument("--preset", required=True, help="ARCH/PRESET of computed synth")
    ap.add_argument("--size", required=True, help="synth --size, 5x the budget or more")
    ap.add_argument("--config", required=True, help="the release's config.json")
    ap.add_argument("--ram", required=True, help="the target machine, e.g. 64G")
    ap.add_argument("--trunk", default="native")
    ap.add_argument("--fraction", type=float, help="instead of the release plan's")
    ap.add_argument("--synth-trunk", help="the slice's --trunk (default: the preset's)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--gen", type=int, default=24)
    ap.add_argument("--runs", type=int, default=2, help="decode runs; the first warms the VM")
    ap.add_argument("--keep", action="store_true", help="keep the synthetic model")
    a = ap.parse_args()

    release = release_plan(a.computed, a.config, a.ram, a.trunk)
    fraction = a.fraction or release["fraction"]
    print(f"release {a.config} on {a.ram} (--trunk {a.trunk}): expert cache "
          f"{release['cache'] / GIB:.2f} GiB, working set {release['working_set'] / GIB:.2f} GiB: "
          f"{release['fraction']:.3f} of a working set" + (f"; run at {fraction}" if a.fraction else ""))

    arch, preset = a.preset.split("/")
    os.makedirs(a.work, exist_ok=True)
    model = os.path.join(a.work, preset + ".warp")
    if not os.path.exists(os.path.join(model, "manifest.json")):
        v.sh([a.computed, "synth", "--quiet", "--arch", arch, "--preset", preset, "--size", a.size,
              model] + (["--trunk", a.synth_trunk] if a.synth_trunk else []))
    gen, prompt_len = a.gen, 64
    rows = plan_rows(v.sh([a.computed, "plan", model, "--context", str(prompt_len + gen + 8)]))
    ws, top_k, layers, record = working_set(rows)
    fixed = rows["trunk"][0] + rows["kv/state"][0]
    budget = int(fixed + fraction * ws)
    banks = rows["banks"][0]
    print(f"slice {a.preset} {a.size}: {layers} MoE layers, top-{top_k}, records of {record} B; "
          f"working set {ws / GIB:.2f} GiB, banks {banks / GIB:.1f} GiB; budget "
          f"{budget / GIB:.2f} GiB (trunk + KV {fixed / GIB:.2f} GiB + cache {fraction:.3f} x "
          f"working set), banks {banks / budget:.1f}x the budget")
    cgroup = v.Cgroup(f"warp-seeds.{os.getpid()}")
    cgroup.limit(budget // 3 * 4)
    bank = sorted(f for f in os.listdir(model) if f.startswith("experts-L"))[0]
    bank = os.path.join(model, bank)
    try:
        fio_before = disk_bound(bank, record)
        prompt = v.prompt(16, 256)
        results = []
        for i in range(a.runs):
            err = run(a.computed, cgroup, model, prompt,
                      ["-n", str(gen), "--budget", str(budget), "--prefill-chunk", "1"])
            s = stats_of(err)
            s["read_over_needed"] = v.read_over_needed(err, record)
            s["overlap"], busy = v.decode_overlap(err)
            read = v.decode_read_bytes(err)
            s["read_per_token"] = read / s["tokens"] if read else None
            s["in_flight"] = read / busy if read and busy else None
            s["peak"] = cgroup.peak()
            needed = (s["misses"] + s["brought"]) * record / s["tokens"]
            s["needed_per_token"] = needed
            s["disk_tok_s"] = fio_before / needed if needed else None
            results.append(s)
            stats = next((line for line in err.splitlines() if line.startswith("[")), "")
            print(f"run {i + 1}: {stats}")
        fio_after = disk_bound(bank, record)
        print()
        print("| run | decode tok/s | hit rate | read a token / needed | in flight GB/s (x fio) "
              "| overlap | disk allows tok/s | measured / allowed | cgroup peak |")
        print("|---|---|---|---|---|---|---|---|---|")
        fio = (fio_before + fio_after) / 2
        for i, s in enumerate(results):
            allowed = fio / s["needed_per_token"] if s["needed_per_token"] else float("nan")
            print(f"| {i + 1} | {s['tok_s']:.2f} | {100 * s['hit_rate']:.1f}% | "
                  f"{s['read_per_token'] / 2**20:.0f} MiB / {s['needed_per_token'] / 2**20:.0f} MiB "
                  f"= {s['read_over_needed']:.3f} | "
                  f"{(s['in_flight'] or 0) / 1e9:.2f} ({(s['in_flight'] or 0) / fio:.2f}) | "
                  f"{s['overlap']} | {allowed:.2f} | {s['tok_s'] / allowed:.2f} | "
                  f"{(s['peak'] or 0) / GIB:.2f} GiB |")
        # A 64-token prompt: one chunk (its union in waves) against a token at a time.
        long_prompt = v.prompt(prompt_len, 256)
        print()
        print("| prompt of 64 | prefill tok/s | read | waves over layer passes |")
        print("|---|---|---|---|")
        for chunk in (str(prompt_len), "1"):
            err = run(a.computed, cgroup, model, long_prompt,
                      ["-n", "1", "--budget", str(budget), "--prefill-chunk", chunk])
            s = stats_of(err)
            print(f"| chunk {chunk} | {s['prefill_tok_s']:.2f} | {s['prefill_read'] / GIB:.2f} GiB | "
                  f"{s.get('waves', '-')} / {s.get('passes', '-')} |")
        # The whole release, disk-bound, at the last run's miss share.
        last = results[-1]
        miss_share = last["needed_per_token"] / ws
        need = release["working_set"] * miss_share
        print()
        print(f"projection: the release reads {miss_share:.3f} of its "
              f"{release['working_set'] / GIB:.2f} GiB working set a token = {need / GIB:.2f} GiB: "
              f"{NVME_GEN4 / need:.2f} tok/s at 7 GB/s, {fio / need:.2f} tok/s at this disk's "
              f"{fio / 1e9:.2f} GB/s (disk-bound ceilings)")
    finally:
        cgroup.remove()
        if not a.keep:
            shutil.rmtree(model, ignore_errors=True)


if __name__ == "__main__":
    main()
