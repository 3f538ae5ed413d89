#!/usr/bin/env bash
# Regenerates what is checked in beside the code from the command tree itself
# (the hidden `narad gen-docs` of a -tags gendocs build): completions/, man/ and docs/cli/;
# and internal/cli/helptext_gen.go, what `narad CMD --help` prints (its test writes it).
#
#   scripts/gen-docs.sh           rewrite them (stale pages of removed commands go too)
#   scripts/gen-docs.sh --check   regenerate into a temporary directory and fail,
#                                 showing the difference, if anything checked in differs
set -euo pipefail
cd "$(dirname "$0")/.."

check=false
case "${1:-}" in
  "") ;;
  --check) check=true ;;
  *) echo "usage: scripts/gen-docs.sh [--check]" >&2; exit 2 ;;
esac

generated=(completions man docs/cli)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

go build -tags gendocs -o "$tmp/narad" ./cmd/narad
"$tmp/narad" gen-docs "$tmp/out" 2>/dev/null

if $check; then
  drift=0
  for d in "${generated[@]}"; do
    if ! diff -ru "$d" "$tmp/out/$d"; then
      drift=1
    fi
  done
  if ! go test ./internal/cli -run '^TestQuickHelpIsCobras$' >/dev/null; then
    echo "gen-docs: internal/cli/helptext_gen.go differs from the commands' help" >&2
    drift=1
  fi
  if [ "$drift" -ne 0 ]; then
    echo "gen-docs: completions/, man/, docs/cli/ or helptext_gen.go differ from the commands; run scripts/gen-docs.sh and commit" >&2
    exit 1
  fi
  echo "gen-docs: completions/, man/, docs/cli/ and helptext_gen.go are up to date"
  exit 0
fi

go test ./internal/cli -run '^TestQuickHelpIsCobras$' -update >/dev/null

for d in "${generated[@]}"; do
  rm -rf "$d"
  mkdir -p "$(dirname "$d")"
  cp -R "$tmp/out/$d" "$d"
done
echo "gen-docs: wrote ${generated[*]} internal/cli/helptext_gen.go"
