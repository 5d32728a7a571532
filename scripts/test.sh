#!/usr/bin/env bash
# The project's test command (the README's second set-up command; CI runs exactly this).
# Checks formatting and vet, then runs every package's tests. Extra arguments go to `go test`
# (e.g. `bash scripts/test.sh -short`).
set -euo pipefail
cd "$(dirname "$0")/.."

unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi
go vet ./...
go test -timeout 30m "$@" ./...
