#!/usr/bin/env python3
"""Times the tokens `computed run --ids` streams on stdin (one id per comma,
flushed as each is sampled) and, with --kill-pid, SIGKILLs a process once
--kill-after tokens have arrived: how long a daemon killed mid-generation
holds the next token up (tests/bench/lan_shaped.sh --kill-after).

Prints one line: tokens, the median gap between tokens, the longest gap
before the kill and the gap from the kill to the next token.
"""
import argparse
import os
import signal
import statistics
import sys
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kill-pid", type=int, default=0)
    parser.add_argument("--kill-after", type=int, default=0, help="tokens before the kill")
    args = parser.parse_args()
    arrivals = []
    killed_at = None
    pending = b""
    while True:
        chunk = os.read(sys.stdin.fileno(), 4096)
        if not chunk:
            break
        now = time.monotonic()
        pending += chunk
        while b"," in pending or b"\n" in pending:
            cut = min(i for i in (pending.find(b","), pending.find(b"\n")) if i >= 0)
            if pending[:cut].strip():
                arrivals.append(now)
            pending = pending[cut + 1:]
        if args.kill_pid and killed_at is None and len(arrivals) >= args.kill_after:
            os.kill(args.kill_pid, signal.SIGKILL)
            killed_at = time.monotonic()
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
    line = f"tokens {len(arrivals)}"
    if gaps:
        line += f", median gap {statistics.median(gaps) * 1000:.0f} ms"
    if killed_at is not None:
        before = [g for a, g in zip(arrivals[1:], gaps) if a <= killed_at]
        after = [a for a in arrivals if a > killed_at]
        line += f", longest gap before the kill {max(before, default=0) * 1000:.0f} ms"
        line += (f", kill to next token {(after[0] - killed_at) * 1000:.0f} ms" if after
                 else ", no token after the kill")
    print(line)


if __name__ == "__main__":
    main()
