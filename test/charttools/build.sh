#!/usr/bin/env bash
# build.sh builds helm and kubeconform from this tools module into a cache
# directory named by a hash of what decides their bytes (go.mod, go.sum, the
# build flags, the Go version and platform). Nothing is downloaded but Go
# modules through the ordinary module proxy.
#
# Usage:
#   build.sh              build if needed; print the binaries' directory last on stdout
#   build.sh --print-dir  print that directory without building
#
# Cache root: $WHARF_CHART_TOOLS_CACHE if set, else <repo>/.cache/chart-tools.
# Its own hash and directory: editing this module never forces a rebuild of
# the kube-tools (test/tools). A cold build takes 1-3 min on 2 cores.
# Progress goes to stderr so callers can parse stdout.
set -euo pipefail

# main is parsed whole before it runs, so editing the script during a build
# does not corrupt the running copy.
main() {
  tools_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  repo_root="$(cd "$tools_dir/../.." && pwd)"
  cache_root="${WHARF_CHART_TOOLS_CACHE:-$repo_root/.cache/chart-tools}"
  go_bin="${GO:-go}"
  build_flags=(-trimpath -ldflags "-s -w")
  binaries=(helm kubeconform)

  key="$(
    {
      cat "$tools_dir/go.mod" "$tools_dir/go.sum"
      printf '%s\n' "CGO_ENABLED=0" "${build_flags[@]}"
      "$go_bin" env GOVERSION GOOS GOARCH
    } | sha256sum | cut -c1-16
  )"
  out_dir="$cache_root/$key"
  if [[ "${1:-}" == "--print-dir" ]]; then
    echo "$out_dir"
    return 0
  fi

  complete() {
    [[ -f "$out_dir/.complete" ]] || return 1
    local b
    for b in "${binaries[@]}"; do [[ -x "$out_dir/$b" ]] || return 1; done
  }
  if complete; then
    echo "$out_dir"
    return 0
  fi

  mkdir -p "$cache_root"
  # make and several test processes may ask at once: one builds, the rest
  # wait on the lock and then find the cache filled.
  exec 9>"$cache_root/.lock"
  if ! flock -n 9; then
    echo "chart-tools: another build holds $cache_root/.lock; waiting" >&2
    flock 9
  fi
  if complete; then
    echo "$out_dir"
    return 0
  fi

  tmp_dir="$(mktemp -d "$cache_root/.build-$key.XXXXXX")"
  chmod 755 "$tmp_dir"
  trap 'rm -rf "$tmp_dir"' EXIT
  echo "chart-tools: building helm and kubeconform into $out_dir" >&2
  start=$SECONDS
  (
    cd "$tools_dir"
    # GOWORK=off keeps a go.work at the root from merging this module into
    # the main one.
    GOWORK=off CGO_ENABLED=0 "$go_bin" build -p "${CHART_TOOLS_BUILD_P:-2}" "${build_flags[@]}" -o "$tmp_dir/" tool
  ) >&2
  for b in "${binaries[@]}"; do
    [[ -x "$tmp_dir/$b" ]] || { echo "chart-tools: $b missing after build" >&2; exit 1; }
  done
  touch "$tmp_dir/.complete"
  rm -rf "$out_dir"
  mv "$tmp_dir" "$out_dir"
  echo "chart-tools: built in $((SECONDS - start)) s" >&2
  echo "$out_dir"
}

main "$@"
