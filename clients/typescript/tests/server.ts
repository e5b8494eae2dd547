// A real `muisti serve` for the tests: on a free loopback port over a fresh SQLite file.
// The binary: MUISTI_BIN, else the workspace's target/{debug,release}/muisti (or under
// CARGO_TARGET_DIR). Without one the tests skip with a printed line; with
// MUISTI_REQUIRE_SERVICES=1 (CI) they fail instead.

import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");

export function findBinary(): string | undefined {
  if (process.env.MUISTI_BIN) return process.env.MUISTI_BIN;
  const targets = [process.env.CARGO_TARGET_DIR, join(ROOT, "target")].filter((t): t is string => !!t);
  for (const target of targets) {
    for (const profile of ["release", "debug"]) {
      const candidate = join(target, profile, "muisti");
      if (existsSync(candidate)) return candidate;
    }
  }
  return undefined;
}

/** Why the server tests cannot run, or undefined when they can (fails under CI instead). */
export function skipReason(): string | undefined {
  if (findBinary()) return undefined;
  const message = "no muisti binary (cargo build -p muisti-cli, or set MUISTI_BIN)";
  if (process.env.MUISTI_REQUIRE_SERVICES === "1") throw new Error(message);
  console.log(`skipped: ${message}`);
  return message;
}

export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const s = createServer();
    s.on("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => done(port));
    });
  });
}

export interface Server {
  url: string;
  stop(): Promise<void>;
}

export async function startServer(): Promise<Server> {
  const binary = findBinary();
  if (!binary) throw new Error("no muisti binary");
  const home = mkdtempSync(join(tmpdir(), "muisti-ts-"));
  const port = await freePort();
  const env = { ...process.env, HOME: home, XDG_DATA_HOME: join(home, "data"), XDG_CONFIG_HOME: join(home, "config") };
  const child: ChildProcess = spawn(
    binary,
    ["--store", `sqlite://${home}/muisti.db`, "serve", "--listen", `127.0.0.1:${port}`],
    { env, stdio: "ignore" },
  );
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`muisti serve exited with ${child.exitCode}`);
    try {
      const r = await fetch(`${url}/healthz`);
      if (r.ok) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) {
      child.kill();
      throw new Error("muisti serve did not answer within 30 s");
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    stop: async () => {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
      rmSync(home, { recursive: true, force: true });
    },
  };
}
