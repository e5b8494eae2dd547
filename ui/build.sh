#!/usr/bin/env bash
# Rebuilds the dashboard (ui/) into crates/muisti-server/ui, which the server embeds, from the
# exact packages of package-lock.json. Needs Node.js 20 and npm (the npm registry); a fresh
# clone does not need to run it: the built files are committed. `--check` fails when the
# committed build differs from what the source builds (CI runs it).
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --loglevel=error
npx vite build --logLevel warn
if [ "${1:-}" = "--check" ]; then
  cd ..
  if ! git diff --quiet --exit-code -- crates/muisti-server/ui \
    || [ -n "$(git ls-files --others --exclude-standard -- crates/muisti-server/ui)" ]; then
    git status --short -- crates/muisti-server/ui
    echo "the committed dashboard build differs from ui/'s source: run ui/build.sh and commit" >&2
    exit 1
  fi
  echo "the committed dashboard build matches ui/'s source"
fi
