#!/usr/bin/env bash
# Prints npzfs's version, from git: one string valid as a Go module
# version suffix, a PEP 440 version (wheels), a Debian version and an RPM
# version, that sorts as they do:
#
#   X.Y.Z                    at a tag vX.Y.Z
#   X.Y.Z.postN+gHASH        N commits after the tag vX.Y.Z (with no tag:
#                            0.0.0 and N the count of commits), HASH the
#                            commit's first 12 hex digits
#   ...+dirty, ....dirty     the tree has uncommitted changes
#
# scripts/package.sh builds every artifact with it; npzfs version prints it
# with the full commit Go records.
set -euo pipefail
cd "$(dirname "$0")/.."
hash=$(git rev-parse --short=12 HEAD)
base=0.0.0
n=$(git rev-list --count HEAD)
if desc=$(git describe --tags --long --match 'v[0-9]*' 2>/dev/null); then
  tag=${desc%-*-g*}
  if [[ ${tag#v} =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    base=${tag#v}
    n=${desc%-g*}
    n=${n##*-}
  fi
fi
v=$base
[ "$n" = 0 ] || v="$base.post$n+g$hash"
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  case $v in
    *+*) v="$v.dirty" ;;
    *) v="$v+dirty" ;;
  esac
fi
echo "$v"
