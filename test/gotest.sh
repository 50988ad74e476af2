#!/usr/bin/env bash
# gotest.sh runs `go test` with the given arguments, keeps its whole output
# in $WHARF_TEST_LOG (default .cache/test.log), and, when it fails, ends
# with a summary of what failed: CI keeps only the tail of a long run, and
# a failing end-to-end test's messages otherwise sit thousands of lines
# above it, among the logs of the hubs it started.
set -uo pipefail
log="${WHARF_TEST_LOG:-.cache/test.log}"
mkdir -p "$(dirname "$log")"
"${GO:-go}" test "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
  echo
  echo "=== what failed (the whole output: $log) ==="
  # A test's failures and logs are its lines "    file_test.go:NN: ...";
  # a panic or a timeout names its goroutine after "panic:".
  grep -E -e '^\s*--- FAIL' -e '^\s+[A-Za-z0-9_]+_test\.go:[0-9]+: ' -e '^panic:' -e '^FAIL' "$log" \
    | cut -c1-400 | tail -n 150
fi
exit "$rc"
