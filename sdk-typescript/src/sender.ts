// Background delivery of trace events, scores and finishes: a bounded in-memory queue drained by one sender
// that posts POST /api/v1/ingest batches (≤ batchMaxEvents, ≤ batchMaxBytes), retrying network errors, 408,
// 409 (a lost race on a unique key), 429 and 5xx with exponential backoff and jitter. Event and score ids are
// client-made, so a retried batch is stored once. A rollout's finish is queued behind its events and rides
// in the same batch or a later one; the server applies a batch's finishes after its events and scores, so
// the events are never refused as "after finish", and a re-sent finish is answered "duplicate".
//
// Nothing here throws into the caller: problems go to the logger, once per kind.

import type { Settings } from "./config.js";
import { OnceLogger } from "./errors.js";
import { Transport, backoff, describe, neverSent, readProblem, retryAfterMs } from "./http.js";
import { onBeforeExit, startTimer, type Timer } from "./platform.js";
import type { IngestResult, RolloutOut } from "./types.js";

const RETRY_STATUS = new Set([408, 409, 429, 500, 502, 503, 504]);
/** Answers after which a batch surely was not stored: refused before any work was done. */
const NOT_STORED = new Set([409, 429, 503]);
const BATCH_OVERHEAD = 48; // {"events":[],"scores":[],"finishes":[]}
const READ_BACKS = 4; // finished rollouts read back at once

type ItemType = "event" | "score" | "finish";
/** What became of a finish: the server's answer, or "dropped" when it never got one. */
type FinishOutcome = "created" | "duplicate" | "rejected" | "dropped";

interface Item {
  type: ItemType;
  rolloutId: string;
  json: string;
  bytes: number;
  /** A finish: told what became of it. */
  settled?: (outcome: FinishOutcome, reason?: string) => void;
  /** A finish: an earlier try may have been stored though its answer was lost. */
  mayHaveLanded?: boolean;
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
  /** Items (events, scores and finishes) waiting or in flight. */
  pending: number;
  /** Events and scores the server stored (created or duplicate). */
  delivered: number;
  /** Rollouts this client finished. */
  finished: number;
  /** Items the server refused one by one (unknown or finished rollout, invalid item). */
  rejected: number;
  /** Items given up on: queue full, too large, shut down before delivery, or a non-retryable error. */
  dropped: number;
}

export class Sender {
  private readonly log: OnceLogger;
  private queue: Item[] = [];
  private head = 0;
  private readonly idleWaiters = new Set<() => void>();
  private readBacks = 0;
  private readonly readBackQueue: Array<() => void> = [];
  private readonly sleepers = new Set<Sleeper>();
  private linger: Timer | undefined;
  private pumping = false;
  private waiting = 0;
  private closed = false;
  private abandoned = false;
  private exitFlushing = false;
  private readonly unhook: () => void;
  private failing = false;
  readonly stats: SenderStats = { pending: 0, delivered: 0, finished: 0, rejected: 0, dropped: 0 };

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
      this.push({ type, rolloutId, json, bytes });
      return true;
    } catch (error) {
      this.stats.dropped++;
      this.log.once("enqueue", `could not queue a ${type}: ${describe(error)}`);
      return false;
    }
  }

  private push(item: Item): void {
    this.queue.push(item);
    this.stats.pending++;
    this.kick(false);
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

  /** Items are done: stored, refused or given up. */
  private settle(items: Item[]): void {
    this.stats.pending -= items.length;
  }

  private drop(items: Item[], reason: string, key = "dropped"): void {
    if (items.length === 0) return;
    this.stats.dropped += items.length;
    this.log.once(key, `${items.length} item(s) could not be delivered and are dropped: ${reason}`);
    for (const item of items) item.settled?.("dropped", reason);
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
    const lists: Record<ItemType, string[]> = { event: [], score: [], finish: [] };
    for (const item of items) lists[item.type].push(item.json);
    return `{"events":[${lists.event.join(",")}],"scores":[${lists.score.join(",")}],` +
      `"finishes":[${lists.finish.join(",")}]}`;
  }

  /** A try of `items` ended without an answer saying what was stored. */
  private unanswered(items: Item[], stored: boolean): void {
    if (!stored) return;
    for (const item of items) if (item.type === "finish") item.mayHaveLanded = true;
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
        this.unanswered(items, !neverSent(error));
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
        this.unanswered(items, !NOT_STORED.has(response.status));
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
          for (const item of refused) item.settled?.("rejected", detail);
          this.settle(refused);
          items = items.filter((_, i) => !bad.has(i));
          continue;
        }
      }
      this.drop(items, `the server answered ${response.status}: ${detail}`, `status-${response.status}`);
      return;
    }
  }

  /** Which items a 422's errors name ("events.3.role", "body.finishes.0.status"), as indexes into `items`. */
  private invalidItems(items: Item[], errors: Array<{ field?: string }> | undefined): Set<number> {
    const positions: Record<ItemType, number[]> = { event: [], score: [], finish: [] };
    items.forEach((item, i) => positions[item.type].push(i));
    const lists: Record<string, ItemType> = { events: "event", scores: "score", finishes: "finish" };
    const bad = new Set<number>();
    for (const error of errors ?? []) {
      const match = /(?:^|\.)(events|scores|finishes)\.(\d+)(?:\.|$)/.exec(error.field ?? "");
      if (!match) continue;
      const index = positions[lists[match[1]!]!][Number(match[2])];
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
    const finishes = items.filter((item) => item.type === "finish");
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
    this.stats.delivered += events.length + scores.length - rejected;
    const answers = new Map((result?.finishes ?? []).map((answer) => [answer.index, answer]));
    finishes.forEach((item, index) => {
      // A 2xx committed the batch: a finish it does not mention was applied.
      const answer = answers.get(index);
      item.settled?.(answer?.status ?? "created", answer?.error ?? undefined);
    });
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
    return this.size === 0 && !this.pumping && this.stats.pending === 0;
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

  /** Resolve when every queued item (events, scores, finishes) is done; false if `timeoutMs` passes first. */
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
        }
      })();
      return await this.withTimeout(done, timeoutMs);
    } finally {
      release();
    }
  }

  /**
   * Queue a rollout's finish behind its events; it goes out in an ingest batch (retried like the events).
   * A "duplicate" answer after a try that may have been stored means that try finished it. Resolves with
   * the finished rollout as stored (read back once the server confirms), or null when it could not be
   * finished (reported to the logger) or read back.
   */
  finish(rolloutId: string, body: Record<string, unknown>): Promise<RolloutOut | null> {
    if (this.closed) {
      this.stats.dropped++;
      this.log.once("closed-finish", `rollout ${rolloutId} was finished after client.shutdown(); not sent`);
      return Promise.resolve(null);
    }
    let json = safeStringify({ ...body, rollout_id: rolloutId });
    if (utf8Length(json) + BATCH_OVERHEAD > this.settings.batchMaxBytes) {
      this.log.once("finish-too-large", `the output of rollout ${rolloutId} is larger than one ingest batch; ` +
        "it is replaced by a note (store big outputs as files)");
      json = safeStringify({ ...body, rollout_id: rolloutId,
        output: `<output dropped by the SDK: over the ${this.settings.batchMaxBytes}-byte batch limit>` });
    }
    const release = this.hold();
    return new Promise<FinishOutcome>((resolve) => {
      const item: Item = { type: "finish", rolloutId, json, bytes: utf8Length(json) };
      item.settled = (outcome, reason) => {
        // "duplicate" means it was finished already: by an earlier try of ours, or by someone else.
        if (outcome === "duplicate" && !item.mayHaveLanded) {
          outcome = "rejected";
          reason = "it was already finished (a rollout finishes once)";
        }
        if (outcome !== "created" && outcome !== "duplicate") {
          this.log.once(`finish-${outcome}`, `could not finish rollout ${rolloutId}: ${reason ?? outcome}`);
        }
        resolve(outcome);
      };
      // A finish is never dropped for a full queue: it is small, and losing it would leave the rollout running.
      this.push(item);
      // Someone usually awaits it (withRollout does): send now rather than after the linger. While a batch is
      // in flight this changes nothing, so finishes made meanwhile still travel together.
      this.kick(true);
    })
      .then(async (outcome) => {
        release();
        if (outcome !== "created" && outcome !== "duplicate") return null;
        this.stats.finished++;
        return await this.readBack(rolloutId);
      })
      .catch((error) => {
        release();
        this.log.once("finish-bug", `finishing ${rolloutId} failed: ${describe(error)}`);
        return null;
      });
  }

  /** The finished rollout as stored; a few at a time, so a thousand finishes do not become a thousand GETs at once. */
  private async readBack(rolloutId: string): Promise<RolloutOut | null> {
    if (this.readBacks >= READ_BACKS) await new Promise<void>((resolve) => this.readBackQueue.push(resolve));
    this.readBacks++;
    try {
      return await this.transport.json<RolloutOut>("GET", `/api/v1/rollouts/${encodeURIComponent(rolloutId)}`, {
        query: { events_limit: 0 },
      });
    } catch (error) {
      this.log.once("read-back", `rollout ${rolloutId} is finished but could not be read back: ${describe(error)}`);
      return null;
    } finally {
      this.readBacks--;
      this.readBackQueue.shift()?.();
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
