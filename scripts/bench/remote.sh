#!/usr/bin/env bash
# Remote archives, side by side in one run (issue 10): nginx serves the
# benchmark archives on 127.0.0.1, behind internal/cmd/faultproxy adding
# 20 ms to every request and capping all bodies at 100 MB/s; requests are
# counted in nginx's access log.
#
#   bash scripts/bench/remote.sh DATA_DIR OUT.tsv     # called by scripts/bench.sh
#
# DATA_DIR holds stored.npz (one float32 array x), bigdefl.npz (one
# deflated float32 array z, 1 GiB at full size), bigdefl-packed.npz (the
# same packed by npzfs pack) and many.npz (100,000 arrays), with their
# gen.py sidecars. Each measurement mounts afresh. The alternatives a
# user has: curl the archive then np.load(npz)[key]; rclone mount of the
# HTTP remote; s3fs on versitygw (uploaded with curl's SigV4), behind a
# proxy with the same latency and cap. A figure that cannot be had is
# recorded with why. Nothing fails on a timing.
#
# Then a remote folder (issue 23), on versitygw behind the same proxy
# (its requests counted by the proxy, GET .faultproxy/stats): a prefix of
# 1,000 shards mounted and listed; one array from each of 100 of them read
# by 8 threads, beside 100 mounts of one shard each made beforehand; a
# fresh machine's first 4 KiB read at 90% of the deflated member with the
# sidecar another machine put beside it, beside the same read of the
# stored member; rclone and s3fs mounts of the same prefix.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
data=$1 out=$2
rounds=${BENCH_ROUNDS:-3}
tmo=${BENCH_TIMEOUT:-60}
latency=${BENCH_REMOTE_LATENCY:-20ms}
rate=${BENCH_REMOTE_RATE:-100000000}
py=/usr/bin/python3
ensure_deps fuse numpy gcc nginx curl rclone s3fs
work=$(mktemp -d /tmp/npzfs-remote.XXXXXX)
rec() { local k=$1; shift; printf '%s\t%s\n' "$k" "$*" >>"$out"; }
say() { printf '%s remote: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
median() { sort -g | awk '{a[NR]=$1} END{if(NR==0){print "nan"; exit} print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.6f", b-a}'; }
layout() { "$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["layout"][sys.argv[2]])' "$data/$1.json" "$2"; }
freeport() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
is_mounted() { awk -v m="$1" '$2==m{f=1} END{exit !f}' /proc/mounts; }

bgpids=()
mnt="$work/mnt"
mkdir -p "$mnt"
cleanup() {
  for m in "$mnt" "$work/mnt2" "$work"/single/*; do
    is_mounted "$m" && { fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; }
  done
  for p in "${bgpids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

say "building npzfs and the proxy"
npzfs="$work/npzfs"
build_npzfs "$npzfs"
go build -o "$work/faultproxy" ./internal/cmd/faultproxy
gcc -O2 -Wall -o "$work/rd" scripts/bench/rd.c
rd="$work/rd"

# nginx on the data folder.
ngport=$(freeport)
mkdir -p "$work/ng"
user=""; [ "$(id -u)" = 0 ] && user="user root;"
cat >"$work/ng/nginx.conf" <<EOF
$user
daemon off;
master_process off;
pid $work/ng/nginx.pid;
error_log $work/ng/error.log;
events { worker_connections 1024; }
http {
  log_format npzfs '\$request_method \$uri \$status "\$http_range" \$body_bytes_sent';
  access_log $work/ng/access.log npzfs;
  client_body_temp_path $work/ng/body; proxy_temp_path $work/ng/proxy;
  fastcgi_temp_path $work/ng/fcgi; uwsgi_temp_path $work/ng/uwsgi; scgi_temp_path $work/ng/scgi;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:$ngport; root $data; autoindex on; }
}
EOF
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
"$nginx_bin" -c "$work/ng/nginx.conf" -p "$work/ng" -e "$work/ng/error.log" &
bgpids+=($!)
"$work/faultproxy" -upstream "http://127.0.0.1:$ngport" -latency "$latency" -rate "$rate" >"$work/proxy.url" &
bgpids+=($!)
for _ in $(seq 100); do [ -s "$work/proxy.url" ] && curl -s -o /dev/null "http://127.0.0.1:$ngport/" && break; sleep 0.1; done
P=$(cat "$work/proxy.url")
requests() { wc -l <"$work/ng/access.log"; }
rec r.setup "latency=$latency rate_bytes_per_sec=$rate server=nginx-$("$nginx_bin" -v 2>&1 | sed 's|.*/||')"

mountr() { # URL: mount in the background (npzfs's default), log in $work
  timeout 120 "$npzfs" mount --log "$work/npzfs.log" "$1" "$mnt"
}
umountr() { timeout 60 "$npzfs" unmount "$mnt" >/dev/null 2>&1 || fusermount3 -u -z "$mnt" 2>/dev/null || true; sleep 0.2; }

raw_off=$(layout stored raw_offset) raw_size=$(layout stored raw_size)

say "1. mount of the 100,000-array archive"
# At least 5 rounds: each is under a second, and a first touch of fresh
# memory on this machine is slow at times (BENCHMARKS.md).
for r in $(seq "$(( rounds > 5 ? rounds : 5 ))"); do
  n0=$(requests); t0=$EPOCHREALTIME
  if mountr "$P/many.npz" 2>"$work/err"; then
    t1=$EPOCHREALTIME; n1=$(requests)
    entries=$(ls -f "$mnt" | wc -l)
    rec r.mount "secs=$(elapsed "$t0" "$t1") requests=$((n1 - n0)) entries=$entries"
    umountr
  else
    rec r.mount.err "$(head -n 1 "$work/err")"
  fi
done

say "2. np.load(x.npy, mmap_mode='r') and one element"
for r in $(seq "$rounds"); do
  n0=$(requests)
  if mountr "$P/stored.npz" 2>"$work/err"; then
    n1=$(requests)
    o=$(timeout "$tmo" "$py" scripts/bench/npbench.py mmap "$mnt/x.npy" 2>"$work/err") \
      && rec r.mmap "$o requests=$(( $(requests) - n1 )) mount_requests=$((n1 - n0))" \
      || rec r.mmap.err "$(tail -n 1 "$work/err")"
    umountr
  else
    rec r.mmap.err "$(head -n 1 "$work/err")"
  fi
done

say "3. the stored array read whole, and curl fetching the same range"
for r in $(seq "$rounds"); do
  if mountr "$P/stored.npz" 2>"$work/err"; then
    n1=$(requests)
    o=$(timeout 300 "$rd" seq "$mnt/x/raw.bin" 0 -1 1048576 2>"$work/err") \
      && rec r.seq "$o requests=$(( $(requests) - n1 ))" || rec r.seq.err "$(tail -n 1 "$work/err")"
    umountr
  fi
  o=$(curl -s -o /dev/null -r "$raw_off-$((raw_off + raw_size - 1))" -w 'bytes=%{size_download} secs=%{time_total}' "$P/stored.npz") \
    && rec r.curl "$o mbps=$(awk -v s="$o" 'BEGIN{split(s,a,/[ =]/); printf "%.1f", a[2]/a[4]/1048576}')" \
    || rec r.curl.err "curl failed"
done

say "4. 4 KiB reads at 1,000 random offsets of the stored array"
for r in $(seq "$rounds"); do
  if mountr "$P/stored.npz" 2>"$work/err"; then
    n1=$(requests)
    o=$(timeout 300 "$rd" rand "$mnt/x/raw.bin" 1000 4096 "$((777 + r))" 2>"$work/err") \
      && rec r.rand "$o requests=$(( $(requests) - n1 ))" || rec r.rand.err "$(tail -n 1 "$work/err")"
    umountr
  fi
done

say "4b. first 4 KiB at 90% of the 1 GiB deflated member, packed (SOZip) and as numpy wrote it"
# A fresh mount with an empty index folder (a fresh machine): the
# requests the mount makes (its tail, and for a member over 256 MiB the
# look for its index: the packed one's SOZip index, the other's sidecar),
# then those the stat of raw.bin and the read make. The packed archive
# is scripts/bench.sh's (npzfs pack of bigdefl.npz).
if [ -s "$data/bigdefl-packed.npz" ]; then
  for r in $(seq "$rounds"); do
    for kind in packed plain; do
      name=bigdefl-packed.npz; [ $kind = plain ] && name=bigdefl.npz
      rm -rf "$work/idx-deep"
      n0=$(requests)
      if timeout 120 "$npzfs" mount --log "$work/npzfs.log" --index-dir "$work/idx-deep" "$P/$name" "$mnt" 2>"$work/err"; then
        n1=$(requests)
        size=$(stat -c %s "$mnt/z/raw.bin")
        off=$(( size / 10 * 9 / 4096 * 4096 ))
        o=$(timeout 600 "$py" scripts/bench/npbench.py pread "$mnt/z/raw.bin" "$off" 4096 2>"$work/err") \
          && rec "r.deep90.$kind" "$o requests=$(( $(requests) - n1 )) mount_requests=$((n1 - n0))" \
          || rec "r.deep90.$kind.err" "$(tail -n 1 "$work/err")"
        umountr
      else
        rec "r.deep90.$kind.err" "$(head -n 1 "$work/err")"
      fi
    done
  done
  rm -rf "$work/idx-deep"
else
  rec r.deep90.packed.err "no packed archive in $data (scripts/bench.sh makes it)"
fi

say "5. what a user would do instead: curl then np.load(npz)[x]"
for r in $(seq "$rounds"); do
  t0=$EPOCHREALTIME
  if curl -s -o "$work/dl.npz" "$P/stored.npz"; then
    o=$(timeout "$tmo" "$py" scripts/bench/npbench.py npz "$work/dl.npz" x 2>"$work/err") \
      && rec r.alt.curl "total_secs=$(elapsed "$t0" "$EPOCHREALTIME") $o" || rec r.alt.curl.err "$(tail -n 1 "$work/err")"
  else
    rec r.alt.curl.err "curl failed"
  fi
  rm -f "$work/dl.npz"
done

say "5b. rclone mount of the HTTP remote, then np.load(npz)[x]"
if command -v rclone >/dev/null; then
  mkdir -p "$work/mnt2"
  rc=0
  timeout 30 rclone mount --read-only --daemon --http-url "$P" :http: "$work/mnt2" >"$work/rclone.log" 2>&1 || rc=$?
  if [ $rc = 0 ] && is_mounted "$work/mnt2"; then
    t0=$EPOCHREALTIME
    o=$(timeout "$tmo" "$py" scripts/bench/npbench.py npz "$work/mnt2/stored.npz" x 2>"$work/err") \
      && rec r.alt.rclone "total_secs=$(elapsed "$t0" "$EPOCHREALTIME") $o requests_so_far=$(requests)" \
      || rec r.alt.rclone.err "$(tail -n 1 "$work/err" | cut -c1-200)"
    fusermount3 -u "$work/mnt2" 2>/dev/null || fusermount3 -u -z "$work/mnt2" 2>/dev/null || true
  else
    rec r.alt.rclone.err "rclone mount failed (exit $rc): $(tail -n 1 "$work/rclone.log" | cut -c1-200)"
  fi
else
  rec r.alt.rclone.err "rclone not installed (Debian: apt-get install rclone)"
fi

# versitygw on $work/s3data, once, behind a proxy like nginx's: S3 is
# its own URL, S3P the proxy's; s3put KEY FILE uploads to bucket "bench"
# with curl's SigV4 (a PUT, so the object has an ETag).
S3= S3P=
s3sig=(--aws-sigv4 "aws:amz:us-east-1:s3" --user "benchkey:benchsecret0123456789" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD")
start_s3() {
  [ -n "$S3" ] && return 0
  command -v curl >/dev/null && [ -n "${NPZFS_VERSITYGW:-}" ] && [ -x "$NPZFS_VERSITYGW" ] || return 1
  local port; port=$(freeport)
  mkdir -p "$work/s3data"
  "$NPZFS_VERSITYGW" --access benchkey --secret benchsecret0123456789 --port "127.0.0.1:$port" --quiet posix "$work/s3data" >"$work/vgw.log" 2>&1 &
  bgpids+=($!)
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
  S3="http://127.0.0.1:$port"
  curl -s -f "${s3sig[@]}" -X PUT "$S3/bench" >/dev/null || return 1
  "$work/faultproxy" -upstream "$S3" -latency "$latency" -rate "$rate" >"$work/proxy3.url" &
  bgpids+=($!)
  for _ in $(seq 50); do [ -s "$work/proxy3.url" ] && break; sleep 0.1; done
  S3P=$(cat "$work/proxy3.url")
  export AWS_ACCESS_KEY_ID=benchkey AWS_SECRET_ACCESS_KEY=benchsecret0123456789 AWS_REGION=us-east-1
}
s3put() { curl -s -f "${s3sig[@]}" -T "$2" "$S3/bench/$1" >/dev/null; }
# s3req: the proxy's counts, as "requests bytes".
s3req() { curl -s "$S3P/.faultproxy/stats" | sed 's/[a-z]*=//g'; }

say "5c. s3fs on versitygw, then np.load(npz)[x]"
if command -v s3fs >/dev/null && start_s3; then
  mkdir -p "$work/mnt2"
  s3put stored.npz "$data/stored.npz" || rec r.alt.s3fs.err "upload to versitygw failed"
  printf 'benchkey:benchsecret0123456789\n' >"$work/passwd"; chmod 600 "$work/passwd"
  rc=0
  timeout 30 s3fs bench "$work/mnt2" -o "url=$S3P,use_path_request_style,passwd_file=$work/passwd,ro" >"$work/s3fs.log" 2>&1 || rc=$?
  if [ $rc = 0 ] && is_mounted "$work/mnt2"; then
    t0=$EPOCHREALTIME
    o=$(timeout "$tmo" "$py" scripts/bench/npbench.py npz "$work/mnt2/stored.npz" x 2>"$work/err") \
      && rec r.alt.s3fs "total_secs=$(elapsed "$t0" "$EPOCHREALTIME") $o" \
      || rec r.alt.s3fs.err "$(tail -n 1 "$work/err" | cut -c1-200)"
    fusermount -u "$work/mnt2" 2>/dev/null || fusermount3 -u -z "$work/mnt2" 2>/dev/null || umount -l "$work/mnt2" 2>/dev/null || true
  else
    rec r.alt.s3fs.err "s3fs mount failed (exit $rc): $(tail -n 1 "$work/s3fs.log" | cut -c1-200)"
  fi
else
  rec r.alt.s3fs.err "s3fs or versitygw missing (Debian: apt-get install s3fs; NPZFS_VERSITYGW)"
fi

if ! start_s3; then
  rec p.err "versitygw missing (NPZFS_VERSITYGW): no remote folder figures"
  say "done"
  exit 0
fi
rec p.setup "latency=$latency rate_bytes_per_sec=$rate server=versitygw"
shards=${BENCH_SHARDS:-1000}
say "6. a prefix of $shards shards: mount, and ls of its root"
# Every tenth shard, the 100 read below, holds a 1 MiB array x and after
# it 4.5 MiB of y, so that a mount of that shard alone, which fetches its
# last 4 MiB at mount, fetches x when it is read, as the prefix's mount
# does; the others hold 64 KiB of x.
mkdir -p "$work/shards"
"$py" -c 'import numpy as np, sys
d, n = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(23)
for i in range(n):
    big = i % (n // 100 or 1) == 0
    x = rng.standard_normal(262144 if big else 16384, dtype=np.float32)
    np.savez("%s/shard%04d.npz" % (d, i), x=x, y=np.zeros(589824 if big else 2048))
' "$work/shards" "$shards"
ls "$work/shards" | xargs -P 8 -I{} curl -s -f "${s3sig[@]}" -T "$work/shards/{}" "$S3/bench/ds/{}" -o /dev/null \
  || rec p.err "uploading the shards failed"
rec p.shards "count=$shards bytes_read=$(stat -c %s "$work/shards/shard0000.npz") bytes_other=$(stat -c %s "$work/shards/shard0001.npz") array=x float32[262144]"
mountp() { # URL MOUNTPOINT [FLAGS]: an npzfs mount of the bench bucket through the proxy
  local u=$1 m=$2; shift 2
  timeout 120 "$npzfs" mount --log "$work/npzfs.log" --endpoint "$S3P" "$@" "$u" "$m"
}
for r in $(seq "$rounds"); do
  read -r n0 _ < <(s3req); t0=$EPOCHREALTIME
  if mountp s3://bench/ds/ "$mnt" 2>"$work/err"; then
    t1=$EPOCHREALTIME; read -r n1 _ < <(s3req)
    entries=$(ls -f "$mnt" | wc -l)
    t2=$EPOCHREALTIME; read -r n2 _ < <(s3req)
    rec p.mount "secs=$(elapsed "$t0" "$t1") requests=$((n1 - n0)) objects=$shards"
    rec p.ls "secs=$(elapsed "$t1" "$t2") requests=$((n2 - n1)) entries=$entries"
    umountr
  else
    rec p.mount.err "$(head -n 1 "$work/err")"
  fi
done

say "7. one array from each of 100 shards, 8 readers: the prefix, 100 single mounts"
seq 0 $(( shards / 100 )) $(( shards - 1 )) | head -n 100 | awk '{printf "shard%04d\n", $1}' >"$work/pick"
picked=$(wc -l <"$work/pick")
for r in $(seq "$rounds"); do
  # The prefix, mounted afresh: each shard opened on first look.
  if mountp s3://bench/ds/ "$mnt" 2>"$work/err"; then
    awk -v m="$mnt" '{print m "/" $1 ".npz/x.npy"}' "$work/pick" >"$work/list"
    read -r n0 b0 < <(s3req)
    o=$(timeout 300 "$py" scripts/bench/npbench.py loadmany "$work/list" - 8 2>"$work/err") \
      && { read -r n1 b1 < <(s3req); rec p.read100 "$o requests=$((n1 - n0)) fetched=$((b1 - b0)) shards=$picked"; } \
      || rec p.read100.err "$(tail -n 1 "$work/err")"
    umountr
  else
    rec p.read100.err "$(head -n 1 "$work/err")"
  fi
  # 100 mounts of one shard each, made beforehand (not timed).
  mkdir -p "$work/single"
  ok=1
  while read -r s; do
    mkdir -p "$work/single/$s"
    mountp "s3://bench/ds/$s.npz" "$work/single/$s" 2>"$work/err" || { ok=0; rec p.read100.single.err "$(head -n 1 "$work/err")"; break; }
  done <"$work/pick"
  if [ $ok = 1 ]; then
    awk -v m="$work/single" '{print m "/" $1 "/x.npy"}' "$work/pick" >"$work/list"
    read -r n0 b0 < <(s3req)
    o=$(timeout 300 "$py" scripts/bench/npbench.py loadmany "$work/list" - 8 2>"$work/err") \
      && { read -r n1 b1 < <(s3req); rec p.read100.single "$o requests=$((n1 - n0)) fetched=$((b1 - b0)) shards=$picked"; } \
      || rec p.read100.single.err "$(tail -n 1 "$work/err")"
  fi
  for m in "$work"/single/*; do
    is_mounted "$m" && { timeout 60 "$npzfs" unmount "$m" >/dev/null 2>&1 || fusermount3 -u -z "$m" 2>/dev/null || true; }
  done
  rm -rf "$work/single"
done

say "8. a shared sidecar: a fresh machine's first 4 KiB at 90% of the deflated member"
if s3put big/bigdefl.npz "$data/bigdefl.npz" && s3put big/stored.npz "$data/stored.npz"; then
  t0=$EPOCHREALTIME
  if timeout 1200 "$npzfs" index --sidecar --endpoint "$S3" --index-dir "$work/idx-indexer" s3://bench/big/bigdefl.npz >"$work/out" 2>"$work/err"; then
    rec p.index "secs=$(elapsed "$t0" "$EPOCHREALTIME") sidecar_bytes=$(stat -c %s "$work/s3data/bench/big/bigdefl.npzidx" 2>/dev/null || echo 0)"
    member=$(( $(layout bigdefl npy_size) ))
    for r in $(seq "$rounds"); do
      for kind in bigdefl stored; do
        key=z; [ $kind = stored ] && key=x
        rm -rf "$work/idx-fresh"
        read -r nm _ < <(s3req)
        if mountp "s3://bench/big/$kind.npz" "$mnt" --index-dir "$work/idx-fresh" 2>"$work/err"; then
          size=$(stat -c %s "$mnt/$key/raw.bin") # the npy header, as np.memmap would have it read
          off=$(( size / 10 * 9 / 4096 * 4096 ))
          read -r n0 b0 < <(s3req)
          # before: the mount's and the stat's requests (a mount looks
          # for the sidecar of an archive with a deflated member over 256
          # MiB, to say whether it has an index).
          o=$(timeout 300 "$py" scripts/bench/npbench.py pread "$mnt/$key/raw.bin" "$off" 4096 2>"$work/err") \
            && { read -r n1 b1 < <(s3req); rec "p.first4k.$kind" "$o requests=$((n1 - n0)) fetched=$((b1 - b0)) member=$member before=$((n0 - nm))"; } \
            || rec "p.first4k.$kind.err" "$(tail -n 1 "$work/err")"
          umountr
        else
          rec "p.first4k.$kind.err" "$(head -n 1 "$work/err")"
        fi
      done
    done
  else
    rec p.index.err "$(tail -n 1 "$work/err")"
  fi
else
  rec p.index.err "uploading the 1 GiB archives failed"
fi

say "9. rclone and s3fs mounts of the prefix: ls, then np.load(npz)[x] of 100 shards, 8 threads"
alt_prefix() { # NAME MOUNTPOINT
  local name=$1 m=$2
  read -r n0 _ < <(s3req); t0=$EPOCHREALTIME
  entries=$(ls -f "$m/" | wc -l)
  read -r n1 _ < <(s3req)
  rec "p.alt.$name.ls" "secs=$(elapsed "$t0" "$EPOCHREALTIME") requests=$((n1 - n0)) entries=$entries"
  awk -v m="$m" '{print m "/" $1 ".npz"}' "$work/pick" >"$work/list"
  read -r n0 b0 < <(s3req)
  o=$(timeout 600 "$py" scripts/bench/npbench.py loadmany "$work/list" x 8 2>"$work/err") \
    && { read -r n1 b1 < <(s3req); rec "p.alt.$name.read100" "$o requests=$((n1 - n0)) fetched=$((b1 - b0)) shards=$picked"; } \
    || rec "p.alt.$name.read100.err" "$(tail -n 1 "$work/err" | cut -c1-200)"
}
mkdir -p "$work/mnt2"
if command -v rclone >/dev/null; then
  rc=0
  # (AWS_CA_BUNDLE, where set, fails rclone's client for a plain http endpoint.)
  timeout 30 env -u AWS_CA_BUNDLE rclone mount --read-only --daemon \
    ":s3,provider=Other,access_key_id=benchkey,secret_access_key=benchsecret0123456789,endpoint='$S3P',force_path_style=true:bench/ds" "$work/mnt2" >"$work/rclone.log" 2>&1 || rc=$?
  if [ $rc = 0 ] && is_mounted "$work/mnt2"; then
    alt_prefix rclone "$work/mnt2"
    fusermount3 -u "$work/mnt2" 2>/dev/null || fusermount3 -u -z "$work/mnt2" 2>/dev/null || true
  else
    rec p.alt.rclone.err "rclone mount failed (exit $rc): $(tail -n 1 "$work/rclone.log" | cut -c1-200)"
  fi
else
  rec p.alt.rclone.err "rclone not installed (Debian: apt-get install rclone)"
fi
if command -v s3fs >/dev/null; then
  printf 'benchkey:benchsecret0123456789\n' >"$work/passwd"; chmod 600 "$work/passwd"
  rc=0
  timeout 30 s3fs bench:/ds "$work/mnt2" -o "url=$S3P,use_path_request_style,passwd_file=$work/passwd,ro" >"$work/s3fs.log" 2>&1 || rc=$?
  if [ $rc = 0 ] && is_mounted "$work/mnt2"; then
    alt_prefix s3fs "$work/mnt2"
    fusermount -u "$work/mnt2" 2>/dev/null || fusermount3 -u -z "$work/mnt2" 2>/dev/null || umount -l "$work/mnt2" 2>/dev/null || true
  else
    rec p.alt.s3fs.err "s3fs mount failed (exit $rc): $(tail -n 1 "$work/s3fs.log" | cut -c1-200)"
  fi
else
  rec p.alt.s3fs.err "s3fs not installed (Debian: apt-get install s3fs)"
fi
say "done"
