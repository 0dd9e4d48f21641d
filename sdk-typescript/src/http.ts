// REST calls over fetch: auth, problem details into typed errors, and the retry rules.
//
// Retry rules, by what a repeat could do:
//  - "all": reads and idempotent writes (GET, finishing a run, starts carrying a client_key) retry network
//    errors, 408, 429 and 5xx.
//  - "connect": other writes that create something retry only when the request surely never reached the
//    server (connection refused) or was refused unprocessed (429, or 503 with Retry-After: the server's
//    database pool was exhausted); anything else could have been committed and a repeat would create a
//    second one.
//  - "none": one try.
// `retryConflict` also retries one 409: with an idempotency key in the body, a 409 is the server losing a
// race between two requests with the same key, and the repeat returns what the winner created.

import { RolloutApiError, RolloutConnectionError, type Problem } from "./errors.js";
import type { Settings } from "./config.js";

export type RetryMode = "all" | "connect" | "none";

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined | null>;
  json?: unknown;
  body?: BodyInit;
  headers?: Record<string, string>;
  retry?: RetryMode;
  /** Retry one 409 (the body carries an idempotency key). */
  retryConflict?: boolean;
  /** Per-try timeout in ms; 0 for none (streamed downloads). */
  timeoutMs?: number;
}

const RETRY_STATUS = new Set([408, 429, 500, 502, 503, 504]);

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Exponential backoff with full jitter: a random delay in [base·2^n / 2, base·2^n], capped. */
export function backoff(tries: number, minMs: number, maxMs: number): number {
  const ceiling = Math.min(maxMs, minMs * 2 ** Math.min(tries, 30));
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/** Seconds or an HTTP date from a Retry-After header, as ms; undefined when absent or odd. */
export function retryAfterMs(response: Response): number | undefined {
  const value = response.headers.get("retry-after");
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** The network error's code, as undici (Node's fetch) reports it in `cause`. */
export function networkCode(error: unknown): string | undefined {
  let current: any = error;
  for (let depth = 0; current && depth < 4; depth++) {
    if (typeof current.code === "string") return current.code;
    current = current.cause;
  }
  return undefined;
}

/** True when the request certainly did not reach the server, so repeating a non-idempotent write is safe. */
export function neverSent(error: unknown): boolean {
  const code = networkCode(error);
  return code === "ECONNREFUSED" || code === "UND_ERR_CONNECT_TIMEOUT";
}

export function describe(error: unknown): string {
  const code = networkCode(error);
  let message = error instanceof Error ? error.message : String(error);
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : "";
  if (cause && !message.includes(cause)) message = `${message}: ${cause}`;
  return code && !message.includes(code) ? `${message} (${code})` : message;
}

export async function readProblem(response: Response): Promise<{ problem?: Problem; text?: string }> {
  let text = "";
  try {
    text = await response.text();
  } catch {
    return {};
  }
  try {
    const parsed = JSON.parse(text);
    if (parsed && typeof parsed === "object") return { problem: parsed as Problem, text };
  } catch {
    // not JSON: keep the text
  }
  return { text };
}

export class Transport {
  constructor(readonly settings: Settings) {}

  /** Absolute URL for an API path ("/api/v1/…") or a URL the server handed out. */
  url(path: string, query?: RequestOptions["query"]): string {
    const url = /^https?:\/\//i.test(path) ? new URL(path) : new URL(this.settings.baseUrl + path);
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(key, String(value));
    }
    return url.toString();
  }

  headers(extra?: Record<string, string>): Record<string, string> {
    const headers: Record<string, string> = { accept: "application/json", ...this.settings.headers };
    if (this.settings.apiKey) headers.authorization = `Bearer ${this.settings.apiKey}`;
    return { ...headers, ...(extra ?? {}) };
  }

  /** One try, no status check. Network failures reject with the fetch error. */
  async once(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    const headers = this.headers(options.headers);
    let body = options.body;
    if (options.json !== undefined) {
      body = typeof options.json === "string" ? options.json : JSON.stringify(options.json);
      headers["content-type"] = "application/json";
    }
    const timeout = options.timeoutMs ?? this.settings.timeoutMs;
    const init: RequestInit & { duplex?: string } = { method, headers, body: body ?? null };
    if (timeout > 0) init.signal = AbortSignal.timeout(timeout);
    return this.settings.fetch(this.url(path, options.query), init);
  }

  /** A request with the retry rules above; non-2xx answers throw RolloutApiError. */
  async request(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    const mode = options.retry ?? (method === "GET" ? "all" : "none");
    const deadline = Date.now() + this.settings.retryWindowMs;
    let conflicts = options.retryConflict ? 1 : 0;
    for (let tries = 0; ; tries++) {
      let response: Response;
      try {
        response = await this.once(method, path, options);
      } catch (error) {
        const retryable = mode === "all" || (mode === "connect" && neverSent(error));
        const wait = backoff(tries, 200, 2_000);
        if (retryable && Date.now() + wait < deadline) {
          await sleep(wait);
          continue;
        }
        throw new RolloutConnectionError(
          `${method} ${path}: cannot reach ${this.settings.baseUrl}: ${describe(error)}` +
            (retryable ? ` (retried for ${Math.round(this.settings.retryWindowMs / 1000)} s)` : ""),
          { cause: error },
        );
      }
      if (response.ok) return response;
      const status = response.status;
      const overloaded = status === 503 && response.headers.has("retry-after");
      const retryable =
        (mode === "all" && RETRY_STATUS.has(status)) ||
        (mode === "connect" && (status === 429 || overloaded)) ||
        (status === 409 && conflicts-- > 0);
      const wait = retryAfterMs(response) ?? backoff(tries, 200, 2_000);
      if (retryable && Date.now() + wait < deadline) {
        await response.body?.cancel().catch(() => undefined);
        await sleep(wait);
        continue;
      }
      const { problem, text } = await readProblem(response);
      throw new RolloutApiError(method, path, response.status, problem, text);
    }
  }

  async json<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const response = await this.request(method, path, options);
    const text = await response.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /** Every item of a cursor-paged list endpoint, fetched page by page as the caller iterates. */
  async *paginate<T>(path: string, query: RequestOptions["query"] = {}): AsyncGenerator<T> {
    let cursor: string | null | undefined;
    do {
      const page = await this.json<{ items: T[]; next_cursor?: string | null }>("GET", path, {
        query: { ...query, cursor: cursor ?? undefined },
      });
      yield* page.items;
      cursor = page.next_cursor;
    } while (cursor);
  }
}
