#!/usr/bin/env bash
# Many machines on one (issue 47, section 5): a client and 1..N storage hosts
# as network namespaces of this machine, each storage host linked to the
# client by a veth pair that `tc tbf` shapes to a LAN's rate (both ways), each
# running one expertd over TLS with a token, serving one shard of one copy of
# the model, with its own memory cgroup and, with --disk-rate, a blkio read
# throttle on the model's disk (so that more hosts means more disk, as on real
# hardware). The embedded store runs under the same disk throttle as the
# baseline. Per run, in each mode (--expert-compute records: the client reads
# the records and computes; daemons: each daemon computes its experts over the
# rows the client sends): prefill and decode tok/s, hits, and the client's
# network bytes both ways (its veth counters) per token computed (the prompt's
# 4 and every sampled one but the last).
#
# --replicate-mib MIB (with 2 or more daemons): instead of --shard I/N over
# one copy, the model is learned (`computed run --learn`, the same prompt and
# seed: the replicas cover exactly the experts the run uses, which flatters
# them) and split with `expertd shard --usage --replicate-mib MIB`, each
# daemon serving its own shard directory. --kill-after K SIGKILLs the first
# daemon once the client has streamed K tokens (tests/bench/token_gaps.py):
# the line then says how long the next token took.
#
#   tests/bench/lan_shaped.sh [--build build] [--size 6G] [--rates "1gbit 10gbit"]
#       [--daemons "1 2"] [--modes "records daemons"] [--tokens 12]
#       [--daemon-budget 1G] [--budget 2G] [--disk-rate 1500M] [--work /tmp/warp-lan]
#       [--daemon-args "--no-prefault"] [--client-args "--stages"] [--skip-embedded 1]
#       [--replicate-mib 8192] [--kill-after 6]
# LAN_VERBOSE=1 prints each run's whole output (its stats line, --stages).
#
# Needs root (namespaces, tc, cgroups) and openssl. The namespaces and their
# addresses (10.77.I.0/24) are the only hosts it uses; it removes them, the
# daemons, the cgroups and the model on exit.
set -euo pipefail

build=build size=6G rates="1gbit 10gbit" daemons="1 2" modes="records daemons" tokens=12
daemon_budget=1G budget=2G disk_rate="" work=/tmp/warp-lan daemon_args="" client_args=""
skip_embedded=0 replicate_mib="" kill_after=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$2 ;;
    --size) size=$2 ;;
    --rates) rates=$2 ;;
    --daemons) daemons=$2 ;;
    --modes) modes=$2 ;;
    --tokens) tokens=$2 ;;
    --daemon-budget) daemon_budget=$2 ;;
    --budget) budget=$2 ;;
    --disk-rate) disk_rate=$2 ;;
    --work) work=$2 ;;
    --daemon-args) daemon_args=$2 ;;
    --client-args) client_args=$2 ;;
    --skip-embedded) skip_embedded=$2 ;;
    --replicate-mib) replicate_mib=$2 ;;
    --kill-after) kill_after=$2 ;;
    *) echo "lan_shaped.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done
here=$(dirname "$(realpath "$0")")
computed=$(realpath "$build/bin/computed")
expertd=$(realpath "$build/bin/expertd")
max_daemons=$(tr ' ' '\n' <<< "$daemons" | sort -n | tail -1)

pids=() blkio=""
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for i in $(seq 1 "$max_daemons"); do ip netns del "warp-s$i" 2>/dev/null || true; done
  ip netns del warp-c 2>/dev/null || true
  [[ -n "$blkio" ]] && rmdir "$blkio"/* "$blkio" 2>/dev/null || true
  rm -rf "$work"
}
# Another run's namespaces or work dir: refuse, before the trap could remove them.
if ip netns list | grep -q '^warp-c\b' || [[ -e "$work" ]]; then
  echo "lan_shaped.sh: another run is in progress (netns warp-c or $work exists)" >&2
  exit 1
fi
trap cleanup EXIT INT TERM
mkdir -p "$work"
model=$work/m.warp

"$computed" synth --quiet --arch deepseek_v3 --preset k2-slice --size "$size" "$model" | tail -1

# One TLS CA, a server certificate per storage host (its address in the SAN), one token.
openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=warp-bench-ca \
  -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
head -c 24 /dev/urandom | base64 > "$work/token"
chmod 600 "$work/token" "$work/ca.key"
for i in $(seq 1 "$max_daemons"); do
  openssl req -newkey rsa:2048 -nodes -subj "/CN=10.77.$i.2" \
    -keyout "$work/s$i.key" -out "$work/s$i.csr" 2>/dev/null
  openssl x509 -req -in "$work/s$i.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" \
    -CAcreateserial -days 30 -extfile <(echo "subjectAltName=IP:10.77.$i.2") \
    -out "$work/s$i.pem" 2>/dev/null
done

# The disk throttle: a blkio cgroup (v1) per process that reads the model.
disk=$(stat -c '%d' "$model/trunk.bin")
device="$(( disk >> 8 )):$(( disk & 0xff ))"
if [[ -n "$disk_rate" ]]; then
  [[ -d /sys/fs/cgroup/blkio ]] || { echo "lan_shaped.sh: no blkio cgroup for --disk-rate" >&2; exit 1; }
  blkio=/sys/fs/cgroup/blkio/warp-lan.$$
  mkdir -p "$blkio"
fi
blkio_group() {  # NAME: a throttled group's path on stdout, or nothing
  [[ -n "$blkio" ]] || return 0
  mkdir -p "$blkio/$1"
  echo "$device $(numfmt --from=iec "$disk_rate")" > "$blkio/$1/blkio.throttle.read_bps_device"
  echo "$blkio/$1"
}
in_group() {  # GROUP CMD...: becomes CMD inside the blkio group (as is when there is none)
  local group=$1; shift
  [[ -z "$group" ]] || echo "$BASHPID" > "$group/cgroup.procs"
  exec "$@"
}

ip netns add warp-c
ip -n warp-c link set lo up
for i in $(seq 1 "$max_daemons"); do
  ip netns add "warp-s$i"
  ip -n "warp-s$i" link set lo up
  ip link add "wc$i" netns warp-c type veth peer name "ws$i" netns "warp-s$i"
  ip -n warp-c addr add "10.77.$i.1/24" dev "wc$i"
  ip -n "warp-s$i" addr add "10.77.$i.2/24" dev "ws$i"
  ip -n warp-c link set "wc$i" up
  ip -n "warp-s$i" link set "ws$i" up
done

shape() {  # RATE: every link, both ways
  for i in $(seq 1 "$max_daemons"); do
    for end in "warp-c wc$i" "warp-s$i ws$i"; do
      read -r ns dev <<< "$end"
      ip netns exec "$ns" tc qdisc replace dev "$dev" root tbf rate "$1" burst 1mb latency 50ms
    done
  done
}

decode_rate() { grep -oE 'decode [0-9]+ tokens? [0-9.]+ tok/s' | grep -oE '[0-9.]+ tok/s' | tail -1; }
prefill_rate() { grep -oE 'prefill [0-9]+ tokens? [0-9.]+ tok/s' | grep -oE '[0-9.]+ tok/s' | tail -1; }
hit_rate() { grep -oE 'experts [0-9]+ hit / [0-9]+ miss [0-9]+%' | tail -1; }
link_bytes() {  # DIRECTION (rx, tx): the client's bytes over every link
  local total=0
  for i in $(seq 1 "$max_daemons"); do
    total=$(( total + $(ip netns exec warp-c cat "/sys/class/net/wc$i/statistics/$1_bytes") ))
  done
  echo "$total"
}
iec() { numfmt --to=iec-i --suffix=B "$1"; }
passes=$(( 4 + tokens - 1 ))  # tokens computed: the prompt's 4, each sampled but the last
run_args=(--log-level warn run --ids "$model" 1,2,3,4 -n "$tokens" --temperature 1 --seed 7
          --budget "$budget" $client_args)

if [[ $skip_embedded == 0 ]]; then
group=$(blkio_group embedded)
out=$(in_group "$group" "$computed" "${run_args[@]}" 2>&1)  # exec'd in the substitution's subshell
[[ -z ${LAN_VERBOSE:-} ]] || echo "$out"
echo "embedded store${disk_rate:+, disk $disk_rate/s}: prefill $(prefill_rate <<< "$out"), decode" \
  "$(decode_rate <<< "$out"), $(hit_rate <<< "$out")"
fi

if [[ -n "$replicate_mib" ]]; then
  "$computed" "${run_args[@]}" --learn > /dev/null 2>&1
  for n in $daemons; do
    [[ $n -gt 1 ]] || continue
    dirs=$(seq 1 "$n" | sed "s|.*|$work/r$n-&|" | paste -sd,)
    "$expertd" shard --quiet "$model" --dirs "$dirs" --usage "$model/usage.warp" \
      --replicate-mib "$replicate_mib" | sed 's/^/expertd shard: /'
  done
fi

start_daemons() {  # N: one expertd per storage host, fresh (a cold cache, as the embedded run's)
  local n=$1 i group serves
  addresses=()
  for i in $(seq 1 "$n"); do
    group=$(blkio_group "s$i")
    serves=(--model "$model")
    [[ $n -gt 1 ]] && serves=(--model "$model" --shard "$(( i - 1 ))/$n")
    [[ $n -gt 1 && -n "$replicate_mib" ]] && serves=(--model "$work/r$n-$i")
    (in_group "$group" ip netns exec "warp-s$i" "$expertd" serve "${serves[@]}" --budget "$daemon_budget" --listen "tcp:10.77.$i.2:7070" \
      --tls-cert "$work/s$i.pem" --tls-key "$work/s$i.key" --token-file "$work/token" \
      $daemon_args > "$work/s$i.log" 2>&1) &
    pids+=($!)
    addresses+=("tls:10.77.$i.2:7070")
  done
  for i in $(seq 1 "$n"); do
    until grep -q '^listening' "$work/s$i.log"; do
      kill -0 "${pids[$(( i - 1 ))]}" 2>/dev/null || {
        echo "lan_shaped.sh: expertd $i stopped:" >&2; cat "$work/s$i.log" >&2; exit 1; }
      sleep 0.2
    done
  done
  # A daemon that has run a while: its cache's memory faulted in by the
  # prefault thread (VmRSS: these daemons have no fast path, so their cache is
  # private memory), its cache still cold. At most 60 s.
  local want=$(( $(numfmt --from=iec "$daemon_budget") / 1024 * 9 / 10 )) waited=0
  for pid in "${pids[@]}"; do
    until (( waited >= 300 )) || (( $(awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo "$want") >= want )); do
      sleep 0.2; waited=$(( waited + 1 ))
    done
  done
}
stop_daemons() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
}
for n in $daemons; do
  for rate in $rates; do
    shape "$rate"
    for mode in $modes; do
      start_daemons "$n"
      stores=$(IFS=,; echo "${addresses[*]}")
      rx=$(link_bytes rx) tx=$(link_bytes tx)
      kill=()
      [[ -n "$kill_after" ]] && kill=(--kill-pid "${pids[0]}" --kill-after "$kill_after")
      gaps=$(ip netns exec warp-c "$computed" "${run_args[@]}" --stores "$stores" \
        --expert-compute "$mode" --tls-ca "$work/ca.pem" --token-file "$work/token" \
        2> "$work/client.err" | python3 "$here/token_gaps.py" "${kill[@]}")
      out=$(cat "$work/client.err")
      rx=$(( $(link_bytes rx) - rx )) tx=$(( $(link_bytes tx) - tx ))
      [[ -z ${LAN_VERBOSE:-} ]] || echo "$out"
      echo "$n daemon(s), $mode, $rate${replicate_mib:+, replicas $replicate_mib MiB}:" \
        "prefill $(prefill_rate <<< "$out"), decode $(decode_rate <<< "$out"), network" \
        "$(iec $(( rx / passes ))) in + $(iec $(( tx / passes ))) out a token computed," \
        "$(hit_rate <<< "$out"); $gaps"
      stop_daemons
    done
  done
done
