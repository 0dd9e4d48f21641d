// Background delivery of trace events and scores: a bounded in-memory queue drained by one sender that
// posts POST /api/v1/ingest batches (≤ batchMaxEvents, ≤ batchMaxBytes), retrying network errors, 408,
// 429 and 5xx with exponential backoff and jitter. Event ids are client-made, so a retried batch is stored
// once. Finishing a rollout goes through here too: its queued events are delivered first, because the
// server refuses events for a finished rollout.
//
// Nothing here throws into the caller: problems go to the logger, once per kind.

import type { Settings } from "./config.js";
import { OnceLogger } from "./errors.js";
import { Transport, backoff, describe, neverSent, readProblem, retryAfterMs } from "./http.js";
import { onBeforeExit, startTimer, type Timer } from "./platform.js";
import type { IngestResult, RolloutOut } from "./types.js";

const RETRY_STATUS = new Set([408, 429, 500, 502, 503, 504]);
const BATCH_OVERHEAD = 32; // {"events":[],"scores":[]}

interface Item {
  type: "event" | "score";
  rolloutId: string;
  json: string;
  bytes: number;
}

interface Sleeper {
  timer: Timer;
  resolve: () => void;
}

/** UTF-8 length of a string without allocating its encoding. */
function utf8Length(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) continue;
    if (code < 0x800) bytes += 1;
    else if (code >= 0xd800 && code <= 0xdbff) {
      bytes += 2; // a surrogate pair: 4 bytes for 2 code units
      i++;
    } else bytes += 2;
  }
  return bytes;
}

/** JSON that survives cycles, BigInt and throwing toJSON: telemetry must never fail on odd values. */
export function safeStringify(value: unknown): string {
  try {
    return JSON.stringify(value, (_key, v) => (typeof v === "bigint" ? v.toString() : v)) ?? "null";
  } catch {
    const seen = new WeakSet<object>();
    try {
      return (
        JSON.stringify(value, (_key, v) => {
          if (typeof v === "bigint") return v.toString();
          if (v && typeof v === "object") {
            if (seen.has(v)) return "[Circular]";
            seen.add(v);
          }
          return v;
        }) ?? "null"
      );
    } catch (error) {
      return JSON.stringify({ unserializable: String(error) });
    }
  }
}

export interface SenderStats {
  /** Items (events and scores) waiting or in flight. */
  pending: number;
  /** Items the server stored (created or duplicate). */
  delivered: number;
  /** Items the server refused one by one (unknown or finished rollout, invalid item). */
  rejected: number;
  /** Items given up on: queue full, too large, shut down before delivery, or a non-retryable error. */
  dropped: number;
}

export class Sender {
  private readonly log: OnceLogger;
  private queue: Item[] = [];
  private head = 0;
  private readonly pending = new Map<string, number>();
  private readonly rolloutWaiters = new Map<string, Set<() => void>>();
  private readonly idleWaiters = new Set<() => void>();
  private readonly finishes = new Set<Promise<unknown>>();
  private readonly sleepers = new Set<Sleeper>();
  private linger: Timer | undefined;
  private pumping = false;
  private waiting = 0;
  private closed = false;
  private abandoned = false;
  private exitFlushing = false;
  private readonly unhook: () => void;
  private failing = false;
  readonly stats: SenderStats = { pending: 0, delivered: 0, rejected: 0, dropped: 0 };

  constructor(
    private readonly transport: Transport,
    private readonly settings: Settings,
  ) {
    this.log = new OnceLogger(settings.logger);
    // A weak reference: a client dropped without shutdown() must not be kept alive by the exit hook.
    const self = new WeakRef(this);
    this.unhook = onBeforeExit(() => self.deref()?.beforeExit());
  }

  get logger(): OnceLogger {
    return this.log;
  }

  // -- the queue -------------------------------------------------------------------------------------------

  private get size(): number {
    return this.queue.length - this.head;
  }

  /** Queue one event or score (a plain object without rollout_id). Never throws; false when dropped. */
  enqueue(type: "event" | "score", rolloutId: string, body: Record<string, unknown>): boolean {
    try {
      if (this.closed) {
        this.stats.dropped++;
        this.log.once("closed", "an event was recorded after client.shutdown(); it is dropped");
        return false;
      }
      if (this.size >= this.settings.maxQueueSize) {
        this.stats.dropped++;
        this.log.once(
          "queue-full",
          `the delivery queue is full (${this.settings.maxQueueSize} items): new events are dropped until ` +
            `the server at ${this.settings.baseUrl} takes the backlog`,
        );
        return false;
      }
      const json = safeStringify({ ...body, rollout_id: rolloutId });
      const bytes = utf8Length(json);
      if (bytes + BATCH_OVERHEAD > this.settings.batchMaxBytes) {
        this.stats.dropped++;
        this.log.once(
          "too-large",
          `a ${type} of ${bytes} bytes for ${rolloutId} is larger than one ingest batch ` +
            `(${this.settings.batchMaxBytes} bytes) and is dropped; store big payloads as files`,
        );
        return false;
      }
      this.queue.push({ type, rolloutId, json, bytes });
      this.pending.set(rolloutId, (this.pending.get(rolloutId) ?? 0) + 1);
      this.stats.pending++;
      this.kick(false);
      return true;
    } catch (error) {
      this.stats.dropped++;
      this.log.once("enqueue", `could not queue a ${type}: ${describe(error)}`);
      return false;
    }
  }

  private take(): Item[] {
    const batch: Item[] = [];
    let bytes = BATCH_OVERHEAD;
    while (this.head < this.queue.length && batch.length < this.settings.batchMaxEvents) {
      const item = this.queue[this.head]!;
      if (batch.length > 0 && bytes + item.bytes + 1 > this.settings.batchMaxBytes) break;
      batch.push(item);
      bytes += item.bytes + 1;
      this.head++;
    }
    if (this.head > 4096 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    return batch;
  }

  /** Items are done (stored, refused or given up): release whoever waits on their rollouts. */
  private settle(items: Item[]): void {
    for (const item of items) {
      this.stats.pending--;
      const left = (this.pending.get(item.rolloutId) ?? 1) - 1;
      if (left > 0) {
        this.pending.set(item.rolloutId, left);
        continue;
      }
      this.pending.delete(item.rolloutId);
      const waiters = this.rolloutWaiters.get(item.rolloutId);
      if (waiters) {
        this.rolloutWaiters.delete(item.rolloutId);
        for (const resolve of waiters) resolve();
      }
    }
  }

  private drop(items: Item[], reason: string, key = "dropped"): void {
    if (items.length === 0) return;
    this.stats.dropped += items.length;
    this.log.once(key, `${items.length} item(s) could not be delivered and are dropped: ${reason}`);
    this.settle(items);
  }

  // -- the pump ----------------------------------------------------------------------------------------------

  private kick(now: boolean): void {
    if (this.pumping || this.size === 0) return;
    if (now || this.size >= this.settings.batchMaxEvents || this.settings.flushIntervalMs === 0) {
      this.linger?.cancel();
      this.linger = undefined;
      void this.pump();
    } else if (!this.linger) {
      this.linger = startTimer(
        this.settings.flushIntervalMs,
        () => {
          this.linger = undefined;
          void this.pump();
        },
        this.waiting > 0,
      );
    }
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.size > 0) {
        const batch = this.take();
        try {
          await this.deliver(batch);
        } catch (error) {
          // deliver() handles its own failures; this is a bug guard so the pump never dies.
          this.drop(batch, `unexpected error: ${describe(error)}`, "pump");
        }
      }
    } finally {
      this.pumping = false;
      this.checkIdle();
    }
  }

  private body(items: Item[]): string {
    const events: string[] = [];
    const scores: string[] = [];
    for (const item of items) (item.type === "event" ? events : scores).push(item.json);
    return `{"events":[${events.join(",")}],"scores":[${scores.join(",")}]}`;
  }

  /** Deliver one batch, retrying until it is stored, refused, or the sender is abandoned. */
  private async deliver(batch: Item[]): Promise<void> {
    let items = batch;
    for (let tries = 0; items.length > 0; ) {
      if (this.abandoned) {
        this.drop(items, "the client shut down before the server took them", "abandoned");
        return;
      }
      let response: Response;
      try {
        response = await this.transport.once("POST", "/api/v1/ingest", {
          body: this.body(items),
          headers: { "content-type": "application/json" },
        });
      } catch (error) {
        this.failing = true;
        this.log.once(
          "network",
          `cannot deliver events to ${this.settings.baseUrl} (${describe(error)}); retrying in the background`,
        );
        await this.pause(tries++);
        continue;
      }
      if (response.ok) {
        await this.accept(items, response);
        return;
      }
      if (RETRY_STATUS.has(response.status)) {
        this.failing = true;
        this.log.once(`status-${response.status}`, `the server answered ${response.status} to an event batch; retrying`);
        const wait = retryAfterMs(response);
        await response.body?.cancel().catch(() => undefined);
        await this.pause(tries++, wait);
        continue;
      }
      const { problem, text } = await readProblem(response);
      const detail = problem?.detail ?? text ?? "";
      if (response.status === 413 && items.length > 1) {
        const half = Math.ceil(items.length / 2);
        await this.deliver(items.slice(0, half));
        items = items.slice(half);
        continue;
      }
      if (response.status === 422 && items.length > 1) {
        // One schema-invalid item refuses the whole request: set the named ones aside, send the rest.
        const bad = this.invalidItems(items, problem?.errors);
        if (bad.size > 0 && bad.size < items.length) {
          const refused = items.filter((_, i) => bad.has(i));
          this.stats.rejected += refused.length;
          this.log.once("invalid", `the server refused ${refused.length} invalid item(s): ${detail}`);
          this.settle(refused);
          items = items.filter((_, i) => !bad.has(i));
          continue;
        }
      }
      this.drop(items, `the server answered ${response.status}: ${detail}`, `status-${response.status}`);
      return;
    }
  }

  /** Which items a 422's errors name ("events.3.role", "body.scores.0.value"), as indexes into `items`. */
  private invalidItems(items: Item[], errors: Array<{ field?: string }> | undefined): Set<number> {
    const positions: Record<"event" | "score", number[]> = { event: [], score: [] };
    items.forEach((item, i) => positions[item.type].push(i));
    const bad = new Set<number>();
    for (const error of errors ?? []) {
      const match = /(?:^|\.)(events|scores)\.(\d+)(?:\.|$)/.exec(error.field ?? "");
      if (!match) continue;
      const index = positions[match[1] === "events" ? "event" : "score"][Number(match[2])];
      if (index !== undefined) bad.add(index);
    }
    return bad;
  }

  private async accept(items: Item[], response: Response): Promise<void> {
    if (this.failing) {
      this.failing = false;
      this.log.reset("network");
      this.settings.logger.debug?.("rollout: delivery resumed");
    }
    let result: IngestResult | undefined;
    try {
      result = (await response.json()) as IngestResult;
    } catch {
      // 2xx means committed; a garbled answer does not change that
    }
    const events = items.filter((item) => item.type === "event");
    const scores = items.filter((item) => item.type === "score");
    let rejected = 0;
    for (const [list, results] of [
      [events, result?.events],
      [scores, result?.scores],
    ] as const) {
      for (const outcome of results ?? []) {
        if (outcome.status !== "rejected") continue;
        rejected++;
        const item = list[outcome.index];
        this.log.once(
          `rejected-${outcome.error?.includes("already") ? "finished" : "other"}`,
          `the server refused an item for ${item?.rolloutId ?? "a rollout"}: ${outcome.error ?? "no reason given"}`,
        );
      }
    }
    this.stats.rejected += rejected;
    this.stats.delivered += items.length - rejected;
    this.settle(items);
  }

  // -- waiting -----------------------------------------------------------------------------------------------

  /** Sleep before retry `tries`; cut short by flush() and shutdown. Keeps Node alive only if someone waits. */
  private pause(tries: number, explicitMs?: number): Promise<void> {
    const ms = explicitMs ?? backoff(tries, this.settings.minBackoffMs, this.settings.maxBackoffMs);
    return new Promise((resolve) => {
      const sleeper: Sleeper = {
        resolve: () => {
          sleeper.timer.cancel();
          this.sleepers.delete(sleeper);
          resolve();
        },
        // At least 10 ms, so a server answering "retry after 0" (or maxBackoffMs: 0) is not hammered.
        timer: startTimer(Math.max(10, Math.min(ms, this.settings.maxBackoffMs * 2)), () => sleeper.resolve(),
          this.waiting > 0),
      };
      this.sleepers.add(sleeper);
    });
  }

  private wake(): void {
    for (const sleeper of [...this.sleepers]) sleeper.resolve();
  }

  /** Someone awaits delivery: timers must keep the process alive until it is done. */
  private hold(): () => void {
    this.waiting++;
    this.linger?.ref();
    for (const sleeper of this.sleepers) sleeper.timer.ref();
    let released = false;
    return () => {
      if (!released) {
        released = true;
        this.waiting--;
      }
    };
  }

  private get idle(): boolean {
    return this.size === 0 && !this.pumping && this.finishes.size === 0 && this.stats.pending === 0;
  }

  private checkIdle(): void {
    if (!this.idle) return;
    for (const resolve of [...this.idleWaiters]) resolve();
    this.idleWaiters.clear();
  }

  private withTimeout(promise: Promise<void>, timeoutMs: number | undefined): Promise<boolean> {
    if (timeoutMs === undefined) return promise.then(() => true);
    return new Promise((resolve) => {
      const timer = startTimer(timeoutMs, () => resolve(false), true);
      void promise.then(() => {
        timer.cancel();
        resolve(true);
      });
    });
  }

  /** Resolve when every queued item and pending finish is done; false if `timeoutMs` passes first. */
  async flush(timeoutMs?: number): Promise<boolean> {
    const release = this.hold();
    try {
      this.kick(true);
      this.wake();
      const done = (async () => {
        while (!this.idle) {
          await new Promise<void>((resolve) => {
            this.idleWaiters.add(resolve);
            this.checkIdle();
          });
          if (this.finishes.size > 0) await Promise.allSettled([...this.finishes]);
        }
      })();
      return await this.withTimeout(done, timeoutMs);
    } finally {
      release();
    }
  }

  /** Resolve when this rollout's queued events and scores are done (or the sender is abandoned). */
  flushRollout(rolloutId: string, timeoutMs?: number): Promise<boolean> {
    if (!this.pending.has(rolloutId)) return Promise.resolve(true);
    const release = this.hold();
    const done = new Promise<void>((resolve) => {
      let waiters = this.rolloutWaiters.get(rolloutId);
      if (!waiters) this.rolloutWaiters.set(rolloutId, (waiters = new Set()));
      waiters.add(resolve);
    });
    this.kick(true);
    return this.withTimeout(done, timeoutMs).finally(release);
  }

  /**
   * Finish a rollout after its queued events: POST /rollouts/{id}/finish, retried on network errors,
   * 408, 429 and 5xx. A 409 after a try that may have reached the server means that try finished it.
   * Resolves with the finished rollout, or null when it could not be finished (reported to the logger).
   */
  finish(rolloutId: string, body: Record<string, unknown>): Promise<RolloutOut | null> {
    if (this.closed) {
      this.stats.dropped++;
      this.log.once("closed-finish", `rollout ${rolloutId} was finished after client.shutdown(); not sent`);
      return Promise.resolve(null);
    }
    const release = this.hold();
    const task = (async () => {
      await this.flushRollout(rolloutId);
      return await this.postFinish(rolloutId, body);
    })()
      .catch((error) => {
        this.log.once("finish-bug", `finishing ${rolloutId} failed: ${describe(error)}`);
        return null;
      })
      .finally(() => {
        release();
        this.finishes.delete(task);
        this.checkIdle();
      });
    this.finishes.add(task);
    return task;
  }

  private async postFinish(rolloutId: string, body: Record<string, unknown>): Promise<RolloutOut | null> {
    const path = `/api/v1/rollouts/${encodeURIComponent(rolloutId)}/finish`;
    let mayHaveLanded = false;
    for (let tries = 0; ; ) {
      if (this.abandoned) {
        this.log.once("finish-abandoned", `rollout ${rolloutId} was not finished: the client shut down first`);
        return null;
      }
      let response: Response;
      try {
        response = await this.transport.once("POST", path, { json: body });
      } catch (error) {
        mayHaveLanded ||= !neverSent(error);
        this.log.once(
          "finish-network",
          `cannot finish rollout ${rolloutId} at ${this.settings.baseUrl} (${describe(error)}); retrying`,
        );
        await this.pause(tries++);
        continue;
      }
      if (response.ok) return (await response.json().catch(() => null)) as RolloutOut | null;
      if (response.status === 409 && mayHaveLanded) {
        // An earlier try finished it and its answer was lost on the way back: that is success.
        await response.body?.cancel().catch(() => undefined);
        try {
          return await this.transport.json<RolloutOut>("GET", `/api/v1/rollouts/${encodeURIComponent(rolloutId)}`, {
            query: { events_limit: 0 },
          });
        } catch {
          return null;
        }
      }
      if (RETRY_STATUS.has(response.status)) {
        mayHaveLanded ||= response.status !== 429;
        const wait = retryAfterMs(response);
        await response.body?.cancel().catch(() => undefined);
        await this.pause(tries++, wait);
        continue;
      }
      const { problem, text } = await readProblem(response);
      this.log.once(
        `finish-${response.status}`,
        `could not finish rollout ${rolloutId}: the server answered ${response.status}: ${problem?.detail ?? text ?? ""}`,
      );
      return null;
    }
  }

  // -- ending ------------------------------------------------------------------------------------------------

  /** Deliver what is queued (up to `timeoutMs`), then refuse new items and give up on the rest. */
  async shutdown(timeoutMs = 10_000): Promise<boolean> {
    this.closed = true;
    const ok = await this.flush(timeoutMs);
    if (!ok) this.abandon();
    this.unhook();
    return ok;
  }

  private abandon(): void {
    this.abandoned = true;
    const rest = this.queue.slice(this.head);
    this.queue = [];
    this.head = 0;
    this.drop(rest, "the client shut down before the server took them", "abandoned");
    this.wake();
    for (const [rolloutId, waiters] of this.rolloutWaiters) {
      this.rolloutWaiters.delete(rolloutId);
      for (const resolve of waiters) resolve();
    }
  }

  private beforeExit(): void {
    if (this.idle || this.abandoned) return;
    if (this.exitFlushing) return;
    this.exitFlushing = true;
    void this.flush(this.settings.exitFlushTimeoutMs).then((ok) => {
      this.exitFlushing = false;
      if (!ok) {
        this.log.once(
          "exit",
          `the process is exiting with ${this.stats.pending} event(s) undelivered after ` +
            `${this.settings.exitFlushTimeoutMs} ms; call await client.flush() before exit`,
        );
        this.abandon();
      }
    });
  }
}
