#!/usr/bin/env bash
# The whole npzfs suite, from a fresh clone:
#
#   bash scripts/test.sh
#
# 1. installs what is missing when run as root on Debian (fuse3, python3-numpy,
#    gcc, zip, unzip, nginx-light, zsh, fish), and builds versitygw once into
#    ~/.cache/npzfs/tools (the servers remote archives are tested against);
# 2. checks gofmt and go vet, and cross-builds the binary for Linux, macOS
#    and Windows on amd64 and arm64 (CGO_ENABLED=0), each checked by
#    file(1) and go vet with its GOOS and GOARCH;
# 3. runs the unit tests under the race detector, package by package, but
#    those that measure memory or check one goroutine's output (race_skip);
# 4. runs the unit tests without it, at full size, and the allocation tests
#    the race detector skips;
# 5. runs the integration tests, which mount the real binary, with
#    NPZFS_REQUIRE_FUSE=1 so that they fail rather than skip without FUSE,
#    and those that read concurrently again with npzfs built with -race;
# 6. runs each fuzzer for NPZFS_FUZZTIME (default 30s);
# 7. tests the Python package from its wheel, and the release artifacts
#    (scripts/test-python.sh, scripts/test-packages.sh);
# 8. fails if a mount the run made is left behind.
#
# It is meant to pass on a developer's 2-core machine that is busy with
# something else: each package has a timeout such a machine meets (see
# pkg_timeout), and every step and package says when it starts.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
fuzztime="${NPZFS_FUZZTIME:-30s}"

started=$SECONDS
step() { printf '\n== %s  (%s, %d s in)\n' "$*" "$(date +%T)" $((SECONDS - started)); }

# The run's temporary files, its tests' mounts among them, are under a
# folder of its own: the leftover check touches the mounts under it and
# no other (a user's own, another run's).
run_tmp=$(mktemp -d "${TMPDIR:-/tmp}/npzfs-test.XXXXXX")
chmod 711 "$run_tmp" # the tests run as nobody reach their folders in it
export TMPDIR=$run_tmp

# our_mounts lists the npzfs mounts under the run's folder.
our_mounts() {
  awk -v dir="$run_tmp/" '$3 == "fuse.npzfs" && index($2, dir) == 1 { print $2 }' /proc/mounts
}
leftover_check() {
  local left
  left=$(our_mounts)
  [ -z "$left" ] && return 0
  echo "test.sh: npzfs mounts left behind:" >&2
  echo "$left" >&2
  # Clear them so the machine is usable, but still fail the run.
  echo "$left" | while read -r m; do
    fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
  return 1
}
cleanup() {
  leftover_check >/dev/null 2>&1 || true
  rm -rf --one-file-system "$run_tmp"
}
trap cleanup EXIT

# pkg_timeout PKG RACE: go test's -timeout for a package, with (RACE=1) or
# without the race detector: about four times what it takes on a quiet
# 2-core machine, which one other CPU-heavy process doubles. Measured
# (s, race / plain, on a machine busy with other work): inflate 320 / 22,
# npz 100 / 10, every other package under 10; integration takes minutes.
pkg_timeout() {
  case "$1:$2" in
    */inflate:1) echo 25m ;;
    */npz:1) echo 15m ;;
    */integration:*) echo 60m ;;
    *) echo 10m ;;
  esac
}

# race_skip PKG: the tests of a package the race detector need not run,
# which the pass without it runs: the inflater's checks of its output
# against other decoders and encoders, and npz's measures of memory, each
# one goroutine over megabytes, which the detector slows some 15 times
# and has nothing to look at in.
race_skip() {
  case "$1" in
    */inflate) echo '^(TestDifferentialLevels|TestLoopsStopAlike|TestDeflateSparseSize)$' ;;
    */npz) echo '^(TestMemberMemory|TestViewsNeedNoBudget)$' ;;
  esac
}

# gotest RACE [go test flags...]: go test on each unit test package in
# turn (integration excepted), naming it as it starts.
gotest() {
  local race=$1 pkg status=0
  shift
  for pkg in $(go list ./... | grep -v '/integration$'); do
    echo "-- ${pkg#github.com/npzfs/npzfs/}  ($(date +%T))"
    local flags=(-count=1 -timeout "$(pkg_timeout "$pkg" "$race")")
    if [ "$race" = 1 ]; then
      flags+=(-race)
      local skip
      skip=$(race_skip "$pkg")
      [ -z "$skip" ] || flags+=(-skip "$skip")
    fi
    go test "${flags[@]}" "$@" "$pkg" || status=1
  done
  return "$status"
}

step "dependencies"
# zsh and fish: the completion tests drive each shell; file: the
# cross-builds' check.
ensure_deps fuse numpy gcc zip unzip nginx zsh fish file
ensure_versitygw
echo "fusermount3, numpy $(/usr/bin/python3 -c 'import numpy; print(numpy.__version__)'), gcc, zip, unzip, nginx, zsh, fish, file, versitygw $VERSITYGW_VERSION: present"

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
[ -z "$unformatted" ] || die "gofmt would change: $unformatted"
echo ok

step "go vet"
go vet ./...
echo ok

step "cross-builds (CGO_ENABLED=0): $CROSS_TARGETS"
# The packages that need Linux (fs, tree, internal/daemon, the
# integration tests) are left out elsewhere by their build tags; every
# other one builds, and is vetted with its tests, on each target.
for target in $CROSS_TARGETS; do
  os=${target%/*} arch=${target#*/}
  out="$run_tmp/cross/$os-$arch/$(exe_name "$os")"
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -o "$out" ./cmd/npzfs || die "npzfs does not build for $target"
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go vet ./... || die "go vet fails for $target"
  check_binary "$out" "$os" "$arch"
  echo "$target: $(file -b "$out" | cut -d, -f1-2)"
done
rm -rf "$run_tmp/cross"

step "unit tests under the race detector (NPZFS_REQUIRE_FUSE=1)"
# fs mounts a test tree in a subprocess: with NPZFS_REQUIRE_FUSE=1 those
# tests fail rather than skip when FUSE is missing.
NPZFS_REQUIRE_FUSE=1 gotest 1 || die "unit tests failed under the race detector"

step "unit tests without the race detector (full sizes, allocation counts)"
# The race detector changes what is allocated, so the allocation tests
# skip under it; they count allocations, which a change can silently
# multiply.
NPZFS_REQUIRE_FUSE=1 gotest 0 || die "unit tests failed"

step "integration tests (-race, NPZFS_REQUIRE_FUSE=1)"
# -v: each test says when it starts, so a slow one is seen as it runs.
status=0
NPZFS_REQUIRE_FUSE=1 go test -race -count=1 -v -timeout "$(pkg_timeout ./integration 1)" ./integration/ || status=$?
leftover_check || status=1
[ "$status" = 0 ] || die "integration tests failed"

step "integration tests that read concurrently, npzfs built with -race"
# The run above checks the tests; this one checks npzfs itself, serving
# concurrent readers, folder and prefix mounts under change, and indexes
# built by two processes at once. The memory tests stay out: the race
# detector multiplies what npzfs uses.
status=0
NPZFS_RACE_DAEMON=1 NPZFS_REQUIRE_FUSE=1 go test -count=1 -v -timeout "$(pkg_timeout ./integration 1)" \
  -run 'TestFolder|TestPrefix|TestManyArrays|TestRemoteObjectReplaced|TestRemoteSidecarConcurrentIndex' ./integration/ || status=$?
leftover_check || status=1
[ "$status" = 0 ] || die "integration tests against a race-built npzfs failed"

step "fuzzing, $fuzztime each"
fuzz() { # package target
  echo "-- $2 ($1, $(date +%T))"
  # A short minimisation: a failure found is still reported (and saved),
  # but a 30 s run is not spent shrinking inputs.
  local log rc=0
  log=$(mktemp)
  go test -run '^$' -fuzz "^$2\$" -fuzztime "$fuzztime" -fuzzminimizetime 5s "$1" 2>&1 | tee "$log" || rc=$?
  # Go before 1.27 may fail a run as its -fuzztime ends with a bare
  # "context deadline exceeded", having found nothing (golang/go#75804).
  # Such a run is made again, once; a failing input is never excused.
  if [ "$rc" != 0 ] && grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
    echo "-- $2: the run ended on Go's fuzz deadline race (golang/go#75804), nothing found; running it again"
    rc=0
    go test -run '^$' -fuzz "^$2\$" -fuzztime "$fuzztime" -fuzzminimizetime 5s "$1" || rc=$?
  fi
  rm -f "$log"
  return "$rc"
}
fuzz ./npy FuzzReadHeader
fuzz ./npz FuzzOpen
fuzz ./inflate FuzzInflate
fuzz ./inflate FuzzDeflateSparse
fuzz ./zip FuzzParseSOZipIndex
fuzz ./serve FuzzFrameReader
fuzz ./serve FuzzFrames

step "python types (mypy --strict)"
ensure_deps mypy
(cd python && /usr/bin/python3 -m mypy --strict npzfs)

step "python package (scripts/test-python.sh)"
bash scripts/test-python.sh

step "release artifacts (scripts/test-packages.sh)"
bash scripts/test-packages.sh

step "leftover mounts"
leftover_check || die "a test left an npzfs mount behind"
echo none

echo
echo "test.sh: all passed in $((SECONDS - started)) s"
