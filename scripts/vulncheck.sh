#!/usr/bin/env bash
# Checks the module for known vulnerabilities that its code can reach, with govulncheck
# (golang.org/x/vuln) at a pinned version, fetched through the Go module proxy.
#
# The vulnerability database is the Go team's own, read from the golang.org/x/vulndb
# module (its data/osv folder, which govulncheck reads as a flat database), so the
# check needs nothing but the module proxy. VULNDB_VERSION picks that module's version
# (default latest, for current advisories); GOVULNDB=URL uses another database instead.
#
# Findings in the standard library depend on the Go that runs the check: run it with
# the Go that releases are built with, e.g. GOTOOLCHAIN=go1.27.3 scripts/vulncheck.sh.
# Extra arguments go to govulncheck (e.g. -show verbose, -format json).
set -euo pipefail
cd "$(dirname "$0")/.."

db=${GOVULNDB:-}
if [ -z "$db" ]; then
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  # Outside the module, so that the download leaves go.mod and go.sum alone.
  dir=$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json "golang.org/x/vulndb@${VULNDB_VERSION:-latest}" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
  if [ -z "$dir" ] || [ ! -d "$dir/data/osv" ]; then
    echo "vulncheck: cannot get the vulnerability database (golang.org/x/vulndb)" >&2
    exit 2
  fi
  db="file://$dir/data/osv"
  echo "vulnerability database: golang.org/x/vulndb@$(basename "$dir" | sed 's/.*@//')"
fi
go version
go run golang.org/x/vuln/cmd/govulncheck@v1.9.0 -db "$db" "$@" ./...
