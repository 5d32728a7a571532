#!/usr/bin/env bash
# The project's test command (the README's second set-up command; CI runs exactly this).
# Checks formatting, vet and staticcheck, then runs every package's tests, and the networked
# packages again under the race detector. Extra arguments go to `go test` (e.g.
# `bash scripts/test.sh -short`).
set -euo pipefail
cd "$(dirname "$0")/.."

unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi
go vet ./...
# staticcheck, pinned; `go run` builds it from the module proxy on first use (cached after).
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
go test -timeout 30m "$@" ./...
# The session and transport code is the concurrent part: run it under the race detector too.
go test -race -timeout 20m "$@" ./internal/serve/... ./protocols/transport/... ./protocols/streams/...
# The Python package (python/cryptflow) runs the tools: test it when a python3 with numpy and
# pytest is there (Debian: apt-get install python3-numpy python3-pytest; .ci/run installs them).
py=""
for cand in python3 /usr/bin/python3; do
	if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import numpy, pytest' >/dev/null 2>&1; then
		py=$cand
		break
	fi
done
if [ -n "$py" ]; then
	bin=$(mktemp -d)
	trap 'rm -rf "$bin"' EXIT
	go build -o "$bin/" ./cmd/athosc ./cmd/scirun
	CRYPTFLOW_BIN="$bin" "$py" -m pytest -q python/tests
else
	echo "test.sh: no python3 with numpy and pytest: skipping the Python package's tests" >&2
fi
