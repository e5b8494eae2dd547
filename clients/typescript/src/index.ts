/**
 * The TypeScript client of muisti, long-term memory for AI agents (fetch-based, ESM).
 *
 * ```ts
 * import { Client } from "muisti";
 * const client = new Client("http://127.0.0.1:7878");
 * await client.remember("Prefers a window seat", { user_id: "alice" });
 * const hits = await client.recall("where does Alice like to sit?", { user_id: "alice", limit: 3 });
 * console.log(hits[0].memory.content, hits[0].score);
 * ```
 *
 * The wire types (`Memory`, `RecallHit`, ...) are generated from the server's OpenAPI document
 * (`src/schema.ts`, `npm run generate`); 429 and 503 answers are retried with exponential
 * back-off, honouring `Retry-After`; error answers throw typed errors (`./errors`).
 */

import { ConnectionError, errorFor } from "./errors.js";
import type { components } from "./schema.js";

export * from "./errors.js";
export type { components, paths } from "./schema.js";

type S = components["schemas"];
export type Memory = S["Memory"];
export type NewMemory = S["NewMemory"];
export type RecallHit = S["RecallHit"];
export type RecallQuery = S["RecallQuery"];
export type MemoryPatch = S["MemoryPatch"];
export type MemoryPage = S["MemoryPage"];
export type KvEntry = S["KvEntry"];
export type KvEntries = S["KvEntries"];
export type ConversationMessage = S["ConversationMessage"];
export type ConversationDetail = S["ConversationDetail"];
export type ConversationSummary = S["ConversationSummary"];
export type NewMessage = S["NewMessage"];
export type ChatReply = S["ChatReply"];
export type Stats = S["Stats"];
export type Health = S["Health"];

/** Options of a `Client`. */
export interface ClientOptions {
  /** Sent as `Authorization: Bearer <key>`. */
  apiKey?: string;
  /** Retries of a 429 or 503 answer or a failed connection (default 3). */
  maxRetries?: number;
  /** The first back-off in seconds (default 0.5), doubled each retry, when the server gives no `Retry-After`. */
  backoff?: number;
  /** Per-request timeout in milliseconds (default 30,000). */
  timeoutMs?: number;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
}

/** A server-sent event of `chatStream`. */
export interface StreamEvent {
  event: string;
  data: unknown;
}

type Params = Record<string, string | number | boolean | string[] | undefined | null>;

interface Request {
  method: string;
  path: string;
  params?: Params;
  body?: unknown;
  /** Statuses answered without throwing (HEAD's 404). */
  accept?: number[];
}

const RETRY_STATUSES = new Set([429, 503]);
const MAX_BACKOFF = 30;

const seg = (value: string | number): string => encodeURIComponent(String(value));

/** How long to wait before retry `attempt` (from 0), in seconds. */
export function retryDelay(retryAfter: number | undefined, attempt: number, base: number): number {
  if (retryAfter !== undefined) return Math.min(retryAfter, MAX_BACKOFF);
  return Math.min(base * 2 ** attempt, MAX_BACKOFF) * (0.5 + Math.random() / 2);
}

function retryAfterOf(response: Response): number | undefined {
  const header = response.headers.get("retry-after");
  if (header === null) return undefined;
  const secs = Number(header);
  return Number.isFinite(secs) ? Math.max(0, secs) : undefined;
}

const sleep = (secs: number) => new Promise((resolve) => setTimeout(resolve, secs * 1000));

/** The muisti HTTP API. Every method answers a promise; errors are typed. */
export class Client {
  readonly baseUrl: string;
  private readonly apiKey?: string;
  private readonly maxRetries: number;
  private readonly backoff: number;
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof fetch;

  constructor(baseUrl = "http://127.0.0.1:7878", options: ClientOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.apiKey = options.apiKey;
    this.maxRetries = options.maxRetries ?? 3;
    this.backoff = options.backoff ?? 0.5;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.fetchImpl = options.fetch ?? globalThis.fetch;
  }

  private url(path: string, params?: Params): string {
    const url = new URL(this.baseUrl + path);
    for (const [name, value] of Object.entries(params ?? {})) {
      if (value === undefined || value === null) continue;
      for (const v of Array.isArray(value) ? value : [value]) url.searchParams.append(name, String(v));
    }
    return url.toString();
  }

  private headers(json: boolean): Record<string, string> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (json) headers["content-type"] = "application/json";
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;
    return headers;
  }

  /** Sends a request, retrying 429 and 503 answers and failed connections. */
  private async send(request: Request): Promise<Response> {
    const url = this.url(request.path, request.params);
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response = await this.fetchImpl(url, {
          method: request.method,
          headers: this.headers(request.body !== undefined),
          body: request.body === undefined ? undefined : JSON.stringify(request.body),
          signal: AbortSignal.timeout(this.timeoutMs),
        });
      } catch (e) {
        if (attempt >= this.maxRetries) throw new ConnectionError(this.baseUrl, String((e as Error)?.message ?? e));
        await sleep(retryDelay(undefined, attempt, this.backoff));
        continue;
      }
      if (RETRY_STATUSES.has(response.status) && attempt < this.maxRetries) {
        await response.arrayBuffer().catch(() => undefined);
        await sleep(retryDelay(retryAfterOf(response), attempt, this.backoff));
        continue;
      }
      if (response.status >= 400 && !(request.accept ?? []).includes(response.status)) {
        const text = await response.text();
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON: keep the text
        }
        throw errorFor(response.status, body, retryAfterOf(response));
      }
      return response;
    }
  }

  private async json<T>(request: Request): Promise<T> {
    const response = await this.send(request);
    const text = await response.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  // Memories
  /** Stores a memory (`POST /v1/memories`) and returns it. */
  remember(content: NewMemory["content"], fields: Omit<NewMemory, "content"> = {}): Promise<Memory> {
    return this.json({ method: "POST", path: "/v1/memories", body: { ...fields, content } });
  }
  /** Stores up to 1,000 memories in one transaction (all or none), returned in order. */
  async rememberMany(memories: NewMemory[]): Promise<Memory[]> {
    return (await this.json<S["Memories"]>({ method: "POST", path: "/v1/memories/batch", body: { memories } })).memories;
  }
  /** The memories that best match `query`, best first (`.memory`, `.score`). */
  async recall(query: string, fields: Omit<RecallQuery, "query"> = {}): Promise<RecallHit[]> {
    return (await this.json<S["RecallResult"]>({ method: "POST", path: "/v1/recall", body: { ...fields, query } })).hits;
  }
  /** One memory by id; `NotFoundError` when there is none. */
  get(id: string, params: { user_id?: string } = {}): Promise<Memory> {
    return this.json({ method: "GET", path: `/v1/memories/${seg(id)}`, params });
  }
  /** Changes some fields of a memory atomically (`expected_version`: conditional). */
  update(id: string, patch: MemoryPatch): Promise<Memory> {
    return this.json({ method: "PATCH", path: `/v1/memories/${seg(id)}`, body: patch });
  }
  /** Deletes a memory; `NotFoundError` when there is none. */
  async forget(id: string, params: { user_id?: string } = {}): Promise<void> {
    await this.send({ method: "DELETE", path: `/v1/memories/${seg(id)}`, params });
  }
  /** Deletes every memory of one user in a namespace; answers how many. */
  async forgetAll(params: { user_id: string; namespace?: string; agent_id?: string; session_id?: string }): Promise<number> {
    return (await this.json<S["Deleted"]>({ method: "DELETE", path: "/v1/memories", params })).deleted;
  }
  /** One page of memories, oldest first or in `order` (`newest`, `importance`, `accessed`). */
  list(params: Params = {}): Promise<MemoryPage> {
    return this.json({ method: "GET", path: "/v1/memories", params });
  }
  /** Every memory matching the filters of `list`, page by page. */
  async *iterMemories(params: Params = {}): AsyncGenerator<Memory> {
    let cursor: string | undefined;
    do {
      const page = await this.list({ ...params, cursor });
      yield* page.items;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }
  /** A memory's accesses in the server's access log (empty while it is off). */
  accesses(id: string, params: { user_id?: string } = {}): Promise<S["MemoryAccesses"]> {
    return this.json({ method: "GET", path: `/v1/memories/${seg(id)}/accesses`, params });
  }

  /** A memory's history. */
  history(id: string, params: { user_id?: string } = {}): Promise<S["History"]> {
    return this.json({ method: "GET", path: `/v1/memories/${seg(id)}/history`, params });
  }
  /** Brings an archived memory back. */
  restore(id: string): Promise<Memory> {
    return this.json({ method: "POST", path: `/v1/memories/${seg(id)}/restore` });
  }
  /** The memories closest in meaning to one memory. */
  async similar(
    id: string,
    params: { limit?: number; namespace?: string; user_id?: string; all_users?: boolean } = {},
  ): Promise<RecallHit[]> {
    return (await this.json<S["RecallResult"]>({ method: "GET", path: `/v1/memories/${seg(id)}/similar`, params })).hits;
  }
  /** Remembers a conversation: the facts found in it, or each message as said (`infer: false`). */
  extract(request: S["ExtractRequest"]): Promise<S["ExtractResponse"] | S["ExtractQueued"]> {
    return this.json({ method: "POST", path: "/v1/memories/extract", body: request });
  }

  // Key-value state
  /** Stores a JSON value at a key. */
  kvSet(namespace: string, key: string, value: unknown, ttlSeconds?: number): Promise<KvEntry> {
    return this.json({ method: "PUT", path: `/v1/kv/${seg(namespace)}/${seg(key)}`, body: { value, ttl_seconds: ttlSeconds } });
  }
  /** The entry at a key; `NotFoundError` when there is none. */
  kvGet(namespace: string, key: string): Promise<KvEntry> {
    return this.json({ method: "GET", path: `/v1/kv/${seg(namespace)}/${seg(key)}` });
  }
  /** Whether a key holds a value. */
  async kvHas(namespace: string, key: string): Promise<boolean> {
    const response = await this.send({ method: "HEAD", path: `/v1/kv/${seg(namespace)}/${seg(key)}`, accept: [404] });
    return response.status === 200;
  }
  /** Deletes a key. */
  async kvDelete(namespace: string, key: string): Promise<void> {
    await this.send({ method: "DELETE", path: `/v1/kv/${seg(namespace)}/${seg(key)}` });
  }
  /** One page of a namespace's entries. */
  kvList(namespace: string, params: { cursor?: string; limit?: number } = {}): Promise<KvEntries> {
    return this.json({ method: "GET", path: `/v1/kv/${seg(namespace)}`, params });
  }
  /** Deletes every entry of a namespace; answers how many. */
  async kvFlush(namespace: string): Promise<number> {
    return (await this.json<S["Deleted"]>({ method: "DELETE", path: `/v1/kv/${seg(namespace)}` })).deleted;
  }

  // Conversations and chat
  /** The conversations, oldest first. */
  async conversations(params: { user_id?: string } = {}): Promise<ConversationSummary[]> {
    return (await this.json<S["Conversations"]>({ method: "GET", path: "/v1/conversations", params })).conversations;
  }
  /** A conversation with its messages. */
  conversation(id: string): Promise<ConversationDetail> {
    return this.json({ method: "GET", path: `/v1/conversations/${seg(id)}` });
  }
  /** Appends messages to a conversation (made on first use); answers the stored messages. */
  async appendMessages(id: string, request: S["AppendMessages"]): Promise<ConversationMessage[]> {
    return (await this.json<S["AppendedMessages"]>({ method: "POST", path: `/v1/conversations/${seg(id)}/messages`, body: request })).items;
  }
  /** Takes back a conversation's last message and answers it (404 `NotFoundError` when it has none). */
  popMessage(id: string): Promise<ConversationMessage> {
    return this.json({ method: "DELETE", path: `/v1/conversations/${seg(id)}/messages/last` });
  }
  /** Deletes a conversation; answers how many records went. */
  async deleteConversation(id: string): Promise<number> {
    return (await this.json<S["Deleted"]>({ method: "DELETE", path: `/v1/conversations/${seg(id)}` })).deleted;
  }
  /** Ends a conversation (its scratch and short-term memories go). */
  async endConversation(id: string): Promise<number> {
    return (await this.json<S["Deleted"]>({ method: "POST", path: `/v1/conversations/${seg(id)}/end` })).deleted;
  }
  /** Sends a message to the server's agent. */
  chat(message: string, fields: Omit<S["ChatMessage"], "message"> = {}): Promise<ChatReply> {
    return this.json({ method: "POST", path: "/v1/chat", body: { ...fields, message } });
  }
  /** `chat` with the answer streamed as server-sent events. */
  async *chatStream(message: string, fields: Omit<S["ChatMessage"], "message"> = {}): AsyncGenerator<StreamEvent> {
    const response = await this.send({ method: "POST", path: "/v1/chat/stream", body: { ...fields, message } });
    if (!response.body) return;
    const decoder = new TextDecoder();
    let buffer = "";
    let event = "message";
    let data: string[] = [];
    const flush = (): StreamEvent | undefined => {
      if (data.length === 0) return undefined;
      const text = data.join("\n");
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // plain text data
      }
      const out = { event, data: parsed };
      event = "message";
      data = [];
      return out;
    };
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let newline: number;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, newline).replace(/\r$/, "");
        buffer = buffer.slice(newline + 1);
        if (line === "") {
          const out = flush();
          if (out) yield out;
        } else if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
    }
    const last = flush();
    if (last) yield last;
  }
  /** OpenAI-format chat completions with memory (not streamed; use the OpenAI SDK for that). */
  chatCompletions(request: S["ChatCompletionRequest"]): Promise<Record<string, unknown>> {
    return this.json({ method: "POST", path: "/v1/chat/completions", body: { ...request, stream: false } });
  }

  // Declarative memory
  /** The proposals waiting for a user's confirmation. */
  async proposals(params: { user_id?: string } = {}): Promise<S["Proposal"][]> {
    return (await this.json<S["Proposals"]>({ method: "GET", path: "/v1/proposals", params })).proposals;
  }
  /** Applies a proposal of `userId`'s (only the user it concerns decides it); answers the memory it wrote. */
  confirmProposal(id: string, userId: string): Promise<Memory> {
    const body: S["ProposalDecision"] = { user_id: userId };
    return this.json({ method: "POST", path: `/v1/proposals/${seg(id)}/confirm`, body });
  }
  /** Drops a proposal of `userId`'s. */
  rejectProposal(id: string, userId: string): Promise<S["Proposal"]> {
    const body: S["ProposalDecision"] = { user_id: userId };
    return this.json({ method: "POST", path: `/v1/proposals/${seg(id)}/reject`, body });
  }
  /** Carries out a natural-language command over the user's memory. */
  manage(request: S["ManageRequest"]): Promise<S["ManageReply"]> {
    return this.json({ method: "POST", path: "/v1/manage", body: request });
  }

  // Knowledge graph
  /** A user's entities. */
  entities(params: Params = {}): Promise<S["GraphEntities"]> {
    return this.json({ method: "GET", path: "/v1/graph/entities", params });
  }
  /** The relations matching a triple pattern, or around an entity. */
  relations(params: Params = {}): Promise<S["GraphRelations"]> {
    return this.json({ method: "GET", path: "/v1/graph/relations", params });
  }
  /** Merges the entity `other` into `keep`. */
  mergeEntities(request: S["GraphMerge"]): Promise<S["GraphEntity"]> {
    return this.json({ method: "POST", path: "/v1/graph/entities/merge", body: request });
  }

  // Analytics and clusters
  analytics(params: Params = {}): Promise<S["Analytics"]> {
    return this.json({ method: "GET", path: "/v1/analytics", params });
  }
  similarity(params: Params = {}): Promise<S["Similarity"]> {
    return this.json({ method: "GET", path: "/v1/analytics/similarity", params });
  }
  clusters(params: Params = {}): Promise<S["Clusters"]> {
    return this.json({ method: "GET", path: "/v1/clusters", params });
  }
  clusterMemories(cluster: number, params: Params = {}): Promise<MemoryPage> {
    return this.json({ method: "GET", path: `/v1/clusters/${seg(cluster)}/memories`, params });
  }

  // Operations
  health(): Promise<Health> {
    return this.json({ method: "GET", path: "/healthz" });
  }
  ready(): Promise<Health> {
    return this.json({ method: "GET", path: "/readyz" });
  }
  async metrics(): Promise<string> {
    return (await this.send({ method: "GET", path: "/metrics" })).text();
  }
  /** What the caller's tenant holds; with `namespace` or `user_id`, their memories summed up in `summary`. */
  stats(params: { namespace?: string; user_id?: string } = {}): Promise<Stats> {
    return this.json({ method: "GET", path: "/v1/stats", params });
  }
  async jobs(): Promise<S["Job"][]> {
    return (await this.json<S["Jobs"]>({ method: "GET", path: "/v1/jobs" })).items;
  }
  job(id: string): Promise<S["Job"]> {
    return this.json({ method: "GET", path: `/v1/jobs/${seg(id)}` });
  }
  reindex(request: S["ReindexRequest"] = {}): Promise<S["Job"]> {
    return this.json({ method: "POST", path: "/v1/reindex", body: request });
  }
  maintain(): Promise<S["Maintained"]> {
    return this.json({ method: "POST", path: "/v1/maintain" });
  }
  maintenance(request: S["MaintenanceRequest"] = {}): Promise<S["MaintenanceReport"] | S["Job"]> {
    return this.json({ method: "POST", path: "/v1/maintenance", body: request });
  }
  purge(): Promise<S["Purged"]> {
    return this.json({ method: "POST", path: "/v1/purge" });
  }

  // Administration
  async listKeys(): Promise<S["KeyInfo"][]> {
    return (await this.json<S["KeyList"]>({ method: "GET", path: "/v1/admin/keys" })).keys;
  }
  createKey(request: S["NewKey"]): Promise<S["CreatedKey"]> {
    return this.json({ method: "POST", path: "/v1/admin/keys", body: request });
  }
  async revokeKey(id: string): Promise<void> {
    await this.send({ method: "DELETE", path: `/v1/admin/keys/${seg(id)}` });
  }
  async snapshots(): Promise<S["Snapshot"][]> {
    return (await this.json<S["SnapshotList"]>({ method: "GET", path: "/v1/admin/snapshots" })).snapshots;
  }
  createSnapshot(): Promise<S["Snapshot"]> {
    return this.json({ method: "POST", path: "/v1/admin/snapshots" });
  }
  restoreSnapshot(id: string): Promise<S["Restored"]> {
    return this.json({ method: "POST", path: `/v1/admin/snapshots/${seg(id)}/restore` });
  }
}

/** Each method of `Client` and the OpenAPI operation it calls (a test checks every operation
 * of docs/openapi.json is here). */
export const OPERATIONS: Record<string, string> = {
  remember: "create_memory", rememberMany: "create_memories", recall: "recall", get: "get_memory",
  update: "update_memory", forget: "delete_memory", forgetAll: "delete_memories", list: "list_memories",
  history: "memory_history", accesses: "memory_accesses", restore: "restore_memory", similar: "similar", extract: "extract_memories",
  kvSet: "kv_set", kvGet: "kv_get", kvHas: "kv_has", kvDelete: "kv_forget", kvList: "kv_all", kvFlush: "kv_flush",
  conversations: "list_conversations", conversation: "get_conversation", appendMessages: "append_messages", popMessage: "pop_message",
  deleteConversation: "delete_conversation", endConversation: "end_conversation", chat: "chat",
  chatStream: "chat_stream", chatCompletions: "chat_completions", proposals: "list_proposals",
  confirmProposal: "confirm_proposal", rejectProposal: "reject_proposal", manage: "manage",
  entities: "graph_entities", relations: "graph_relations", mergeEntities: "graph_merge",
  analytics: "analytics", similarity: "similarity", clusters: "clusters", clusterMemories: "cluster_memories",
  health: "healthz", ready: "readyz", metrics: "metrics", stats: "stats", jobs: "jobs", job: "job",
  reindex: "reindex", maintain: "maintain", maintenance: "maintenance", purge: "purge",
  listKeys: "list_keys", createKey: "create_key", revokeKey: "revoke_key", snapshots: "list_snapshots",
  createSnapshot: "create_snapshot", restoreSnapshot: "restore_snapshot",
};
