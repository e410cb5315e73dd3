# Sourced by benchmarks: a memory cgroup of our own below the one we run in,
# so that "RAM" is a limit the kernel enforces, not only a flag.
#   cgroup_create LIMIT   (bytes) sets $cgroup, or leaves it empty with a warning
#   cgroup_run CMD...     runs CMD inside it (as is when there is none)
#   cgroup_peak           the peak memory charged to it since the last call
#   cgroup_remove
cgroup=""
cgroup_version=""

cgroup_create() {
  local limit=$1 v1 v2
  v1=$(awk -F: '$2 == "memory" {print $3}' /proc/self/cgroup)
  v2=$(awk -F: '$1 == "0" {print $3}' /proc/self/cgroup)
  if [[ -n "$v1" && -w "/sys/fs/cgroup/memory$v1" ]]; then
    cgroup="/sys/fs/cgroup/memory${v1%/}/warp-bench.$$"
    cgroup_version=1
    mkdir "$cgroup" && echo "$limit" > "$cgroup/memory.limit_in_bytes" && return 0
  elif [[ -f "/sys/fs/cgroup${v2%/}/cgroup.controllers" && -w "/sys/fs/cgroup${v2%/}" ]]; then
    cgroup="/sys/fs/cgroup${v2%/}/warp-bench.$$"
    cgroup_version=2
    mkdir "$cgroup" && echo "$limit" > "$cgroup/memory.max" && return 0
  fi
  echo "warning: cannot create a memory cgroup here; the runs use --budget only" >&2
  cgroup=""
}

cgroup_run() {
  if [[ -z "$cgroup" ]]; then "$@"; return; fi
  bash -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cgroup" "$@"
}

cgroup_peak() {
  [[ -n "$cgroup" ]] || { echo "n/a"; return; }
  local file="$cgroup/memory.peak"
  [[ $cgroup_version == 1 ]] && file="$cgroup/memory.max_usage_in_bytes"
  [[ -f "$file" ]] || { echo "n/a"; return; }
  # Two decimals: numfmt's default rounds up to a whole unit from 10 on (12.01 GiB: "13G").
  numfmt --to=iec-i --suffix=B --format=%.2f < "$file"
  if [[ $cgroup_version == 1 ]]; then echo 0 > "$file"; fi
}

# A cgroup whose limit is the "RAM" of a run with BUDGET (4/3 of it: what the
# old 3/4 rule gave BUDGET; the planner's default is now the limit less its
# margin and read buffers, so runs pass --budget BUDGET); sets budget_bytes.
cgroup_for_budget() {
  budget_bytes=$(numfmt --from=iec "$1")
  cgroup_create $(( budget_bytes / 3 * 4 ))
  [[ -n "$cgroup" ]] && echo "memory cgroup $cgroup: limit $(numfmt --to=iec $(( budget_bytes / 3 * 4 )))"
  return 0
}

cgroup_remove() {
  [[ -n "$cgroup" ]] && rmdir "$cgroup" 2>/dev/null || true
}
