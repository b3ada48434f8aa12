#!/usr/bin/env bash
# npzfs benchmarks, each side by side with its reference in the same run:
#
#   bash scripts/bench.sh                 # full size (about 20 minutes; data reused)
#   BENCH_SIZE=small bash scripts/bench.sh  # small arrays, for trying the harness
#
# Builds npzfs, the C reader (scripts/bench/rd.c) and the FUSE floor
# (scripts/bench/floor.c, a minimal libfuse daemon), writes the archives with
# numpy into bench-data/SIZE/ (reused while their sidecar .json still matches),
# mounts each in a fresh `npzfs mount -f` daemon per measurement, and prints
# one table: benchmark, npzfs, reference, ratio, target, met. A full-size run
# also rewrites the results section of BENCHMARKS.md (BENCH_WRITE=0 to skip,
# =1 to force for a small run). Nothing fails on a timing: the exit status is
# non-zero only when the harness itself breaks.
#
# Knobs: BENCH_ROUNDS (3) repetitions, medians reported (BENCH_ROUNDS_MMAP, 7,
# for the short numpy memory-map runs; BENCH_ROUNDS_MANY, 2, for the
# 100,000-array workloads); BENCH_TIMEOUT (60)
# seconds for each step of the other mounters (fuse-zip, archivemount);
# BENCH_NUMPY_SAMPLE (2000) keys of the 100,000-array archive that numpy's
# NpzFile reads, drawn at random and timed one by one, once per
# BENCH_ROUNDS_MANY round (each process stops after 25 s): numpy 1.24's
# z[key] scans its list of names, so reading every key is quadratic and is
# estimated from the sample (N/K times the sample's sum) instead of run;
# BENCH_NUMPY_FULL_MAX (15, whole seconds): the full key-by-key loop also runs
# (bounded at three times that) when the sample estimates it at most this;
# BENCH_GOTIME (200ms) for `go test -bench`, BENCH_GO=0 to skip the Go
# benchmarks; BENCH_REMOTE=0 to skip the remote-archive benchmarks
# (scripts/bench/remote.sh: nginx, a proxy, curl, rclone, s3fs, versitygw);
# BENCH_OPEN=0 to skip npzfs.open's (scripts/bench/open.py, which also
# runs alone).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
root=$PWD

size=${BENCH_SIZE:-full}
rounds=${BENCH_ROUNDS:-3}
rounds2=${BENCH_ROUNDS_MMAP:-7}
rounds5=${BENCH_ROUNDS_MANY:-2}
tmo=${BENCH_TIMEOUT:-60}
np_sample=${BENCH_NUMPY_SAMPLE:-2000}
np_full_max=${BENCH_NUMPY_FULL_MAX:-15}
gotime=${BENCH_GOTIME:-200ms}
# Every npzfs step is bounded too, so a hung mount cannot hang the run.
guard=(timeout "${BENCH_GUARD:-300}")
case "$size" in
  full) params='{"stored_bytes":1073741824,"deflated_bytes":268435456,"bigdefl_bytes":1073741824,"many_count":100000,"million_count":1000000,"manydefl_count":20000,"verify_bytes":268435456}'
        write_md=${BENCH_WRITE:-1} ;;
  small) params='{"stored_bytes":67108864,"deflated_bytes":33554432,"bigdefl_bytes":67108864,"many_count":10000,"million_count":100000,"manydefl_count":5000,"verify_bytes":33554432}'
        write_md=${BENCH_WRITE:-0} ;;
  *) die "BENCH_SIZE must be full or small" ;;
esac
py=/usr/bin/python3
data="$root/bench-data/$size"
started=$EPOCHREALTIME

ensure_deps fuse numpy gcc unzip fuse-zip archivemount igzip libdeflate-gunzip libfuse3-dev

work=$(mktemp -d /tmp/npzfs-bench.XXXXXX)
res="$work/results.tsv"
: >"$res"
pids=()

# ---------------------------------------------------------------- helpers

say() { printf '%s [%5.0fs] %s\n' "$(date +%H:%M:%S)" "$(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN{print b-a}')" "$*" >&2; }
rec() { local k=$1; shift; printf '%s\t%s\n' "$k" "$*" >>"$res"; }
# kv "k1=v1 k2=v2" KEY -> value
kv() { local x; for x in $1; do [ "${x%%=*}" = "$2" ] && { printf '%s' "${x#*=}"; return 0; }; done; return 1; }
median() { sort -g | awk '{a[NR]=$1} END{if(NR==0){print "nan"; exit} print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.6f", b-a}'; }

is_mounted() { awk -v m="$1" '$2==m{f=1} END{exit !f}' /proc/mounts; }

unmount_any() { # MNT: unmount whatever FUSE mount is at MNT
  local m=$1 i
  is_mounted "$m" || return 0
  fusermount3 -u "$m" 2>/dev/null || fusermount -u "$m" 2>/dev/null || true
  for i in $(seq 50); do is_mounted "$m" || return 0; sleep 0.1; done
  fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
}

pipe_max_orig=
cleanup() {
  local m p
  trap - EXIT INT TERM
  [ -n "$pipe_max_orig" ] && echo "$pipe_max_orig" >/proc/sys/fs/pipe-max-size 2>/dev/null
  # Every mount under the work directory, deepest first.
  for m in $(awk -v w="$work/" 'index($2, w)==1 {print $2}' /proc/mounts | sort -r); do
    unmount_any "$m"
  done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if awk -v w="$work/" 'index($2, w)==1 {f=1} END{exit !f}' /proc/mounts; then
    echo "bench.sh: could not unmount everything under $work; leaving it" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# DAEMON: pid and kind of the file system process serving the current mount.
DPID= DKIND=
# start_fs KIND ARCHIVE MNT: a fresh foreground daemon of KIND (npzfs,
# fuse-zip, archivemount; floor, whose ARCHIVE is a flat folder) serving
# ARCHIVE at MNT; returns once MNT is live.
# npzfs mounts leave no saved index, and find none (the figures of a
# fresh mount are of inflating from the start), unless a step says.
npzfs_flags=(--no-index)
start_fs() {
  local kind=$1 arch=$2 mnt=$3 i
  mkdir -p "$mnt"
  case "$kind" in
    npzfs) "$npzfs" mount -f "${npzfs_flags[@]}" "$arch" "$mnt" >>"$work/$kind.log" 2>&1 & ;;
    fuse-zip) fuse-zip -f -r "$arch" "$mnt" >>"$work/$kind.log" 2>&1 & ;;
    archivemount) archivemount -f -o readonly "$arch" "$mnt" >>"$work/$kind.log" 2>&1 & ;;
    floor) "$floor" "$arch" "$mnt" >>"$work/$kind.log" 2>&1 & ;;
  esac
  DPID=$! DKIND=$kind
  pids+=("$DPID")
  for i in $(seq 600); do
    if is_mounted "$mnt"; then
      timeout 10 stat "$mnt" >/dev/null 2>&1 && return 0
    fi
    if ! kill -0 "$DPID" 2>/dev/null; then
      wait "$DPID" 2>/dev/null || true
      rec "note.$kind.mount-failed" "$(basename "$arch"): $(tail -n 1 "$work/$kind.log" | cut -c1-200)"
      DPID=
      return 1
    fi
    sleep 0.05
  done
  rec "note.$kind.mount-failed" "$(basename "$arch"): not live after 30 s"
  stop_fs "$mnt"
  return 1
}

# daemon_io FIELD: a field of /proc/DPID/io (rchar, syscr, ...).
daemon_io() { awk -v f="$1:" '$1==f{print $2}' "/proc/$DPID/io" 2>/dev/null || echo 0; }
# daemon_cpu: the daemon's user+system CPU time so far, in clock ticks.
daemon_cpu() { awk '{print $14 + $15}' "/proc/$DPID/stat" 2>/dev/null || echo 0; }
# daemon_cpu_ns: the same in nanoseconds, the sum of its threads'
# schedstat (finer than /proc/PID/stat's ticks, which hold 10 ms each).
daemon_cpu_ns() { cat /proc/"$DPID"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%d", s}'; }
# requests MNT: the npzfs daemon's FUSE requests so far on MNT, by kind
# ("lookup=N ioctl=N ..."), from npzfs status --json.
requests() {
  "$npzfs" status --json "$1" 2>/dev/null | "$py" -c 'import json, sys
d = json.load(sys.stdin)["mounts"][0]["served"].get("requests", {})
print(" ".join("%s=%d" % kv for kv in sorted(d.items())))' || true
}
# per_load BEFORE AFTER N: the requests between two requests calls, per
# load of N: "req_KIND=X.XX ..." for each kind sent.
per_load() {
  "$py" -c 'import sys
a, b = (dict(x.split("=") for x in s.split()) for s in sys.argv[1:3])
n = float(sys.argv[3])
print(" ".join("req_%s=%.2f" % (k, (int(v) - int(a.get(k, 0))) / n) for k, v in sorted(b.items()) if int(v) > int(a.get(k, 0))))' "$1" "$2" "$3"
}
# spent C0 R0 MNT N: what the current daemon spent on N loads since its
# CPU was C0 (daemon_cpu_ns) and, for npzfs, its requests R0 on MNT:
# "cpu_us=X" and "req_KIND=X.XX ...", per load.
spent() {
  printf 'cpu_us=%s' "$(awk -v a="$1" -v b="$(daemon_cpu_ns)" -v n="$4" 'BEGIN{printf "%.1f", (b - a) / 1e3 / n}')"
  [ "$DKIND" = npzfs ] && printf ' %s' "$(per_load "$2" "$(requests "$3")" "$4")"
  echo
}
# loads KEY MNT LIST RD: the C reader making np.load's system calls
# under Python RD ("311" or "314") for LIST's paths (rd npload), on the
# current daemon's mount MNT; recorded as KEY with what the daemon spent
# per load.
loads() {
  local key=$1 m=$2 list=$3 py_rd=$4 c0 r0 out
  r0=""; [ "$DKIND" = npzfs ] && r0=$(requests "$m")
  c0=$(daemon_cpu_ns)
  out=$("${guard[@]}" "$rd" npload "$list" "$py_rd" 2>"$work/err") || { rec "$key.err" "$(head -n 1 "$work/err")"; return 0; }
  rec "$key" "$out $(spent "$c0" "$r0" "$m" "$(kv "$out" files)")"
}
clk_tck=$(getconf CLK_TCK)

# stop_fs MNT [LABEL]: record the daemon's peak RSS as rss.KIND.LABEL (kB),
# unmount, and reap the daemon.
stop_fs() {
  local mnt=$1 label=${2:-} hwm i
  if [ -n "$DPID" ]; then
    hwm=$(awk '/^VmHWM:/{print $2}' "/proc/$DPID/status" 2>/dev/null || true)
    [ -n "$label" ] && [ -n "$hwm" ] && rec "rss.$DKIND.$label" "$hwm"
  fi
  if [ "$DKIND" = npzfs ] && is_mounted "$mnt"; then
    timeout 30 "$npzfs" unmount "$mnt" >>"$work/npzfs.log" 2>&1 || true
  fi
  unmount_any "$mnt"
  if [ -n "$DPID" ]; then
    for i in $(seq 100); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$DPID" 2>/dev/null; then
      echo "bench.sh: $DKIND daemon $DPID still running after unmount; terminating it" >&2
      rec "note.$DKIND.lingering" "$label: daemon still running 10 s after unmount"
      kill "$DPID" 2>/dev/null || true
    fi
    wait "$DPID" 2>/dev/null || true
  fi
  DPID=
}

# run_rd KEY CMD...: run the C reader; on success record its key=value line
# as KEY, on failure record the error (first line of stderr) as KEY.err.
run_rd() {
  local key=$1 out err rc=0; shift
  out=$("$@" 2>"$work/err") || rc=$?
  if [ $rc = 0 ]; then
    rec "$key" "$out"
    printf '%s' "$out"
  else
    err=$(head -n 1 "$work/err" | cut -c1-300)
    [ $rc = 124 ] && [ "$1" = timeout ] && err="timed out after $2 s"
    rec "$key.err" "${err:-exit status $rc}"
    return 1
  fi
}

warm() { cat "$@" >/dev/null; }
# time_mount KEY ARCHIVE: records how long one `npzfs mount` takes in the
# background mode users run (the command returns once the mount is
# live), then unmounts.
time_mount() {
  local t0=$EPOCHREALTIME
  if "${guard[@]}" "$npzfs" mount "$2" "$mnt" >>"$work/npzfs.log" 2>&1; then
    rec "$1" "secs=$(elapsed "$t0" "$EPOCHREALTIME")"
    timeout 30 "$npzfs" unmount "$mnt" >>"$work/npzfs.log" 2>&1 || unmount_any "$mnt"
  else
    rec "$1.err" "npzfs mount failed: $(tail -n 1 "$work/npzfs.log")"
    unmount_any "$mnt"
  fi
}
# member_bytes ARCHIVE: the bytes of its members inflated, in all.
member_bytes() { "$py" -c 'import sys, zipfile; print(sum(i.file_size for i in zipfile.ZipFile(sys.argv[1]).infolist()))' "$1"; }
layout() { "$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["layout"][sys.argv[2]])' "$data/$1.json" "$2"; }

# ------------------------------------------------------------------ build

say "building npzfs and the reader"
npzfs="$work/npzfs"
build_npzfs "$npzfs"
gcc -O2 -Wall -o "$work/rd" scripts/bench/rd.c
rd="$work/rd"
floor="$work/floor"
gcc -O2 -Wall -I/usr/include/fuse3 -o "$floor" scripts/bench/floor.c -lfuse3 -lpthread 2>"$work/err" \
  || { rec note.floor.build "$(head -n 1 "$work/err")"; floor=; }
go build -o "$work/inflatebench" ./internal/cmd/inflatebench
rec meta.commit "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- . 2>/dev/null || echo '+dirty')"
rec meta.date "$(date -u '+%Y-%m-%d %H:%M UTC')"
rec meta.size "$size"
rec meta.rounds "$rounds rounds ($rounds2 for the memory-map runs, $rounds5 for the 100,000-array runs)"
rec meta.cores "$(nproc)"
rec meta.mem "$(awk '/MemTotal/{printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
rec meta.kernel "$(uname -r)"
rec meta.cpu "$(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)"
rec meta.go "$(go version | awk '{print $3}')"
rec meta.numpy "$("$py" -c 'import numpy; print(numpy.__version__)')"
rec meta.fusezip "$(fuse-zip -V 2>&1 | awk '/fuse-zip version/{print $3; exit}')"
rec meta.archivemount "$(archivemount -V 2>&1 | awk '/archivemount version/{print $3; exit}')"
rec meta.load "$(cut -d' ' -f1-3 /proc/loadavg)"

# ------------------------------------------------------------------- data

say "data in $data"
gen_pids=()
for name in stored deflated bigdefl many million manydefl verify; do
  if "$py" scripts/bench/gen.py --check "$data" "$name" "$params"; then
    continue
  fi
  say "writing $name.npz with numpy (one-off; reused by later runs)"
  "$py" scripts/bench/gen.py "$data" "$name" "$params" &
  gen_pids+=($!)
  # Two cores: at most two writers at a time.
  if [ ${#gen_pids[@]} -ge 2 ]; then wait "${gen_pids[0]}" || die "gen.py failed"; gen_pids=("${gen_pids[@]:1}"); fi
done
for p in "${gen_pids[@]}"; do wait "$p" || die "gen.py failed"; done
gen_pids=()
stored="$data/stored.npz" deflated="$data/deflated.npz" bigdefl="$data/bigdefl.npz" many="$data/many.npz"
million="$data/million.npz"
raw_off=$(layout stored raw_offset) raw_size=$(layout stored raw_size)
npy_off=$(layout stored npy_offset) npy_size=$(layout stored npy_size)
rec meta.stored "$(du -h --apparent-size "$stored" | cut -f1) np.savez, one float32 array x of $raw_size bytes"
rec meta.deflated "$(du -h --apparent-size "$deflated" | cut -f1) np.savez_compressed, one float32 array y of $(( $(layout deflated npy_size) - 128 )) bytes (ratio $(awk -v c="$(layout deflated compressed_size)" -v s="$(layout deflated npy_size)" 'BEGIN{printf "%.2f", c/s}'))"
rec meta.bigdefl "$(du -h --apparent-size "$bigdefl" | cut -f1) np.savez_compressed, one float32 array z of $(( $(layout bigdefl npy_size) - 128 )) bytes"
# The member list of the 100,000-array archive, and the bytes they hold.
"$py" - "$many" "$work" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    infos = z.infolist()
with open(sys.argv[2] + "/many.names", "w") as f:
    for i in infos:
        f.write(i.filename + "\n")
with open(sys.argv[2] + "/many.bytes", "w") as f:
    f.write(str(sum(i.file_size for i in infos)))
EOF
many_count=$(wc -l <"$work/many.names")
many_bytes=$(cat "$work/many.bytes")
rec meta.many "$(du -h --apparent-size "$many" | cut -f1) np.savez, $many_count float32 arrays of 4 elements"
million_count=$(layout million members)
rec meta.million "$(du -h --apparent-size "$million" | cut -f1) np.savez, $million_count float32 arrays of 4 elements"
manydefl="$data/manydefl.npz"
manydefl_count=$(layout manydefl members)
rec meta.manydefl "$(du -h --apparent-size "$manydefl" | cut -f1) np.savez_compressed, $manydefl_count float32 arrays of 300 elements"
mnt="$work/mnt"
mkdir -p "$mnt"
list_in() { sed "s|^|$1/|" "$work/many.names" >"$work/many.list.$2"; }

# ---------------------------------------------- 1. stored array, sequential

say "1. stored array: first and second reads through the mount vs the archive file"
warm "$stored"; warm "$stored"
declare -A bsname=([131072]=128k [1048576]=1m [4194304]=4m)
splice_fails() { grep -c 'trySplice' "$work/npzfs.log" 2>/dev/null || true; }
for r in $(seq "$rounds"); do
  for bs in 1048576 131072 4194304; do
    b=${bsname[$bs]}
    # The reference is read just before and just after the mount's two
    # reads, so drift in the machine's load hits both sides alike.
    run_rd "s1.direct.raw.$b" "${guard[@]}" "$rd" seq "$stored" "$raw_off" "$raw_size" "$bs" >/dev/null || true
    if start_fs npzfs "$stored" "$mnt"; then
      if [ "$r" = 1 ] && [ "$bs" = 1048576 ]; then
        bdi=$(mountpoint -d "$mnt")
        rec s1.bdi "$bdi"
        rec s1.read_ahead_kb "$(cat "/sys/class/bdi/$bdi/read_ahead_kb" 2>/dev/null || echo '?')"
        rec s1.max_read "$(awk -v m="$mnt" '$2==m{print $4}' /proc/mounts | tr ',' '\n' | sed -n 's/^max_read=//p')"
        rc0=$(daemon_io rchar); sc0=$(daemon_io syscr); sf0=$(splice_fails); cpu0=$(daemon_cpu)
      fi
      run_rd "s1.first.raw.$b" "${guard[@]}" "$rd" seq "$mnt/x/raw.bin" 0 -1 "$bs" >/dev/null || true
      if [ "$r" = 1 ] && [ "$bs" = 1048576 ]; then
        rec s1.daemon_rchar "$(( $(daemon_io rchar) - rc0 ))"
        rec s1.daemon_syscr "$(( $(daemon_io syscr) - sc0 ))"
        rec s1.splice_fallbacks "$(( $(splice_fails) - sf0 ))"
        rec s1.daemon_cpu "$(awk -v a="$cpu0" -v b="$(daemon_cpu)" -v t="$clk_tck" 'BEGIN{printf "%.3f", (b-a)/t}')"
      fi
      run_rd "s1.second.raw.$b" "${guard[@]}" "$rd" seq "$mnt/x/raw.bin" 0 -1 "$bs" >/dev/null || true
      # The second read also moves every 4 KiB page of the mount's cache to
      # the active LRU list (the archive's pages are active already); the
      # third shows the cached read path without that one-time cost.
      [ "$bs" = 1048576 ] && { run_rd "s1.third.raw.$b" "${guard[@]}" "$rd" seq "$mnt/x/raw.bin" 0 -1 "$bs" >/dev/null || true; }
      stop_fs "$mnt" stored-seq
    else
      rec "s1.first.raw.$b.err" "mount failed: $(tail -n 1 "$work/npzfs.log")"
    fi
    run_rd "s1.direct.raw.$b" "${guard[@]}" "$rd" seq "$stored" "$raw_off" "$raw_size" "$bs" >/dev/null || true
  done
  # KEY.npy, the member itself, at 1 MiB.
  run_rd s1.direct.npy.1m "${guard[@]}" "$rd" seq "$stored" "$npy_off" "$npy_size" 1048576 >/dev/null || true
  if start_fs npzfs "$stored" "$mnt"; then
    run_rd s1.first.npy.1m "${guard[@]}" "$rd" seq "$mnt/x.npy" 0 -1 1048576 >/dev/null || true
    run_rd s1.second.npy.1m "${guard[@]}" "$rd" seq "$mnt/x.npy" 0 -1 1048576 >/dev/null || true
    stop_fs "$mnt" stored-seq
  fi
  run_rd s1.direct.npy.1m "${guard[@]}" "$rd" seq "$stored" "$npy_off" "$npy_size" 1048576 >/dev/null || true
  # Splice probe: /proc/sys/fs/pipe-max-size raised to 2 MiB for one mount
  # (go-fuse reads it when the daemon starts and grows its pipes up to it per
  # request; a 1 MiB read reply does not fit a 1 MiB pipe, so splicing falls
  # back to a copy). Restored after that mount, and by cleanup on any exit.
  pipe_max_orig=$(cat /proc/sys/fs/pipe-max-size)
  if [ "$pipe_max_orig" -lt 2097152 ] && echo 2097152 >/proc/sys/fs/pipe-max-size 2>/dev/null; then
    if start_fs npzfs "$stored" "$mnt"; then
      rc0=$(daemon_io rchar); sf0=$(splice_fails); cpu0=$(daemon_cpu)
      run_rd s1.first.raw.pipe2m "${guard[@]}" "$rd" seq "$mnt/x/raw.bin" 0 -1 1048576 >/dev/null || true
      rec s1.pipe2m.daemon_cpu "$(awk -v a="$cpu0" -v b="$(daemon_cpu)" -v t="$clk_tck" 'BEGIN{printf "%.3f", (b-a)/t}')"
      rec s1.pipe2m.daemon_rchar "$(( $(daemon_io rchar) - rc0 ))"
      rec s1.pipe2m.splice_fallbacks "$(( $(splice_fails) - sf0 ))"
      stop_fs "$mnt" stored-seq
    fi
    echo "$pipe_max_orig" >/proc/sys/fs/pipe-max-size
  fi
  pipe_max_orig=
done
# Ceiling probes, one fresh mount each, 1 MiB reads of x/raw.bin:
# the fuse bdi's readahead set before the first read ...
for ra in 128 4096; do
  if start_fs npzfs "$stored" "$mnt"; then
    bdi=$(mountpoint -d "$mnt")
    if echo "$ra" >"/sys/class/bdi/$bdi/read_ahead_kb" 2>/dev/null; then
      rec "s1.ra$ra.effective_kb" "$(cat "/sys/class/bdi/$bdi/read_ahead_kb")"
      run_rd "s1.first.raw.ra$ra" "${guard[@]}" "$rd" seq "$mnt/x/raw.bin" 0 -1 1048576 >/dev/null || true
    fi
    stop_fs "$mnt" stored-seq
  fi
done
# Correctness: raw.bin is exactly the array bytes of the archive.
if start_fs npzfs "$stored" "$mnt"; then
  if "${guard[@]}" cmp -s <(dd if="$stored" bs=1M iflag=skip_bytes,count_bytes skip="$raw_off" count="$raw_size" status=none) "$mnt/x/raw.bin"; then
    rec check.stored ok
  else
    rec check.stored "MISMATCH: x/raw.bin differs from bytes $raw_off..$((raw_off + raw_size)) of the archive"
  fi
  stop_fs "$mnt" stored-seq
fi

# ---------------------------------------------------- 2. numpy memory map

say "2. np.load(mmap_mode='r') through the mount vs np.load(npz)[key]"
# numpy's own floor: the same call on a local file with x.npy's header and a
# sparse body of the same size.
local_npy="$work/local-x.npy"
dd if="$stored" of="$local_npy" bs=4096 iflag=skip_bytes,count_bytes skip="$npy_off" count="$((raw_off - npy_off))" status=none
truncate -s "$npy_size" "$local_npy"
for r in $(seq "$rounds2"); do
  out=$("$py" scripts/bench/npbench.py mmap "$local_npy" 2>"$work/err") && rec s2.local "$out" \
    || rec s2.local.err "$(head -n 1 "$work/err")"
  if start_fs npzfs "$stored" "$mnt"; then
    out=$("${guard[@]}" "$py" scripts/bench/npbench.py mmap "$mnt/x.npy" 2>"$work/err") && rec s2.mmap "$out" \
      || rec s2.mmap.err "$(head -n 1 "$work/err")"
    stop_fs "$mnt" mmap
  fi
  out=$("$py" scripts/bench/npbench.py npz "$stored" x 2>"$work/err") && rec s2.npz "$out" \
    || rec s2.npz.err "$(head -n 1 "$work/err")"
done

# ------------------------------------------------ 3. deflated, sequential

say "3. deflated array read in full: mount vs unzip -p vs numpy"
warm "$deflated"
for r in $(seq "$rounds"); do
  if start_fs npzfs "$deflated" "$mnt"; then
    cpu0=$(daemon_cpu)
    run_rd s3.first.npy "${guard[@]}" "$rd" seq "$mnt/y.npy" 0 -1 1048576 >/dev/null || true
    rec s3.daemon_cpu "$(awk -v a="$cpu0" -v b="$(daemon_cpu)" -v t="$clk_tck" 'BEGIN{printf "%.3f", (b-a)/t}')"
    run_rd s3.second.npy "${guard[@]}" "$rd" seq "$mnt/y.npy" 0 -1 1048576 >/dev/null || true
    stop_fs "$mnt" deflated-seq
  fi
  t0=$EPOCHREALTIME
  if unzip -p "$deflated" y.npy >/dev/null 2>"$work/err"; then
    rec s3.unzip "secs=$(elapsed "$t0" "$EPOCHREALTIME")"
  else
    rec s3.unzip.err "$(head -n 1 "$work/err")"
  fi
  out=$("$py" scripts/bench/npbench.py npz "$deflated" y 2>"$work/err") && rec s3.numpy "$out" \
    || rec s3.numpy.err "$(head -n 1 "$work/err")"
done
# The same read on a fresh mount with the member's index saved before
# (as after a first mount, or `npzfs index`): spans inflate in parallel.
ix3="$work/index3"
rm -rf "$ix3"
if timeout 120 "$npzfs" index --index-dir "$ix3" "$deflated" >"$work/index3.out" 2>&1; then
  npzfs_flags=(--index-dir "$ix3")
  for r in $(seq "$rounds"); do
    if start_fs npzfs "$deflated" "$mnt"; then
      run_rd s3.indexed.npy "${guard[@]}" "$rd" seq "$mnt/y.npy" 0 -1 1048576 >/dev/null || true
      stop_fs "$mnt" deflated-indexed
    fi
  done
  npzfs_flags=(--no-index)
else
  rec s3.indexed.npy.err "npzfs index: $(head -n 1 "$work/index3.out")"
fi
if start_fs npzfs "$deflated" "$mnt"; then
  if "${guard[@]}" cmp -s <(unzip -p "$deflated" y.npy) "$mnt/y.npy"; then rec check.deflated ok
  else rec check.deflated "MISMATCH: y.npy differs from unzip -p"; fi
  stop_fs "$mnt" deflated-seq
fi

# ---------------------------------------------------- 4. deflated, random

say "4. 4 KiB random reads of the deflated array; RSS serving a 1 GiB deflated member"
for r in $(seq "$rounds"); do
  if start_fs npzfs "$deflated" "$mnt"; then
    run_rd s4.rand "${guard[@]}" "$rd" rand "$mnt/y/raw.bin" 1000 4096 "$((12345 + r))" >/dev/null || true
    stop_fs "$mnt" deflated-rand
  fi
done
warm "$bigdefl"
if start_fs npzfs "$bigdefl" "$mnt"; then
  run_rd s4.big.seq "${guard[@]}" "$rd" seq "$mnt/z.npy" 0 -1 1048576 >/dev/null || true
  run_rd s4.big.rand "${guard[@]}" "$rd" rand "$mnt/z/raw.bin" 1000 4096 777 >/dev/null || true
  stop_fs "$mnt" bigdefl
fi
if start_fs npzfs "$bigdefl" "$mnt"; then
  run_rd s4.big.randfirst "${guard[@]}" "$rd" rand "$mnt/z/raw.bin" 1000 4096 778 >/dev/null || true
  stop_fs "$mnt" bigdefl
fi

# ---------------------------------- 4b. deflated: saved indexes, depths

say "4b. the 1 GiB deflated member: npzfs index, a fresh mount with its index, four first reads at different depths"
# The first pass on one thread and split among two, rounds interleaved.
for r in $(seq "$rounds"); do
  for w in 1 2; do
    rm -rf "$work/index-w"
    t0=$EPOCHREALTIME
    if timeout 600 "$npzfs" index --workers "$w" --index-dir "$work/index-w" "$bigdefl" >"$work/index-w.out" 2>&1; then
      rec "s4b.pass.w$w" "secs=$(elapsed "$t0" "$EPOCHREALTIME") bytes=$(( $(layout bigdefl npy_size) )) split=$(grep -c 'split among' "$work/index-w.out")"
    else
      rec "s4b.pass.w$w.err" "$(head -n 1 "$work/index-w.out")"
    fi
  done
done
rm -rf "$work/index-w"
ix="$work/index"
rm -rf "$ix"
t0=$EPOCHREALTIME
if timeout 600 "$npzfs" index --index-dir "$ix" "$bigdefl" >"$work/index.out" 2>&1; then
  rec s4b.index "secs=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.3f", b-a}') bytes=$(( $(layout bigdefl npy_size) ))"
  rec s4b.size "bytes=$(find "$ix" -name '*.idx' -printf '%s\n' | awk '{s+=$1} END{print s+0}') data=$(layout bigdefl npy_size)"
else
  rec s4b.index.err "$(head -n 1 "$work/index.out")"
fi
npzfs_flags=(--index-dir "$ix")
for r in $(seq "$rounds"); do
  if start_fs npzfs "$bigdefl" "$mnt"; then
    # The first read at a random offset loads the index; the other 999
    # are on a mount whose index is in memory.
    run_rd s4b.rand "${guard[@]}" "$rd" rand "$mnt/z/raw.bin" 1000 4096 "$((4242 + r))" >/dev/null || true
    stop_fs "$mnt" bigdefl-index
  fi
done
npzfs_flags=(--no-index)
zsize=$(( $(layout bigdefl npy_size) - 128 ))
for d in 25 50 75 100; do
  off=$(( zsize / 100 * d - 4096 ))
  for r in $(seq "$rounds"); do
    if start_fs npzfs "$bigdefl" "$mnt"; then
      run_rd "s4b.alone.$d" "${guard[@]}" "$rd" seq "$mnt/z/raw.bin" "$off" 4096 4096 >/dev/null || true
      stop_fs "$mnt"
    fi
  done
done
for r in $(seq "$rounds"); do
  if start_fs npzfs "$bigdefl" "$mnt"; then
    dpids=()
    for d in 25 50 75 100; do
      off=$(( zsize / 100 * d - 4096 ))
      "${guard[@]}" "$rd" seq "$mnt/z/raw.bin" "$off" 4096 4096 >"$work/depth.$d" 2>&1 &
      dpids+=($!)
    done
    for p in "${dpids[@]}"; do wait "$p" || true; done
    for d in 25 50 75 100; do rec "s4b.together.$d" "$(cat "$work/depth.$d")"; done
    stop_fs "$mnt"
  fi
done

# ------------------------- 4d. deflated: what background indexing costs

say "4d. the 1 GiB deflated member: background indexing (mount --index) against none"
# Whether `mount --index` should be the default for such archives: on a
# fresh mount without a saved index, a shallow read (4 KiB at 1%) and a
# deep one (at 90%), once with no background indexing and once with it
# started at mount (the deep read once it is done); how long indexing
# takes and the CPU it burns. The status socket tells when it is done.
export XDG_RUNTIME_DIR="$work/run"
mkdir -p -m 700 "$XDG_RUNTIME_DIR"
shallow=$(( zsize / 100 ))
deep=$(( zsize / 100 * 90 ))
bg_done() { "$npzfs" status --json "$1" 2>/dev/null | "$py" -c 'import json,sys; m=json.load(sys.stdin)["mounts"][0]; b=m.get("background_indexing") or {}; sys.exit(0 if b.get("done") else 1)'; }
for r in $(seq "$rounds"); do
  npzfs_flags=(--no-index)
  if start_fs npzfs "$bigdefl" "$mnt"; then
    run_rd s4d.none.shallow "${guard[@]}" "$rd" seq "$mnt/z/raw.bin" "$shallow" 4096 4096 >/dev/null || true
    run_rd s4d.none.deep "${guard[@]}" "$rd" seq "$mnt/z/raw.bin" "$deep" 4096 4096 >/dev/null || true
    stop_fs "$mnt"
  fi
  rm -rf "$work/index-bg"
  npzfs_flags=(--index --index-dir "$work/index-bg")
  t0=$EPOCHREALTIME
  if start_fs npzfs "$bigdefl" "$mnt"; then
    run_rd s4d.bg.shallow "${guard[@]}" "$rd" seq "$mnt/z/raw.bin" "$shallow" 4096 4096 >/dev/null || true
    for _ in $(seq 1200); do bg_done "$mnt" && break; sleep 0.05; done
    if bg_done "$mnt"; then
      rec s4d.bg.done "secs=$(elapsed "$t0" "$EPOCHREALTIME") cpu=$(awk -v c="$(daemon_cpu)" -v t="$clk_tck" 'BEGIN{printf "%.3f", c/t}')"
      run_rd s4d.bg.deep "${guard[@]}" "$rd" seq "$mnt/z/raw.bin" "$deep" 4096 4096 >/dev/null || true
    else
      rec s4d.bg.done.err "background indexing not done after 60 s"
    fi
    stop_fs "$mnt"
  fi
done
npzfs_flags=(--no-index)
rm -rf "$work/index-bg"

# ------------------------- 4e. deflated: the same member packed (SOZip)

say "4e. the 1 GiB deflated member packed (npzfs pack, SOZip chunks): first read at 90%, whole read"
# The archive npzfs pack makes of bigdefl.npz (chunks of 1 MiB; reused
# while newer than its input). On a fresh mount with an empty index
# folder, as a fresh machine has it: a first 4 KiB read at 90%, beside
# the same read of the archive as numpy wrote it; then the member read
# whole, beside what one core inflates of the same stream (inflatebench)
# times the cores.
packed="$data/bigdefl-packed.npz"
if [ ! -s "$packed" ] || [ "$packed" -ot "$bigdefl" ]; then
  "${guard[@]}" "$npzfs" pack "$bigdefl" "$packed" >"$work/pack.out" 2>&1 || rec s4e.pack.err "$(tail -n 1 "$work/pack.out")"
fi
if [ -s "$packed" ]; then
  warm "$packed"
  for r in $(seq "$rounds"); do
    for kind in packed plain; do
      arch=$packed; [ $kind = plain ] && arch=$bigdefl
      rm -rf "$work/index-4e"
      npzfs_flags=(--index-dir "$work/index-4e")
      if start_fs npzfs "$arch" "$mnt"; then
        run_rd "s4e.$kind.deep" "${guard[@]}" "$rd" seq "$mnt/z/raw.bin" "$deep" 4096 4096 >/dev/null || true
        stop_fs "$mnt"
      fi
    done
    rm -rf "$work/index-4e"
    if start_fs npzfs "$packed" "$mnt"; then
      c0=$(daemon_cpu_ns)
      if out=$(run_rd s4e.packed.seq.raw "${guard[@]}" "$rd" seq "$mnt/z.npy" 0 -1 1048576); then
        rec s4e.packed.seq "$out daemon_cpu=$(awk -v a="$c0" -v b="$(daemon_cpu_ns)" 'BEGIN{printf "%.3f", (b - a) / 1e9}')"
      fi
      stop_fs "$mnt" packed-seq
    fi
    out=$(GOMAXPROCS=1 "${guard[@]}" taskset -c 0 "$work/inflatebench" -runs 3 -member z.npy "$packed" 2>"$work/err") \
      && rec s4e.onecore "$out cores=$(nproc)" || rec s4e.onecore.err "$(head -n 1 "$work/err")"
    # npzfs pack itself, into a fresh OUT each round; and Python's zlib
    # at level 6 (np.savez_compressed's) on one core over the first 64
    # MiB of the same array's bytes, the bar's reference.
    rm -f "$work/pack-t.npz"
    t0=$EPOCHREALTIME
    if "${guard[@]}" "$npzfs" pack "$bigdefl" "$work/pack-t.npz" >"$work/pack.out" 2>&1; then
      rec s4e.pack "secs=$(elapsed "$t0" "$EPOCHREALTIME") in=$(stat -c %s "$bigdefl") out=$(stat -c %s "$work/pack-t.npz") data=$(member_bytes "$bigdefl")"
    else
      rec s4e.pack.err "$(tail -n 1 "$work/pack.out")"
    fi
    rm -f "$work/pack-t.npz"
    out=$("${guard[@]}" taskset -c 0 "$py" -c '
import sys, time, zipfile, zlib
with zipfile.ZipFile(sys.argv[1]) as z, z.open(z.infolist()[0]) as f:
    data = f.read(64 << 20)
c = zlib.compressobj(6, zlib.DEFLATED, -15)
t0 = time.perf_counter()
n = sum(len(c.compress(data[i:i + (1 << 20)])) for i in range(0, len(data), 1 << 20)) + len(c.flush())
print("bytes=%d secs=%.6f" % (len(data), time.perf_counter() - t0))' "$bigdefl" 2>"$work/err") \
      && rec s4e.zlib6 "$out" || rec s4e.zlib6.err "$(tail -n 1 "$work/err")"
  done
  npzfs_flags=(--no-index)
  rm -rf "$work/index-4e"
fi

# ------------------------------------------ 4c. the inflater on one core

say "4c. the inflater on one core beside igzip and libdeflate-gunzip, on numpy-like streams"
# Two streams deflated as np.savez_compressed does (zlib level 6), kept as
# gzip files so the three inflaters read the same bytes: float32 normal
# noise, and an int32 random walk. Each inflater runs on one core over the
# file in the page cache; the best of three runs each round.
case "$size" in full) stream_bytes=268435456 ;; *) stream_bytes=33554432 ;; esac
for kind in noise walk; do
  gz="$data/$kind-$stream_bytes.gz"
  if [ ! -s "$gz" ]; then
    "$py" - "$kind" "$stream_bytes" "$gz.tmp" <<'EOF'
import sys, zlib
import numpy as np
kind, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(4321)
if kind == "noise":
    a = rng.standard_normal(n // 4).astype("<f4")
else:
    a = np.cumsum(rng.integers(-100, 101, n // 4)).astype("<i4")
c = zlib.compressobj(6, zlib.DEFLATED, 31)  # gzip around zlib's level 6, as numpy's zipfile deflates
with open(out, "wb") as f:
    for i in range(0, len(a), 1 << 22):
        f.write(c.compress(a[i:i + (1 << 22)].tobytes()))
    f.write(c.flush())
EOF
    mv "$gz.tmp" "$gz"
  fi
  warm "$gz"
  for r in $(seq "$rounds"); do
    out=$(GOMAXPROCS=1 "${guard[@]}" taskset -c 0 "$work/inflatebench" -runs 3 "$gz" 2>"$work/err") \
      && rec "s4c.npzfs.$kind" "$out compressed=$(stat -c %s "$gz")" || rec "s4c.npzfs.$kind.err" "$(head -n 1 "$work/err")"
    for tool in igzip libdeflate-gunzip; do
      best=""
      for _ in 1 2 3; do
        t0=$EPOCHREALTIME
        if [ "$tool" = igzip ]; then taskset -c 0 igzip -d -c "$gz" >/dev/null; else taskset -c 0 libdeflate-gunzip -c "$gz" >/dev/null; fi
        s=$(elapsed "$t0" "$EPOCHREALTIME")
        best=$(printf '%s\n%s\n' "$best" "$s" | sed '/^$/d' | sort -g | head -n 1)
      done
      rec "s4c.$tool.$kind" "bytes=$stream_bytes secs=$best"
    done
    # The first pass over the same stream, on one thread and split
    # among two, with the size of the index it makes.
    for w in 1 2; do
      out=$("${guard[@]}" "$work/inflatebench" -pass "$w" "$gz" 2>"$work/err") \
        && rec "s4c.pass$w.$kind" "$out" || rec "s4c.pass$w.$kind.err" "$(head -n 1 "$work/err")"
    done
  done
done

# ------------------------------------------------ 5. 100,000 small arrays

say "5. $many_count small arrays: mount, ls, read every member"
warm "$many"
for r in $(seq "$rounds5"); do
  time_mount s5.mount "$many"
  out=$("$py" -c '
import sys, time, numpy as np
t = time.perf_counter(); z = np.load(sys.argv[1]); n = len(z.files)
print("secs=%.6f arrays=%d" % (time.perf_counter() - t, n))' "$many" 2>"$work/err") && rec s5.npopen "$out"
  # ls -f and ls of the root, and ls -f of a mount whose listings carry
  # the files' attributes (--list-attrs: an inode in the kernel for each).
  for how in -f plain -f.la; do
    flags5=("${npzfs_flags[@]}")
    [ "$how" = -f.la ] && npzfs_flags+=(--list-attrs)
    if start_fs npzfs "$many" "$mnt"; then
      t0=$EPOCHREALTIME rc=0
      if [ "$how" != plain ]; then n=$("${guard[@]}" ls -f "$mnt" | wc -l) || rc=$?; else n=$("${guard[@]}" ls "$mnt" | wc -l) || rc=$?; fi
      if [ $rc = 0 ]; then rec "s5.ls$how" "secs=$(elapsed "$t0" "$EPOCHREALTIME") entries=$n"
      else rec "s5.ls$how.err" "ls failed (exit status $rc)"; fi
      stop_fs "$mnt" many-ls
    fi
    npzfs_flags=("${flags5[@]}")
  done
  t0=$EPOCHREALTIME
  n=$(unzip -Z1 "$many" | wc -l)
  rec s5.zipinfo "secs=$(elapsed "$t0" "$EPOCHREALTIME") entries=$n"
  if start_fs npzfs "$many" "$mnt"; then
    list_in "$mnt" npzfs
    run_rd s5.readall "${guard[@]}" "$rd" many "$work/many.list.npzfs" 1048576 >/dev/null || true
    stop_fs "$mnt" many-read
  fi
done
if start_fs npzfs "$many" "$mnt"; then
  list_in "$mnt" npzfs
  out=$("${guard[@]}" "$py" scripts/bench/npbench.py dirall "$work/many.list.npzfs" 2>"$work/err") && rec s5.npdirall "$out" \
    || rec s5.npdirall.err "$(head -n 1 "$work/err")"
  stop_fs "$mnt" many-read
fi
# numpy's own per-file floor: np.load of the first 2,000 members from a
# local folder.
mkdir -p "$work/local-many"
head -n 2000 "$work/many.names" >"$work/many.names.2000"
if (cd "$work/local-many" && unzip -q "$many" $(cat "$work/many.names.2000")); then
  sed "s|^|$work/local-many/|" "$work/many.names.2000" >"$work/many.list.local"
  out=$("$py" scripts/bench/npbench.py dirall "$work/many.list.local" 2>"$work/err") && rec s5.nplocal "$out" \
    || rec s5.nplocal.err "$(head -n 1 "$work/err")"
fi
rm -rf "$work/local-many"
# numpy's reference: NpzFile's z[key] scans a list of names (numpy 1.24), so
# reading every key is quadratic (over 150 s for 100,000 keys). Its total is
# estimated from a seeded uniform random sample of keys, each z[key] timed
# on its own after np.load (timed too) has opened the archive; the full loop
# runs as well only when the estimate says it is short.
say "   numpy NpzFile: z[key] for $np_sample random keys, $rounds5 rounds"
ests=()
for r in $(seq "$rounds5"); do
  rc=0
  out=$(timeout 60 "$py" scripts/bench/npbench.py npzsample "$many" "$np_sample" "$((4240 + r))" 25 2>"$work/err") || rc=$?
  if [ $rc = 0 ]; then
    rec s5.npzsample "$out"
    ests+=("$(kv "$out" est_secs || true)")
  elif [ $rc = 124 ]; then rec s5.npzsample.timeout 60
  else rec s5.npzsample.err "$(head -n 1 "$work/err")"; fi
done
est=$(printf '%s\n' "${ests[@]}" | sed '/^$/d' | median)
if [ "$est" != nan ] && awk -v e="$est" -v m="$np_full_max" 'BEGIN{exit !(e <= m)}'; then
  say "   numpy NpzFile: every key (estimated at $est s; bounded at $((3 * np_full_max)) s)"
  rc=0
  out=$(timeout "$((3 * np_full_max))" "$py" scripts/bench/npbench.py npzall "$many" 2>"$work/err") || rc=$?
  if [ $rc = 0 ]; then rec s5.npzall "$out"
  elif [ $rc = 124 ]; then rec s5.npzall.timeout "$((3 * np_full_max))"
  else rec s5.npzall.err "$(head -n 1 "$work/err")"; fi
else
  rec s5.npzall.skipped "est_secs=$est max_secs=$np_full_max"
fi
rec s5.expect "files=$many_count bytes=$many_bytes"

# ------------------- 5b. many arrays beside a local folder of the same files

say "5b. $many_count small arrays beside a local folder of the same files: ls -l, opening folders, np.load per file"
# The same files in a local folder, in the page cache like the archive:
# the members alone (local-all), and a folder of the same names as the
# mount's root, the members and KEY.ra files and KEY/ folders (local-tree).
rm -rf "$work/local-all" "$work/local-tree"
mkdir -p "$work/local-all"
(cd "$work/local-all" && unzip -q "$many")
ls -f "$work/local-all" >/dev/null
if start_fs npzfs "$many" "$mnt"; then
  "$py" scripts/bench/mirror.py "$mnt" "$work/local-all" "$work/local-tree" 2>"$work/err" \
    || rec s5.lsl.tree.err "$(tail -n 1 "$work/err")"
  stop_fs "$mnt"
fi
# 2,000 keys drawn at random, seeded: the same ones everywhere.
"$py" -c 'import random, sys
names = [l.strip() for l in open(sys.argv[1]) if l.strip()]
random.seed(2222)
print("\n".join(random.sample(names, min(2000, len(names)))))' "$work/many.names" >"$work/many.rand"
sed "s|^|$mnt/|" "$work/many.rand" >"$work/many.rand.mnt"
sed "s|^|$work/local-all/|" "$work/many.rand" >"$work/many.rand.local"
sed "s|^|$work/floor.mnt/|" "$work/many.rand" >"$work/many.rand.floor"
first_key=$(head -n 1 "$work/many.names")
stat_each() { # LIST: stat every path of LIST, as a lookup of each name
  "$py" -c 'import os, sys
for p in open(sys.argv[1]):
    os.stat(p.rstrip("\n"))' "$1"
}
opendirs() { # DIR N: open(O_DIRECTORY) and close DIR N times
  "$py" -c 'import os, sys, time
p, n = sys.argv[1], int(sys.argv[2])
t = time.perf_counter()
for _ in range(n):
    os.close(os.open(p, os.O_RDONLY | os.O_DIRECTORY))
print("secs=%.6f n=%d" % (time.perf_counter() - t, n))' "$1" "$2"
}
for r in $(seq "$rounds5"); do
  # ls -l of the root, fresh mount, and of the local folder, side by side.
  if start_fs npzfs "$many" "$mnt"; then
    t0=$EPOCHREALTIME rc=0
    n=$("${guard[@]}" ls -l "$mnt" | wc -l) || rc=$?
    if [ $rc = 0 ]; then rec s5.lsl "secs=$(elapsed "$t0" "$EPOCHREALTIME") entries=$((n - 1))"
    else rec s5.lsl.err "ls -l failed (exit status $rc)"; fi
    stop_fs "$mnt" many-ls
  fi
  # The same after a plain ls, whose listing the kernel keeps.
  if start_fs npzfs "$many" "$mnt"; then
    ls "$mnt" >/dev/null
    t0=$EPOCHREALTIME rc=0
    n=$("${guard[@]}" ls -l "$mnt" | wc -l) || rc=$?
    if [ $rc = 0 ]; then rec s5.lsl.afterls "secs=$(elapsed "$t0" "$EPOCHREALTIME") entries=$((n - 1))"
    else rec s5.lsl.afterls.err "ls -l failed (exit status $rc)"; fi
    stop_fs "$mnt"
  fi
  t0=$EPOCHREALTIME
  n=$(ls -l "$work/local-all" | wc -l)
  rec s5.lsl.local "secs=$(elapsed "$t0" "$EPOCHREALTIME") entries=$((n - 1))"
  if [ -d "$work/local-tree" ]; then
    t0=$EPOCHREALTIME
    n=$(ls -l "$work/local-tree" | wc -l)
    rec s5.lsl.tree "secs=$(elapsed "$t0" "$EPOCHREALTIME") entries=$((n - 1))"
  fi
  # Opening the root 200 times, and a folder of 2 entries (an array's
  # views folder) as often, on a fresh mount.
  if start_fs npzfs "$many" "$mnt"; then
    out=$(opendirs "$mnt" 200) && rec s5.opendir.root "$out"
    out=$(opendirs "$mnt/${first_key%.npy}" 200) && rec s5.opendir.small "$out"
    stop_fs "$mnt"
  fi
  # np.load of the 2,000 random keys through every mount at once, key by
  # key in turn and then the same file of the local folder, in one
  # process, so that all see the same moments of the machine: npzfs on a
  # fresh mount and after each kind of listing of the root (names alone:
  # os.listdir, ls; every name looked up: ls -l, recorded as "listed"),
  # and after os.listdir and ls of a mount whose listings carry the
  # files' attributes (--list-attrs); the floor (scripts/bench/floor.c, a
  # minimal C daemon serving the local folder the way npzfs serves a
  # small array) fresh and after a stat of each of the 2,000 paths (it
  # lists nothing). Each daemon's CPU and npzfs's FUSE requests per load.
  declare -A d5pid d5kind d5mnt
  hows5=()
  for how in fresh listdir ls listed la.listdir la.ls floor.fresh floor.listed; do
    m5="$work/m5b.$how" ok5=
    flags5=("${npzfs_flags[@]}")
    case $how in la.*) npzfs_flags+=(--list-attrs) ;; esac
    case $how in
      floor.*) [ -n "$floor" ] && start_fs floor "$work/local-all" "$m5" && ok5=1 ;;
      *) start_fs npzfs "$many" "$m5" && ok5=1 ;;
    esac
    npzfs_flags=("${flags5[@]}")
    [ -n "$ok5" ] || continue
    hows5+=("$how")
    d5pid[$how]=$DPID d5kind[$how]=$DKIND d5mnt[$how]=$m5
    case ${how#la.} in
      listdir) "$py" -c 'import os, sys; os.listdir(sys.argv[1])' "$m5" ;;
      ls) ls "$m5" >/dev/null ;;
      listed) ls -l "$m5" >/dev/null ;;
      floor.listed) sed "s|^|$m5/|" "$work/many.rand" >"$work/many.rand.m5" && stat_each "$work/many.rand.m5" ;;
    esac
  done
  declare -A c5 r5
  args5=()
  for how in "${hows5[@]}"; do
    DPID=${d5pid[$how]}
    c5[$how]=$(daemon_cpu_ns)
    [ "${d5kind[$how]}" = npzfs ] && r5[$how]=$(requests "${d5mnt[$how]}")
    args5+=("$how=${d5mnt[$how]}")
  done
  if [ ${#args5[@]} -gt 0 ]; then
    if out=$("${guard[@]}" "$py" scripts/bench/npbench.py dirmany "$work/many.rand" "$work/local-all" "${args5[@]}" 2>"$work/err"); then
      while read -r line; do
        how=$(kv "$line" name)
        DPID=${d5pid[$how]} DKIND=${d5kind[$how]}
        rec "s5.nprand.$how" "${line#name=$how } $(spent "${c5[$how]}" "${r5[$how]:-}" "${d5mnt[$how]}" "$(kv "$line" arrays)")"
      done <<<"$out"
    else
      rec s5.nprand.err "$(head -n 1 "$work/err")"
    fi
  fi
  for how in "${hows5[@]}"; do
    DPID=${d5pid[$how]} DKIND=${d5kind[$how]}
    if [ "$DKIND" = npzfs ]; then stop_fs "${d5mnt[$how]}" many-read; else stop_fs "${d5mnt[$how]}"; fi
  done
  unset d5pid d5kind d5mnt c5 r5
  # np.load's system calls under Python 3.11 (isatty's ioctl) and 3.14
  # (none), from the C reader: npzfs and the floor, fresh and after
  # their listings, and the local folder.
  for pyv in 311 314; do
    for how in fresh listed; do
      if start_fs npzfs "$many" "$mnt"; then
        [ "$how" = listed ] && ls -l "$mnt" >/dev/null
        loads "s5.npc$pyv.$how" "$mnt" "$work/many.rand.mnt" "$pyv"
        stop_fs "$mnt"
      fi
      if [ -n "$floor" ] && start_fs floor "$work/local-all" "$work/floor.mnt"; then
        [ "$how" = listed ] && stat_each "$work/many.rand.floor"
        loads "s5.npc$pyv.floor.$how" "$work/floor.mnt" "$work/many.rand.floor" "$pyv"
        stop_fs "$work/floor.mnt"
      fi
    done
    run_rd "s5.npc$pyv.local" "${guard[@]}" "$rd" npload "$work/many.rand.local" "$pyv" >/dev/null || true
  done
done
rm -rf "$work/local-all" "$work/local-tree"

# --------------------------------------- 5c. a million small arrays

say "5c. $million_count small arrays: mount, ls -l, find"
warm "$million"
for r in $(seq "$rounds5"); do
  time_mount s5m.mount "$million"
done
# Resident memory after ls -l of the root (every name's attributes,
# every array's header read), then find over the whole tree, which also
# lists every views folder. Bounded at 15 minutes each.
if start_fs npzfs "$million" "$mnt"; then
  t0=$EPOCHREALTIME rc=0
  n=$(timeout 900 ls -l "$mnt" | wc -l) || rc=$?
  rss=$(awk '/^VmRSS:/{print $2}' "/proc/$DPID/status" 2>/dev/null || echo 0)
  if [ $rc = 0 ]; then rec s5m.lsl "secs=$(elapsed "$t0" "$EPOCHREALTIME") entries=$((n - 1)) rss_kb=$rss"
  else rec s5m.lsl.err "ls -l failed (exit status $rc)"; fi
  t0=$EPOCHREALTIME rc=0
  n=$(timeout 900 find "$mnt" -name '*.npy' | wc -l) || rc=$?
  if [ $rc = 0 ]; then rec s5m.find "secs=$(elapsed "$t0" "$EPOCHREALTIME") found=$n expected=$million_count"
  else rec s5m.find.err "find failed or timed out (exit status $rc)"; fi
  stop_fs "$mnt" million
fi

# ------------------------------- 5d. many small deflated arrays

say "5d. $manydefl_count small deflated arrays: read every member, with an index folder"
# As step 5's C reader, on np.savez_compressed's archive, with saved
# indexes on as they are by default: a member of a few KB inflates in
# microseconds and has no index to save (none is written).
warm "$manydefl"
unzip -Z1 "$manydefl" | sed "s|^|$mnt/|" >"$work/manydefl.list"
for r in $(seq "$rounds5"); do
  rm -rf "$work/index-5d"
  npzfs_flags=(--index-dir "$work/index-5d")
  if start_fs npzfs "$manydefl" "$mnt"; then
    run_rd s5d.readall "${guard[@]}" "$rd" many "$work/manydefl.list" 1048576 >/dev/null || true
    stop_fs "$mnt" manydefl-read
    rec s5d.indexfiles "files=$(find "$work/index-5d" -name '*.idx' 2>/dev/null | wc -l)"
  fi
  npzfs_flags=(--no-index)
done
rm -rf "$work/index-5d"

# ------------------------------------------------------ 5e. verification

say "5e. verification: stored and deflated 256 MiB members verified before their first byte"
# A fresh mount with an empty index folder verifies a member at its first
# read: the time of reading its first 4 KiB, against reading its bytes
# once from the page cache (stored) and the parallel first pass over its
# stream on every core (deflated, inflatebench -pass on the same bytes
# as a gzip file). A second mount with the same index folder finds the
# saved CRC-32s (or index) and makes no pass. Then the whole stored array
# read with --verify=strict (each read checked) against auto.
verify="$data/verify.npz"
vgz="$data/deflated-member.gz"
if [ ! -s "$vgz" ] || [ "$vgz" -ot "$deflated" ]; then
  "$py" - "$deflated" "$vgz.tmp" <<'EOF'
import struct, sys, zipfile
src, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(src) as z:
    info = z.infolist()[0]
with open(src, "rb") as f, open(out, "wb") as g:
    f.seek(info.header_offset)
    lh = f.read(30)
    f.seek(info.header_offset + 30 + struct.unpack("<H", lh[26:28])[0] + struct.unpack("<H", lh[28:30])[0])
    g.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff")  # a gzip header around the member's deflate stream
    left = info.compress_size
    while left:
        b = f.read(min(left, 1 << 22))
        g.write(b)
        left -= len(b)
    g.write(struct.pack("<II", info.CRC, info.file_size & 0xFFFFFFFF))
EOF
  mv "$vgz.tmp" "$vgz"
fi
# verification MNT: what status says the mount verified.
verification() {
  "$npzfs" status --json "$1" 2>/dev/null | "$py" -c 'import json, sys
v = json.load(sys.stdin)["mounts"][0].get("verification", {})
print("passes=%d saved=%d unverified=%d failing=%d" % (v.get("verified_by_pass", -1), v.get("verified_by_saved_index", -1), v.get("served_unverified", -1), v.get("failing", -1)))' || true
}
# first_4k KEY ARCHIVE FILE: a fresh mount of ARCHIVE (npzfs_flags), the
# time of reading FILE's first 4 KiB, and what it verified.
first_4k() {
  local t0
  if start_fs npzfs "$2" "$mnt"; then
    t0=$EPOCHREALTIME
    if "${guard[@]}" head -c 4096 "$mnt/$3" >/dev/null; then
      rec "$1" "secs=$(elapsed "$t0" "$EPOCHREALTIME") $(verification "$mnt")"
    else
      rec "$1.err" "reading $3 failed"
    fi
    stop_fs "$mnt"
  fi
}
warm "$verify"; warm "$deflated"; warm "$vgz"
v_off=$(layout verify npy_offset) v_size=$(layout verify npy_size)
for r in $(seq "$rounds"); do
  run_rd s5e.stored.direct "${guard[@]}" "$rd" seq "$verify" "$v_off" "$v_size" 1048576 >/dev/null || true
  out=$("${guard[@]}" "$work/inflatebench" -pass "$(nproc)" "$vgz" 2>"$work/err") \
    && rec s5e.defl.pass "$out" || rec s5e.defl.pass.err "$(head -n 1 "$work/err")"
  for kind in stored defl; do
    arch=$verify file=v.npy
    [ "$kind" = defl ] && arch=$deflated file=y.npy
    rm -rf "$work/index-5e"
    npzfs_flags=(--index-dir "$work/index-5e")
    first_4k "s5e.$kind.first" "$arch" "$file"
    first_4k "s5e.$kind.second" "$arch" "$file"
  done
  for mode in auto strict; do
    npzfs_flags=(--no-index "--verify=$mode")
    if start_fs npzfs "$verify" "$mnt"; then
      run_rd "s5e.read.$mode" "${guard[@]}" "$rd" seq "$mnt/v/raw.bin" 0 -1 1048576 >/dev/null || true
      stop_fs "$mnt"
    fi
  done
  npzfs_flags=(--no-index)
done
rm -rf "$work/index-5e"

# ------------------------------------------- 6. the other FUSE mounters

other() { # KIND: the same workloads on another mounter, each step bounded
  local kind=$1 t0 rc out
  say "6. $kind"
  if start_fs "$kind" "$stored" "$mnt"; then
    if run_rd "o.$kind.stored.first" timeout "$tmo" "$rd" seq "$mnt/x.npy" 0 -1 1048576 >/dev/null; then
      run_rd "o.$kind.stored.second" timeout "$tmo" "$rd" seq "$mnt/x.npy" 0 -1 1048576 >/dev/null || true
    fi
    stop_fs "$mnt" stored-seq
  else
    rec "o.$kind.stored.first.err" "mount failed: $(tail -n 1 "$work/$kind.log")"
  fi
  if start_fs "$kind" "$stored" "$mnt"; then
    rc=0
    out=$(timeout "$tmo" "$py" scripts/bench/npbench.py mmap "$mnt/x.npy" 2>"$work/err") || rc=$?
    if [ $rc = 0 ]; then rec "o.$kind.mmap" "$out"
    elif [ $rc = 124 ]; then rec "o.$kind.mmap.err" "timed out after $tmo s"
    else rec "o.$kind.mmap.err" "$(tail -n 1 "$work/err")"; fi
    stop_fs "$mnt" mmap
  fi
  if start_fs "$kind" "$deflated" "$mnt"; then
    run_rd "o.$kind.deflated.first" timeout "$tmo" "$rd" seq "$mnt/y.npy" 0 -1 1048576 >/dev/null || true
    stop_fs "$mnt" deflated-seq
  else
    rec "o.$kind.deflated.first.err" "mount failed: $(tail -n 1 "$work/$kind.log")"
  fi
  if start_fs "$kind" "$deflated" "$mnt"; then
    run_rd "o.$kind.rand" timeout "$tmo" "$rd" rand "$mnt/y.npy" 1000 4096 12346 >/dev/null || true
    stop_fs "$mnt" deflated-rand
  fi
  t0=$EPOCHREALTIME
  rc=0
  case "$kind" in
    fuse-zip) timeout "$tmo" fuse-zip -r "$many" "$mnt" >>"$work/$kind.log" 2>&1 || rc=$? ;;
    archivemount) timeout "$tmo" archivemount -o readonly "$many" "$mnt" >>"$work/$kind.log" 2>&1 || rc=$? ;;
  esac
  if [ $rc = 0 ]; then rec "o.$kind.mount" "secs=$(elapsed "$t0" "$EPOCHREALTIME")"
  elif [ $rc = 124 ]; then rec "o.$kind.mount.err" "timed out after $tmo s"
  else rec "o.$kind.mount.err" "exit status $rc: $(tail -n 1 "$work/$kind.log")"; fi
  unmount_any "$mnt"
  # Background daemons exit on unmount; give them a moment.
  sleep 0.5
  if start_fs "$kind" "$many" "$mnt"; then
    t0=$EPOCHREALTIME
    rc=0
    n=$(timeout "$tmo" ls -f "$mnt" | wc -l) || rc=$?
    if [ $rc = 124 ]; then rec "o.$kind.ls-f.err" "timed out after $tmo s"
    elif [ $rc != 0 ]; then rec "o.$kind.ls-f.err" "ls failed (exit status $rc)"
    else rec "o.$kind.ls-f" "secs=$(elapsed "$t0" "$EPOCHREALTIME") entries=$n"; fi
    stop_fs "$mnt" many-ls
  fi
  if start_fs "$kind" "$many" "$mnt"; then
    list_in "$mnt" "$kind"
    run_rd "o.$kind.readall" timeout "$tmo" "$rd" many "$work/many.list.$kind" 1048576 >/dev/null || true
    stop_fs "$mnt" many-read
  fi
}
other fuse-zip
other archivemount

# -------------------------------------------------- 7. remote archives

if [ "${BENCH_REMOTE:-1}" = 1 ]; then
  say "7. remote archives (scripts/bench/remote.sh)"
  ensure_versitygw
  BENCH_ROUNDS=$rounds BENCH_TIMEOUT=$tmo bash scripts/bench/remote.sh "$data" "$work/remote.tsv" \
    || echo "remote.sh failed (exit $?)" >&2
fi

# ------------------------------------------- 8. npzfs.open (issue 38)

if [ "${BENCH_OPEN:-1}" = 1 ]; then
  say "8. npzfs.open, no FUSE (scripts/bench/open.py)"
  oargs=("$npzfs" "$data" --size "$size" --rounds "$rounds")
  [ "$write_md" = 1 ] && oargs+=(--write "$root/BENCHMARKS.md")
  "$py" scripts/bench/open.py "${oargs[@]}" || echo "open.py failed (exit $?)" >&2
fi

# ------------------------------------------------------ Go benchmarks

if [ "${BENCH_GO:-1}" = 1 ]; then
  say "Go benchmarks (-benchtime $gotime)"
  rc=0
  timeout 600 go test -run '^$' -bench . -benchtime "$gotime" -benchmem ./npy ./npz ./inflate \
    >"$work/gobench.txt" 2>&1 || rc=$?
  rec go.status "$rc"
  rec go.tree "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- npy npz 2>/dev/null || echo ' with uncommitted changes under npy/ or npz/')"
else
  echo "(skipped: BENCH_GO=0)" >"$work/gobench.txt"
fi

# --------------------------------------------------------------- report

say "done; the table"
rec meta.wall "$(elapsed "$started" "$EPOCHREALTIME")"
mkdir -p "$root/bench-data"
cp "$res" "$root/bench-data/results-$size.tsv"
cp "$work/gobench.txt" "$root/bench-data/gobench-$size.txt"
args=("$res" "$work/gobench.txt")
[ "$write_md" = 1 ] && args+=(--write "$root/BENCHMARKS.md")
"$py" scripts/bench/report.py "${args[@]}"
if [ -s "$work/remote.tsv" ]; then
  cp "$work/remote.tsv" "$root/bench-data/remote-$size.tsv"
  rargs=("$work/remote.tsv")
  [ "$write_md" = 1 ] && rargs+=(--write "$root/BENCHMARKS.md")
  "$py" scripts/bench/remote_report.py "${rargs[@]}"
fi
