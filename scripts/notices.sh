#!/usr/bin/env bash
# Prints THIRD_PARTY_NOTICES: the license of every module compiled into
# the npzfs binary (go list -deps of ./cmd/npzfs for linux on amd64 and
# arm64) and of Go's standard library and runtime, each named, then in
# full, from the module cache. scripts/package.sh puts it in every
# package beside LICENSE.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

modules=$(for arch in amd64 arm64; do
  GOOS=linux GOARCH=$arch go list -deps -f '{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}} {{.Dir}}{{end}}{{end}}' ./cmd/npzfs
done | sort -u)

# license_of FILE: the SPDX name of the license text in FILE.
license_of() {
  if grep -q 'Apache License' "$1" && grep -q 'Version 2.0' "$1"; then echo Apache-2.0
  elif grep -q 'Permission is hereby granted, free of charge' "$1"; then echo MIT
  elif grep -q 'Redistribution and use in source and binary forms' "$1"; then
    if grep -qi 'neither the name' "$1"; then echo BSD-3-Clause; else echo BSD-2-Clause; fi
  elif grep -q 'Mozilla Public License' "$1"; then echo MPL-2.0
  else echo "see below"
  fi
}

# license_files DIR: the license and notice files at the top of DIR.
license_files() {
  find "$1" -maxdepth 1 -type f \( -iname 'LICEN[CS]E*' -o -iname 'COPYING*' -o -iname 'NOTICE*' \) | sort
}

goroot=$(go env GOROOT)
echo "npzfs is licensed under the Apache License 2.0 (LICENSE). The npzfs"
echo "binary also holds the code of Go's standard library and runtime and of"
echo "the modules below, each under its own license, reproduced after the list."
echo
printf '%-62s %-12s %s\n' "MODULE" "VERSION" "LICENSE"
printf '%-62s %-12s %s\n' "Go standard library" "$(go env GOVERSION)" "$(license_of "$goroot/LICENSE")"
while read -r path ver dir; do
  f=$(license_files "$dir" | head -1)
  [ -n "$f" ] || { echo "notices.sh: no license file in $dir" >&2; exit 1; }
  printf '%-62s %-12s %s\n' "$path" "$ver" "$(license_of "$f")"
done <<<"$modules"

section() { # TITLE FILE
  echo
  echo "================================================================"
  echo "$1"
  echo "================================================================"
  echo
  cat "$2"
}
section "Go standard library $(go env GOVERSION): LICENSE" "$goroot/LICENSE"
while read -r path ver dir; do
  while read -r f; do
    section "$path $ver: $(basename "$f")" "$f"
  done < <(license_files "$dir")
done <<<"$modules"
