#!/usr/bin/env bash
# build.sh builds the real Kubernetes binaries the end-to-end fixture
# (test/kube) starts — kube-apiserver, etcd and kubectl — from this tools
# module, into a cache directory keyed by a hash of everything that decides
# their bytes: go.mod, go.sum, the build flags, the Go version and platform.
#
# Usage:
#   build.sh              build if needed; print the binaries' directory last on stdout
#   build.sh --print-dir  print that directory without building (for make variables)
#
# Cache root: $WHARF_KUBE_TOOLS_CACHE if set, else <repo>/.cache/kube-tools
# (gitignored). A cold build takes about 4 minutes on 2 idle cores (about 10
# on a busy machine) and ~3 GB of memory; with the Go build cache warm it is
# a link step of about 10 s.
# Progress goes to stderr so callers can parse stdout.
set -euo pipefail

# Everything lives in main so bash parses the whole file before running it:
# editing this script during a long build cannot corrupt the running copy.
main() {
  tools_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  repo_root="$(cd "$tools_dir/../.." && pwd)"
  cache_root="${WHARF_KUBE_TOOLS_CACHE:-$repo_root/.cache/kube-tools}"
  go_bin="${GO:-go}"

  # The version stamped into the binaries. Without these -X flags the server
  # reports v0.0.0-master, which breaks client version negotiation and any test
  # that checks server version.
  kube_version="v1.37.2"
  kube_major="1"
  kube_minor="37"
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$kube_version"
    ldflags+=" -X $pkg.gitMajor=$kube_major"
    ldflags+=" -X $pkg.gitMinor=$kube_minor"
    ldflags+=" -X $pkg.gitTreeState=clean"
  done
  build_flags=(-trimpath -ldflags "$ldflags")
  # -p 2: CI and developer machines have 2 cores shared with other compiles;
  # more parallel compiles only raise peak memory. Not part of the key: it
  # does not change the binaries.
  par_flags=(-p "${KUBE_TOOLS_BUILD_P:-2}")

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

  binaries=(kube-apiserver etcd kubectl)
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
  # Several test packages (and make) may ask at once; one builds, the others
  # wait on the lock and then find the cache filled.
  exec 9>"$cache_root/.lock"
  if ! flock -n 9; then
    echo "kube-tools: another build holds $cache_root/.lock; waiting" >&2
    flock 9
  fi
  if complete; then
    echo "$out_dir"
    return 0
  fi

  tmp_dir="$(mktemp -d "$cache_root/.build-$key.XXXXXX")"
  chmod 755 "$tmp_dir"
  ticker_pid=""
  cleanup() {
    [[ -n "$ticker_pid" ]] && kill "$ticker_pid" 2>/dev/null || true
    rm -rf "$tmp_dir"
  }
  trap cleanup EXIT

  echo "kube-tools: building kube-apiserver, etcd and kubectl $kube_version into $out_dir" >&2
  echo "kube-tools: a cold build takes 4-10 min on 2 cores and ~3 GB RAM; progress every 30 s" >&2
  start=$SECONDS
  # go build prints nothing while compiling for minutes; a heartbeat shows the
  # build is alive rather than hung.
  # The sleep runs in the background and is killed by the trap, so no orphan
  # keeps the caller's stderr pipe open after the build ends.
  (
    sleep_pid=""
    trap '[[ -n "$sleep_pid" ]] && kill "$sleep_pid" 2>/dev/null; exit 0' TERM
    while :; do
      sleep 30 &
      sleep_pid=$!
      wait "$sleep_pid"
      echo "kube-tools: still building ($((SECONDS - start)) s elapsed)" >&2
    done
  ) &
  ticker_pid=$!

  (
    cd "$tools_dir"
    # GOWORK=off: a go.work at the repository root must not pull this module
    # into the main module's workspace or vice versa.
    GOWORK=off CGO_ENABLED=0 "$go_bin" build "${par_flags[@]}" "${build_flags[@]}" -o "$tmp_dir/" tool
  ) >&2

  # The etcd server's main package is go.etcd.io/etcd/server/v3, so go names
  # its binary after the last non-version element: "server".
  mv "$tmp_dir/server" "$tmp_dir/etcd"
  for b in "${binaries[@]}"; do
    [[ -x "$tmp_dir/$b" ]] || { echo "kube-tools: $b missing after build" >&2; exit 1; }
  done
  touch "$tmp_dir/.complete"
  rm -rf "$out_dir"
  mv "$tmp_dir" "$out_dir"
  echo "kube-tools: built in $((SECONDS - start)) s" >&2
  echo "$out_dir"
}

main "$@"
