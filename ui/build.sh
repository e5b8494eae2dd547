#!/usr/bin/env bash
# Rebuilds the dashboard (ui/) into crates/muisti-server/ui, which the server embeds, from the
# exact packages of package-lock.json. Needs Node.js 20 and npm (the npm registry); a fresh
# clone does not need to run it: the built files are committed. `--check` fails when the
# committed build differs from what the source builds (CI runs it).
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --loglevel=error
npx vite build --logLevel warn
# The bundle carries these packages' code: their licences and notices go with it.
node --input-type=module -e '
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
const dirs = execFileSync("npm", ["ls", "--omit=dev", "--all", "--parseable"], { encoding: "utf8" })
  .trim().split("\n").slice(1).sort();
let out = "Third-party code in this build (the npm packages bundled into assets/*.js).\n";
for (const dir of dirs) {
  const pkg = JSON.parse(readFileSync(`${dir}/package.json`, "utf8"));
  out += `\n==== ${pkg.name} ${pkg.version} (${pkg.license})\n`;
  const files = readdirSync(dir).filter((f) => /^(licen[cs]es?|notice|copyright)/i.test(f)).sort()
    .flatMap((f) => (statSync(`${dir}/${f}`).isDirectory() ? readdirSync(`${dir}/${f}`).sort().map((g) => `${f}/${g}`) : [f]));
  for (const f of files) {
    out += `\n-- ${f}\n${readFileSync(`${dir}/${f}`, "utf8").trim()}\n`;
  }
}
writeFileSync("../crates/muisti-server/ui/assets/third-party-licenses.txt", out);
'
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
