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

# goreleaser reads the commit and its date only once it has found a git remote; a
# local clone or worktree may have none, so lend it one for this run (environment
# only: the repository's config is not touched, and a snapshot publishes nothing).
if ! git ls-remote --get-url >/dev/null 2>&1 || [ "$(git ls-remote --get-url)" = origin ]; then
  export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=https://github.com/narad/narad.git
fi

"${goreleaser[@]}" check
if [ "${1:-}" = --full ]; then
  "${goreleaser[@]}" release --snapshot --clean
else
  "${goreleaser[@]}" build --snapshot --single-target --clean
fi
