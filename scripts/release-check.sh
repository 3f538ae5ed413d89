#!/usr/bin/env bash
# Checks goreleaser.yaml and builds a snapshot with a pinned goreleaser, fetched and
# built through the Go module proxy (the first run takes some minutes). Not part of
# .ci/run: it is a release step, too slow for every change.
#
#   scripts/release-check.sh          check, then build for this machine only (dist/)
#   scripts/release-check.sh --full   check, then a snapshot release: every target,
#                                     the archives and checksums.txt, nothing published
set -euo pipefail
cd "$(dirname "$0")/.."

goreleaser=(go run github.com/goreleaser/goreleaser/v2@v2.15.1)

case "${1:-}" in
  "" | --full) ;;
  *) echo "usage: scripts/release-check.sh [--full]" >&2; exit 2 ;;
esac

"${goreleaser[@]}" check
if [ "${1:-}" = --full ]; then
  "${goreleaser[@]}" release --snapshot --clean
else
  "${goreleaser[@]}" build --snapshot --single-target --clean
fi
