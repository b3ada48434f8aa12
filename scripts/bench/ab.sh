#!/usr/bin/env bash
# The guard rows of scripts/bench.sh for two commits, interleaved A B A B
# on the same machine, so that a change of structure can show it made
# nothing slower:
#
#   bash scripts/bench/ab.sh OLD [NEW]     # NEW defaults to the work tree
#
# Rows: the inflater on one core (two numpy-like streams), the first pass
# split among 2 threads, a deflated member read in full on a fresh mount,
# the first 4 KiB read of the 1 GiB deflated member on a fresh mount with
# its saved index, and the 100,000-array archive's mount time and daemon
# peak RSS after `ls -l` of its root. Each cell is the median of
# AB_ROUNDS (5) rounds with the range beside it. Uses the full-size data
# of scripts/bench.sh (bench-data/full/; run that once first). Prints a
# Markdown table; nothing fails on a timing.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
root=$PWD
[ $# -ge 1 ] || die "usage: scripts/bench/ab.sh OLD [NEW]"
old=$1 new=${2:-}
rounds=${AB_ROUNDS:-5}
data="$root/bench-data/full"
for f in bigdefl.npz deflated.npz many.npz noise-268435456.gz walk-268435456.gz; do
  [ -s "$data/$f" ] || die "no $data/$f: run scripts/bench.sh once first"
done
py=/usr/bin/python3

work=$(mktemp -d /tmp/npzfs-ab.XXXXXX)
mnt="$work/mnt"
mkdir -p "$mnt"
dpid=
cleanup() {
  if awk -v m="$mnt" '$2==m{f=1} END{exit !f}' /proc/mounts; then
    fusermount3 -u -z "$mnt" 2>/dev/null || true
  fi
  [ -n "$dpid" ] && kill "$dpid" 2>/dev/null || true
  git -C "$root" worktree remove --force "$work/tree-a" 2>/dev/null || true
  [ -d "$work/tree-b" ] && git -C "$root" worktree remove --force "$work/tree-b" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# build SIDE REV: npzfs, the C reader and inflatebench of REV (the work
# tree when REV is empty) into $work/SIDE/.
build() {
  local side=$1 rev=$2 tree=$root
  mkdir -p "$work/$side"
  if [ -n "$rev" ]; then
    tree="$work/tree-$side"
    git -C "$root" worktree add --detach -q "$tree" "$rev"
  fi
  (cd "$tree" && go build -buildvcs=auto -trimpath -o "$work/$side/npzfs" ./cmd/npzfs &&
    go build -o "$work/$side/inflatebench" ./internal/cmd/inflatebench)
  gcc -O2 -o "$work/$side/rd" "$tree/scripts/bench/rd.c"
  echo "$side: $(git -C "$tree" rev-parse --short HEAD)$([ -n "$rev" ] || git -C "$tree" diff --quiet HEAD -- . || echo '+dirty')" >>"$work/sides"
}
echo "building $old and ${new:-the work tree}" >&2
build a "$old"
build b "$new"

rec() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$work/res.tsv"; }
kv() { tr ' ' '\n' <<<"$1" | awk -F= -v k="$2" '$1==k{print $2}'; }
now() { printf '%s' "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.6f", b-a}'; }

# mountfs SIDE ARCHIVE FLAGS...: a foreground daemon of SIDE at $mnt.
mountfs() {
  local side=$1 arch=$2 i; shift 2
  "$work/$side/npzfs" mount -f "$@" "$arch" "$mnt" >>"$work/daemon.log" 2>&1 &
  dpid=$!
  for i in $(seq 600); do
    awk -v m="$mnt" '$2==m{f=1} END{exit !f}' /proc/mounts && stat "$mnt" >/dev/null 2>&1 && return 0
    kill -0 "$dpid" 2>/dev/null || die "$side: mount of $arch failed: $(tail -n 1 "$work/daemon.log")"
    sleep 0.02
  done
  die "$side: mount of $arch not live after 12 s"
}
umountfs() {
  "$work/$1/npzfs" unmount "$mnt" >/dev/null 2>&1 || fusermount3 -u -z "$mnt" 2>/dev/null || true
  wait "$dpid" 2>/dev/null || true
  dpid=
}

row() { # SIDE: one round of every row
  local s=$1 out t0 kind rss
  for kind in noise walk; do
    out=$(GOMAXPROCS=1 taskset -c 0 "$work/$s/inflatebench" -runs 3 "$data/$kind-268435456.gz")
    rec "$s" "inflate.$kind" "$(awk -v b="$(kv "$out" bytes)" -v t="$(kv "$out" secs)" 'BEGIN{printf "%.1f", b/t/1e6}')"
  done
  t0=$(now)
  rm -rf "$work/ix"
  "$work/$s/npzfs" index --workers 2 --index-dir "$work/ix" "$data/bigdefl.npz" >/dev/null 2>&1
  rec "$s" pass2 "$(awk -v t="$(since "$t0")" 'BEGIN{printf "%.1f", 1024/t}')"
  mountfs "$s" "$data/bigdefl.npz" --index-dir "$work/ix"
  out=$("$work/$s/rd" rand "$mnt/z/raw.bin" 1 4096 4243)
  rec "$s" indexed.first "$(kv "$out" first_ms)"
  umountfs "$s"
  mountfs "$s" "$data/deflated.npz" --no-index
  out=$("$work/$s/rd" seq "$mnt/y.npy" 0 -1 1048576)
  rec "$s" deflated.full "$(kv "$out" mbps)"
  umountfs "$s"
  t0=$(now)
  "$work/$s/npzfs" mount --no-index "$data/many.npz" "$mnt" >/dev/null 2>&1
  rec "$s" many.mount "$(since "$t0")"
  dpid=$(pgrep -n -f "$mnt" || true)
  ls -l "$mnt" >/dev/null
  rss=$(awk '/^VmHWM:/{print $2}' "/proc/$dpid/status" 2>/dev/null || echo 0)
  rec "$s" many.rss "$(awk -v k="$rss" 'BEGIN{printf "%.1f", k/1024}')"
  "$work/$s/npzfs" unmount "$mnt" >/dev/null 2>&1 || fusermount3 -u -z "$mnt"
  dpid=
}

for r in $(seq "$rounds"); do
  echo "round $r of $rounds" >&2
  row a
  row b
done

"$py" - "$work/res.tsv" "$work/sides" <<'EOF'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
sides = dict(l.strip().split(": ", 1) for l in open(sys.argv[2]))
names = [
    ("inflate.noise", "inflater on one core, float32 noise (MB/s)"),
    ("inflate.walk", "inflater on one core, int32 random walk (MB/s)"),
    ("pass2", "first pass of the 1 GiB member split among 2 threads (MiB/s)"),
    ("deflated.full", "deflated 256 MiB y.npy read in full, fresh mount (MiB/s)"),
    ("indexed.first", "first 4 KiB read, 1 GiB member, saved index, fresh mount (ms)"),
    ("many.mount", "100,000 arrays: `npzfs mount` returns (s)"),
    ("many.rss", "100,000 arrays: daemon peak RSS after `ls -l` (MiB)"),
]
def cell(side, key):
    v = sorted(float(x[2]) for x in rows if x[0] == side and x[1] == key)
    if not v:
        return "—"
    return "%.4g (%.4g-%.4g)" % (statistics.median(v), v[0], v[-1])
print("| row | %s | %s |" % (sides["a"], sides["b"]))
print("| --- | --- | --- |")
for key, label in names:
    print("| %s | %s | %s |" % (label, cell("a", key), cell("b", key)))
EOF
