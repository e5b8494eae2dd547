import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import {
  Client,
  ConflictError,
  NotFoundError,
  OPERATIONS,
  RateLimitError,
  UnavailableError,
  ValidationError,
} from "../src/index.js";
import { ROOT, type Server, skipReason, startServer } from "./server.js";

const user = () => `u-${Math.random().toString(36).slice(2, 10)}`;

describe("against a real server", { skip: skipReason() }, () => {
  let server: Server;
  let c: Client;
  before(async () => {
    server = await startServer();
    c = new Client(server.url);
  });
  after(async () => server?.stop());

  test("remember then recall finds it first", async () => {
    const who = user();
    const stored = await c.remember("The boat is moored at pier 9", { user_id: who, tags: ["boat"] });
    await c.remember("Prefers tea over coffee in the morning", { user_id: who });
    assert.equal(stored.user_id, who);
    const hits = await c.recall("where is the boat", { user_id: who, limit: 3 });
    assert.equal(hits[0].memory.id, stored.id);
    assert.match(String(hits[0].memory.content), /pier 9/);
    assert.ok(hits[0].score > 0 && hits[0].score <= 1);
    assert.deepEqual(await c.recall("where is the boat", { user_id: user(), limit: 3 }), []);
  });

  test("updates, deletes and their typed errors", async () => {
    const m = await c.remember("Lives in Lisbon", { user_id: user() });
    const changed = await c.update(m.id, { content: "Lives in Porto", expected_version: m.version });
    assert.equal(changed.content, "Lives in Porto");
    await assert.rejects(c.update(m.id, { content: "Lives in Faro", expected_version: m.version }), (e: unknown) => {
      assert.ok(e instanceof ConflictError);
      assert.equal(e.status, 409);
      assert.equal(e.code, "conflict");
      return true;
    });
    await c.forget(m.id);
    await assert.rejects(c.get(m.id), NotFoundError);
    await assert.rejects(c.remember("x", { importance: 2 }), (e: unknown) => {
      assert.ok(e instanceof ValidationError);
      assert.match(e.serverMessage, /importance/);
      return true;
    });
  });

  test("pages, key-value state and conversations", async () => {
    const who = user();
    const stored = await c.rememberMany(Array.from({ length: 15 }, (_, i) => ({ content: `fact ${i}`, user_id: who })));
    const seen: string[] = [];
    for await (const m of c.iterMemories({ user_id: who, limit: 4 })) seen.push(m.id);
    assert.deepEqual(seen, stored.map((m) => m.id));
    assert.equal(await c.forgetAll({ user_id: who }), 15);

    const ns = `ts-${user()}`;
    await c.kvSet(ns, "a/b c", { dark: true });
    assert.deepEqual((await c.kvGet(ns, "a/b c")).value, { dark: true });
    assert.equal(await c.kvHas(ns, "a/b c"), true);
    assert.equal(await c.kvHas(ns, "missing"), false);
    assert.equal(await c.kvFlush(ns), 1);

    const id = `conv/${user()}`;
    const items = await c.appendMessages(id, {
      user_id: "ada",
      messages: [
        { role: "user", content: "hi" },
        { role: "assistant", content: "hello", extra: { id: "m2" } },
      ],
    });
    assert.deepEqual(items.map((m) => m.seq), [0, 1]);
    const detail = await c.conversation(id);
    assert.equal(detail.user_id, "ada");
    assert.deepEqual(detail.items.map((m) => [m.role, m.content]), [["user", "hi"], ["assistant", "hello"]]);
    assert.deepEqual(detail.items[1].extra, { id: "m2" });
  });
});

describe("retries", () => {
  async function scripted(script: Array<[number, Record<string, string>, unknown]>) {
    const seen: number[] = [];
    const http = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        seen.push(Date.now());
        const [status, headers, body] = script.shift() ?? [500, {}, {}];
        res.writeHead(status, { "content-type": "application/json", ...headers });
        res.end(JSON.stringify(body));
      });
    });
    await new Promise<void>((r) => http.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(http.address() as { port: number }).port}`;
    return { url, seen, close: () => new Promise((r) => http.close(r)) };
  }
  const limited: [number, Record<string, string>, unknown] = [429, { "retry-after": "0.3" }, { error: { code: "rate_limited", message: "slow down" } }];
  const down: [number, Record<string, string>, unknown] = [503, {}, { error: { code: "unavailable", message: "store down" } }];
  const stats: [number, Record<string, string>, unknown] = [200, {}, { tenant: "default", backend: "sqlite", healthy: true, namespaces: [], total: 0 }];

  test("429 waits the server's Retry-After, then succeeds", async () => {
    const s = await scripted([limited, stats]);
    try {
      assert.equal((await new Client(s.url, { backoff: 0.01 }).stats()).backend, "sqlite");
      assert.equal(s.seen.length, 2);
      assert.ok(s.seen[1] - s.seen[0] >= 250, "Retry-After was not honoured");
    } finally {
      await s.close();
    }
  });

  test("503 is thrown typed when the retries run out; no retries throws the first 429", async () => {
    const s = await scripted([down, down, down, limited]);
    try {
      await assert.rejects(new Client(s.url, { maxRetries: 2, backoff: 0.01 }).stats(), UnavailableError);
      assert.equal(s.seen.length, 3);
      await assert.rejects(new Client(s.url, { maxRetries: 0 }).stats(), (e: unknown) => {
        assert.ok(e instanceof RateLimitError);
        assert.equal(e.retryAfter, 0.3);
        return true;
      });
    } finally {
      await s.close();
    }
  });
});

describe("the wire", () => {
  const doc = JSON.parse(readFileSync(join(ROOT, "docs/openapi.json"), "utf8"));

  test("every operation of the OpenAPI document has a client method", () => {
    const operations = new Set<string>();
    for (const item of Object.values(doc.paths) as Record<string, { operationId: string }>[]) {
      for (const op of Object.values(item)) operations.add(op.operationId);
    }
    const covered = new Set(Object.values(OPERATIONS));
    assert.deepEqual([...operations].filter((o) => !covered.has(o)), []);
    assert.deepEqual([...covered].filter((o) => !operations.has(o)), []);
    for (const method of Object.keys(OPERATIONS)) {
      assert.equal(typeof (Client.prototype as unknown as Record<string, unknown>)[method], "function", method);
    }
  });

  test("the types are what the OpenAPI document generates", () => {
    const out = join(mkdtempSync(join(tmpdir(), "muisti-schema-")), "schema.ts");
    const bin = join(ROOT, "clients/typescript/node_modules/.bin/openapi-typescript");
    execFileSync(bin, [join(ROOT, "docs/openapi.json"), "--empty-objects-unknown", "-o", out], { stdio: "ignore" });
    const committed = readFileSync(join(ROOT, "clients/typescript/src/schema.ts"), "utf8");
    assert.equal(readFileSync(out, "utf8"), committed, "src/schema.ts is stale: npm run generate");
  });
});
