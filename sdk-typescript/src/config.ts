// Client settings: explicit options, then ROLLOUT_* environment variables (Node), then defaults.

import { RolloutError, consoleLogger, type Logger } from "./errors.js";
import { env } from "./platform.js";
import type { PriceTable } from "./prices.js";

export const DEFAULT_BASE_URL = "http://127.0.0.1:8000";

export interface ClientOptions {
  /** Server root, e.g. "https://rollout.example.com". Default: $ROLLOUT_BASE_URL, else http://127.0.0.1:8000. */
  baseUrl?: string;
  /** API key (rk_…). Default: $ROLLOUT_API_KEY. */
  apiKey?: string;
  /** A fetch implementation (default: the global one). */
  fetch?: typeof fetch;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /** Per-request timeout for JSON calls, in ms (default 30 000; $ROLLOUT_TIMEOUT in seconds). */
  timeoutMs?: number;
  /** How long blocking calls keep retrying while the server is unreachable, in ms (default 30 000). */
  retryWindowMs?: number;
  /** Events and scores held in memory awaiting delivery; beyond it new ones are dropped (default 100 000). */
  maxQueueSize?: number;
  /** At most this many events per ingest request (default and server maximum: 1000). */
  batchMaxEvents?: number;
  /** At most this many bytes per ingest request (default 3.5 MB; the server takes 4 MiB). */
  batchMaxBytes?: number;
  /** How long the sender waits to fill a batch before posting it, in ms (default 200). */
  flushIntervalMs?: number;
  /** First retry delay of the background sender, in ms (default 100); doubles per failure, with jitter. */
  minBackoffMs?: number;
  /** Longest delay between retries of the background sender, in ms (default 5 000). */
  maxBackoffMs?: number;
  /** On Node, how long to keep delivering queued events when the process is about to exit (default 10 000). */
  exitFlushTimeoutMs?: number;
  /** Folder for `materializeFiles()` on Node (default $ROLLOUT_FILES_CACHE_DIR, else ~/.cache/rollout/files). */
  filesCacheDir?: string;
  /** Where telemetry problems are reported (default: console.warn, once per kind of problem). */
  logger?: Logger;
  /** Prices per million tokens used for `llm_call` cost when none is given; merged over the built-in table. */
  prices?: PriceTable;
}

export interface Settings {
  baseUrl: string;
  apiKey: string | undefined;
  fetch: typeof fetch;
  headers: Record<string, string>;
  timeoutMs: number;
  retryWindowMs: number;
  maxQueueSize: number;
  batchMaxEvents: number;
  batchMaxBytes: number;
  flushIntervalMs: number;
  minBackoffMs: number;
  maxBackoffMs: number;
  exitFlushTimeoutMs: number;
  filesCacheDir: string | undefined;
  logger: Logger;
  prices: PriceTable | undefined;
}

function positive(name: string, value: number | undefined, fallback: number, max = Infinity): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    throw new RolloutError(`option ${name} must be a non-negative number of ms, not ${String(value)}`);
  }
  return Math.min(value, max);
}

export function resolveSettings(options: ClientOptions = {}): Settings {
  const baseUrl = (options.baseUrl ?? env("ROLLOUT_BASE_URL") ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
  try {
    new URL(baseUrl);
  } catch {
    throw new RolloutError(`baseUrl ${JSON.stringify(baseUrl)} is not a URL; pass e.g. "http://127.0.0.1:8000"`);
  }
  const fetchImpl = options.fetch ?? (globalThis.fetch as typeof fetch | undefined);
  if (typeof fetchImpl !== "function") {
    throw new RolloutError("no global fetch: use Node 20 or newer, or pass options.fetch");
  }
  const envTimeout = Number(env("ROLLOUT_TIMEOUT"));
  return {
    baseUrl,
    apiKey: options.apiKey ?? env("ROLLOUT_API_KEY"),
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    headers: { ...(options.headers ?? {}) },
    timeoutMs: positive("timeoutMs", options.timeoutMs, envTimeout > 0 ? envTimeout * 1000 : 30_000),
    retryWindowMs: positive("retryWindowMs", options.retryWindowMs, 30_000),
    maxQueueSize: positive("maxQueueSize", options.maxQueueSize, 100_000),
    batchMaxEvents: Math.max(1, positive("batchMaxEvents", options.batchMaxEvents, 1000, 1000)),
    batchMaxBytes: Math.max(1024, positive("batchMaxBytes", options.batchMaxBytes, 3_500_000, 4 * 1024 * 1024)),
    flushIntervalMs: positive("flushIntervalMs", options.flushIntervalMs, 200),
    minBackoffMs: positive("minBackoffMs", options.minBackoffMs, 100),
    maxBackoffMs: positive("maxBackoffMs", options.maxBackoffMs, 5_000),
    exitFlushTimeoutMs: positive("exitFlushTimeoutMs", options.exitFlushTimeoutMs, 10_000),
    filesCacheDir: options.filesCacheDir,
    logger: options.logger ?? consoleLogger,
    prices: options.prices,
  };
}
