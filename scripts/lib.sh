# Shared by scripts/*.sh: source it, do not run it.

export PATH="/usr/local/go/bin:$PATH"

die() { printf '%s: %s\n' "$(basename "$0")" "$*" >&2; exit 1; }

# ensure_deps WHAT...: make sure each named dependency is present, installing
# the missing ones from Debian when running as root. Names: fuse, numpy, gcc,
# zip, unzip, fuse-zip, archivemount, time, nginx, pybuild (python3-build,
# -setuptools, -wheel), pytest, venv, man (man-db), libfuse3-dev (libfuse's
# headers, for scripts/bench/floor.c), and any other command.
ensure_deps() {
  command -v go >/dev/null || die "Go is not installed (expected at /usr/local/go/bin/go)"
  local missing=() what
  for what in "$@"; do
    case "$what" in
      fuse) command -v fusermount3 >/dev/null || missing+=(fuse3) ;;
      numpy) /usr/bin/python3 -c 'import numpy' >/dev/null 2>&1 || missing+=(python3-numpy) ;;
      time) [ -x /usr/bin/time ] || missing+=(time) ;;
      nginx) command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx-light) ;;
      igzip) command -v igzip >/dev/null || missing+=(isal) ;;
      libdeflate-gunzip) command -v libdeflate-gunzip >/dev/null || missing+=(libdeflate-tools) ;;
      pybuild) /usr/bin/python3 -c 'import build, setuptools, wheel' >/dev/null 2>&1 || missing+=(python3-build python3-setuptools python3-wheel) ;;
      pytest) /usr/bin/python3 -c 'import pytest' >/dev/null 2>&1 || missing+=(python3-pytest) ;;
      mypy) /usr/bin/python3 -c 'import mypy' >/dev/null 2>&1 || missing+=(python3-mypy) ;;
      venv) /usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv) ;;
      libfuse3-dev) [ -f /usr/include/fuse3/fuse_lowlevel.h ] || missing+=(libfuse3-dev) ;;
      man) command -v man >/dev/null || missing+=(man-db) ;;
      bash-completion) [ -f /usr/share/bash-completion/bash_completion ] || missing+=(bash-completion) ;;
      *) command -v "$what" >/dev/null || missing+=("$what") ;;
    esac
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing from Debian: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    die "missing ${missing[*]}: install them (Debian: sudo apt-get install ${missing[*]})"
  fi
}

# CROSS_TARGETS are the systems and architectures npzfs builds for, with
# CGO_ENABLED=0: mounts on Linux; ls, inspect, index, serve, pack (and so
# npzfs.open) on each.
CROSS_TARGETS="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"

# exe_name GOOS: the binary's file name there.
exe_name() {
  case "$1" in
    windows) echo npzfs.exe ;;
    *) echo npzfs ;;
  esac
}

# check_binary FILE GOOS GOARCH: die unless file(1) says FILE is an
# executable for GOOS on GOARCH (ELF, Mach-O or PE, and the machine).
check_binary() {
  local want got
  case "$2/$3" in
    linux/amd64) want="ELF 64-bit LSB executable, x86-64," ;;
    linux/arm64) want="ELF 64-bit LSB executable, ARM aarch64," ;;
    darwin/amd64) want="Mach-O 64-bit x86_64 executable" ;;
    darwin/arm64) want="Mach-O 64-bit arm64 executable" ;;
    windows/amd64) want="PE32+ executable (console) x86-64," ;;
    windows/arm64) want="PE32+ executable (console) Aarch64," ;;
    *) die "check_binary: no target $2/$3" ;;
  esac
  got=$(file -b "$1")
  [[ $got == "$want"* ]] || die "$1 is not an executable for $2/$3: file says: $got"
}

# build_npzfs OUT: build the command line into OUT.
build_npzfs() {
  go build -buildvcs=auto -trimpath -o "$1" ./cmd/npzfs
}

# ensure_versitygw: build the S3 gateway the remote tests run against, once
# (about 70 s on 2 cores), into the user's cache, and export its path as
# NPZFS_VERSITYGW.
VERSITYGW_VERSION=v1.8.0
ensure_versitygw() {
  local dir="${XDG_CACHE_HOME:-$HOME/.cache}/npzfs/tools/versitygw-$VERSITYGW_VERSION"
  if [ ! -x "$dir/versitygw" ]; then
    echo "building versitygw $VERSITYGW_VERSION into $dir (once)"
    mkdir -p "$dir"
    GOBIN="$dir" GOFLAGS= go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION" \
      || die "cannot build versitygw $VERSITYGW_VERSION"
  fi
  export NPZFS_VERSITYGW="$dir/versitygw"
}
