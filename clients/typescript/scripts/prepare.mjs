// `npm run prepare`: builds dist/. npm runs it when the package is installed from its folder
// (`npm install ./clients/typescript`) or a git checkout, and before `npm pack`; there the
// compiler, a devDependency, may not be installed yet, so the lock file's devDependencies
// are installed first.
import { execSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const run = (command) => execSync(command, { cwd: root, stdio: "inherit" });
if (!existsSync(join(root, "node_modules", "typescript", "bin", "tsc"))) {
  run("npm ci --no-audit --no-fund --ignore-scripts --loglevel=error");
}
run("node node_modules/typescript/bin/tsc -p tsconfig.json");
