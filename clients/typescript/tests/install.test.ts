// The package as a user gets it: `npm pack` (which builds dist/ through `prepare`), the
// tarball installed into a fresh project, and the README's example run there against a real
// server (its address the only change).

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, test } from "node:test";

import { ROOT, type Server, skipReason, startServer } from "./server.js";

const PACKAGE = resolve(ROOT, "clients", "typescript");

/** The README's first TypeScript block, verbatim. */
function readmeExample(): string {
  const readme = readFileSync(join(PACKAGE, "README.md"), "utf8");
  const block = /```ts\n([\s\S]*?)```/.exec(readme);
  assert.ok(block, "the README has a TypeScript example");
  return block[1];
}

describe("installed from a packed tarball", { skip: skipReason() }, () => {
  let server: Server;
  let dir: string;
  before(async () => {
    server = await startServer();
    dir = mkdtempSync(join(tmpdir(), "muisti-ts-install-"));
  });
  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("the README example runs in a fresh project", () => {
    const npm = (args: string[], cwd: string) =>
      execFileSync("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], { cwd, encoding: "utf8" });
    npm(["pack", "--pack-destination", dir], PACKAGE);
    const tarball = readdirSync(dir).find((f) => f.endsWith(".tgz"));
    assert.ok(tarball, "npm pack wrote a tarball");
    const project = join(dir, "project");
    mkdirSync(project);
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "example", private: true, type: "module" }));
    npm(["install", join(dir, tarball)], project);
    const example = readmeExample();
    assert.ok(example.includes("http://127.0.0.1:7878"), "the example names the default address");
    writeFileSync(join(project, "example.mjs"), example.replace("http://127.0.0.1:7878", server.url));
    const out = execFileSync("node", ["example.mjs"], {
      cwd: project,
      encoding: "utf8",
      env: { ...process.env, MUISTI_API_KEY: "" },
    });
    const [content, score] = out.trim().split(/ (?=[^ ]+$)/);
    assert.equal(content, "The boat is moored at pier 9");
    assert.ok(Number(score) > 0, `a score: ${out}`);
  });
});
