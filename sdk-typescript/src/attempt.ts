// Recording one rollout's trace. Every event method builds a small object and queues it: no I/O, no
// exception for telemetry problems. `seq` is assigned here, per attempt, so the server keeps the order the
// caller saw whatever batch or retry an event travels in.

import { OnceLogger } from "./errors.js";
import { materializeToBlobs, materializeToDisk, cacheDir, type TaskFile } from "./files.js";
import type { Transport } from "./http.js";
import { currentContext, hasAsyncContext, isNode, isoNow, randomUUID, runWithContext, toIso } from "./platform.js";
import { costOf, normalizeUsage, type PriceTable, type Usage } from "./prices.js";
import { safeStringify, type Sender } from "./sender.js";
import type { Task, RunTask } from "./tasks.js";
import type { FinishStatus, MessageRole, RolloutOut } from "./types.js";

/** Common options of every event method. */
export interface EventOptions {
  /** Free-form metadata stored with the event. */
  metadata?: Record<string, unknown>;
  /** The span or call this event nests under (default: the enclosing `span()`). */
  parentId?: string;
}

export interface LlmCallOptions extends EventOptions {
  model?: string;
  /** Input messages (or prompt). */
  input?: unknown;
  /** Output message(s) or text. */
  output?: unknown;
  /** Token counts: input_tokens/output_tokens (or OpenAI's prompt_tokens/completion_tokens). */
  usage?: Record<string, unknown> | Usage;
  /** Dollar cost; looked up in the price table from model and usage when omitted. */
  cost?: number;
  toolCalls?: unknown;
  /** When the call started: a Date, ms since the epoch (Date.now()) or an ISO string. */
  startedAt?: Date | number | string;
  /** When it ended (default: now). */
  endedAt?: Date | number | string;
  /** Latency in ms, when startedAt is not known. */
  latencyMs?: number;
  name?: string;
  /** Extra body fields stored as sent. */
  [field: string]: unknown;
}

export interface FinishOptions {
  output?: unknown;
  /** Default: "failed" when `error` is given, else "succeeded". */
  status?: FinishStatus;
  error?: unknown;
  metadata?: Record<string, unknown>;
}

export interface ScoreOptions {
  comment?: string;
  dataType?: "number" | "boolean" | "category" | "text";
  source?: string;
  author?: string;
}

/** Where the running code is: which attempt and which span (kept across awaits on Node). */
interface Frame {
  attempt: Attempt;
  spanId?: string;
  outer?: Frame;
}

let lastStarted: Attempt | undefined;

/**
 * The attempt the running code belongs to: the one `withRollout()` (or `span()`) runs it in on Node,
 * else the attempt started most recently and not yet finished. `wrapOpenAI` records into it.
 */
export function currentAttempt(): Attempt | undefined {
  for (let frame = currentContext<Frame>(); frame; frame = frame.outer) {
    if (!frame.attempt.finished) return frame.attempt;
  }
  return lastStarted && !lastStarted.finished ? lastStarted : undefined;
}

/** Run `fn` with `attempt` as the current attempt (what `wrapOpenAI` and nested spans see). */
export function runInAttempt<R>(attempt: Attempt, fn: () => R): R {
  return runWithContext<Frame, R>({ attempt, outer: currentContext<Frame>() }, fn);
}

function errorText(error: unknown): string {
  if (error instanceof Error) return error.message ? `${error.name}: ${error.message}` : error.name;
  return typeof error === "string" ? error : safeStringify(error);
}

/** A JSON copy taken now, so later mutation by the agent does not change what is recorded. */
function snapshot(value: unknown): unknown {
  if (value === undefined || value === null || typeof value !== "object") {
    return typeof value === "bigint" ? value.toString() : value;
  }
  return JSON.parse(safeStringify(value));
}

export interface AttemptDeps {
  transport: Transport;
  sender: Sender;
  log: OnceLogger;
  filesCacheDir: string | undefined;
  blobCache: Map<string, Promise<File>>;
  prices: PriceTable | undefined;
}

/** One attempt at one task (a rollout). Create with `run.startRollout(item)`. */
export class Attempt {
  /** Rollout ID (ro_…). */
  readonly id: string;
  /** Attempt number within the run: "run 47, attempt 3". */
  readonly attempt: number;
  /** The rollout's page in the web UI. */
  readonly url: string;
  readonly runId: string;
  readonly runNumber: number;
  /** The run-list item being attempted (undefined for ad-hoc rollouts). */
  readonly item: RunTask | undefined;
  /** The rollout as the server last described it. */
  info: RolloutOut;
  private seq = 0;
  private done = false;
  private finishing: Promise<RolloutOut | null> | undefined;
  private readonly spans: string[] = [];
  private materialized: Promise<string[]> | undefined;
  private materializedBlobs: Promise<File[]> | undefined;

  constructor(
    private readonly deps: AttemptDeps,
    info: RolloutOut,
    item?: RunTask,
  ) {
    this.info = info;
    this.id = info.id;
    this.attempt = info.attempt;
    this.url = info.url;
    this.runId = info.run_id;
    this.runNumber = info.run_number;
    this.item = item;
    lastStarted = this;
  }

  /** The task being attempted (undefined for an ad-hoc rollout). */
  get task(): Task | undefined {
    return this.item?.task;
  }

  get repeatIndex(): number {
    return this.info.repeat_index;
  }

  /** True once `finish()` was called. */
  get finished(): boolean {
    return this.done;
  }

  toString(): string {
    return `run ${this.runNumber} / attempt ${this.attempt} (${this.id})`;
  }

  // -- the trace ---------------------------------------------------------------------------------------------

  private parent(): string | undefined {
    for (let frame = currentContext<Frame>(); frame; frame = frame.outer) {
      if (frame.attempt === this && frame.spanId) return frame.spanId;
    }
    return hasAsyncContext() ? undefined : this.spans[this.spans.length - 1];
  }

  /** Queue an event; returns its id ("" when it was not recorded). Never throws. */
  private emit(
    kind: string,
    body: Record<string, unknown>,
    options: EventOptions = {},
    fixed: { id?: string; seq?: number } = {},
  ): string {
    try {
      if (this.done) {
        this.deps.log.once(
          "after-finish",
          `a ${kind} event was recorded after ${this} finished; it is ignored (record everything before finish())`,
        );
        return "";
      }
      const id = fixed.id ?? newEventId();
      const event: Record<string, unknown> = { ...body, id, kind, seq: fixed.seq ?? ++this.seq };
      const parent = options.parentId ?? this.parent();
      if (parent) event.parent_id = parent;
      if (options.metadata) event.metadata = snapshot(options.metadata);
      if (event.started_at === undefined) event.started_at = isoNow();
      this.deps.sender.enqueue("event", this.id, event);
      return id;
    } catch (error) {
      this.deps.log.once("emit", `could not record a ${kind} event: ${errorText(error)}`);
      return "";
    }
  }

  /** A conversation message (role: system, developer, user, assistant or tool). Returns the event id. */
  message(content: unknown, options: EventOptions & { role?: MessageRole; name?: string } = {}): string {
    const body: Record<string, unknown> = { role: options.role ?? "assistant", content: snapshot(content) };
    if (options.name) body.name = options.name;
    return this.emit("message", body, options);
  }

  /** The model's (or agent's) reasoning. */
  reasoning(content: unknown, options: EventOptions = {}): string {
    return this.emit("reasoning", { content: snapshot(content) }, options);
  }

  /** A log line in the trace. */
  log(message: unknown, options: EventOptions & { level?: string } = {}): string {
    return this.emit("log", { message: snapshot(message), level: options.level ?? "info" }, options);
  }

  /** An error in the trace (it does not finish the attempt). Takes a message or an Error. */
  error(error: unknown, options: EventOptions & { type?: string } = {}): string {
    const body: Record<string, unknown> = {};
    if (error instanceof Error) {
      body.type = options.type ?? error.name;
      body.message = error.message || error.name;
      if (error.stack) body.traceback = error.stack.slice(-20_000);
    } else {
      body.message = snapshot(error) ?? "error";
      if (options.type) body.type = options.type;
    }
    return this.emit("error", body, options);
  }

  /** One model call: input, output, usage, cost, tool calls and timing. */
  llmCall(call: LlmCallOptions = {}): string {
    const {
      model, input, output, usage, cost, toolCalls, startedAt, endedAt, latencyMs, name, metadata, parentId,
      ...extra
    } = call;
    const end = toIso(endedAt) ?? isoNow();
    let start = toIso(startedAt);
    if (!start && typeof latencyMs === "number") start = new Date(Date.parse(end) - latencyMs).toISOString();
    const body: Record<string, unknown> = { started_at: start ?? end, ended_at: end };
    if (model) body.model = model;
    if (name) body.name = name;
    if (input !== undefined) body.input = snapshot(input);
    if (output !== undefined) body.output = snapshot(output);
    const normalized = normalizeUsage(usage);
    if (normalized) body.usage = normalized;
    const price = cost ?? (model && normalized ? costOf(model, normalized, this.deps.prices) : undefined);
    if (typeof price === "number") body.cost = price;
    if (toolCalls !== undefined && toolCalls !== null) body.tool_calls = snapshot(toolCalls);
    if (typeof latencyMs === "number") body.latency_ms = latencyMs;
    for (const [key, value] of Object.entries(extra)) {
      if (!(key in body) && !["id", "kind", "seq", "rollout_id"].includes(key)) body[key] = snapshot(value);
    }
    return this.emit("llm_call", body, { metadata, parentId });
  }

  /**
   * Record a tool call now; call `.result(output)` or `.error(message)` on the handle when the tool
   * returns: the paired tool_result carries the latency (started_at of the call, ended_at of the result).
   */
  toolCall(name: string, args?: unknown, options: EventOptions & { callId?: string } = {}): ToolCall {
    const parentId = options.parentId ?? this.parent();
    const startedAt = isoNow();
    const callId = options.callId ?? `call_${randomUUID().replace(/-/g, "").slice(0, 16)}`;
    const id = this.emit(
      "tool_call",
      { name, arguments: snapshot(args ?? {}), call_id: callId, started_at: startedAt },
      { metadata: options.metadata, parentId },
    );
    return new ToolCall(this, name, callId, id, parentId, startedAt, this.deps.log);
  }

  /** The result of a tool call recorded earlier (or outside the SDK), paired by call id. */
  toolResult(
    callId: string,
    output: unknown,
    options: EventOptions & { isError?: boolean; name?: string; startedAt?: Date | number | string } = {},
  ): string {
    const body: Record<string, unknown> = {
      call_id: callId,
      output: snapshot(output),
      is_error: options.isError ?? false,
      ended_at: isoNow(),
    };
    const start = toIso(options.startedAt);
    if (start) body.started_at = start;
    if (options.name) body.name = options.name;
    return this.emit("tool_result", body, options);
  }

  /** Start a span by hand; `end()` it. Prefer `span(name, fn)`, which also nests the events inside. */
  startSpan(name: string, options: EventOptions = {}): Span {
    return new Span(this, name, options, ++this.seq, newEventId(), options.parentId ?? this.parent());
  }

  /**
   * A named interval: events recorded while `fn` runs nest under it (across awaits on Node). Resolves to
   * what `fn` returns; an error escaping `fn` is noted on the span and rethrown.
   */
  async span<T>(name: string, fn: (span: Span) => T | Promise<T>, options: EventOptions = {}): Promise<T> {
    const span = this.startSpan(name, options);
    this.spans.push(span.id);
    try {
      const frame: Frame = { attempt: this, spanId: span.id, outer: currentContext<Frame>() };
      const result = await runWithContext(frame, () => fn(span));
      span.end();
      return result;
    } catch (error) {
      span.end(error);
      throw error;
    } finally {
      const at = this.spans.lastIndexOf(span.id);
      if (at >= 0) this.spans.splice(at, 1);
    }
  }

  /** @internal the span's event, sent when it closes with the seq it got when it opened. */
  emitSpan(span: Span, error?: unknown): void {
    const metadata = { ...(span.metadata ?? {}) };
    if (error !== undefined) metadata.error = errorText(error);
    this.emit(
      "span",
      { name: span.name, started_at: span.startedAt, ended_at: isoNow() },
      // "" = no parent: the span must not nest under itself while it is still the innermost one.
      { metadata: Object.keys(metadata).length ? metadata : undefined, parentId: span.parentId ?? "" },
      { id: span.id, seq: span.seq },
    );
  }

  /** Any event kind with its body fields (an escape hatch for kinds the methods above do not cover). */
  event(kind: string, fields: Record<string, unknown> = {}, options: EventOptions = {}): string {
    const body: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(fields)) {
      body[key] = key === "started_at" || key === "ended_at" ? toIso(value as any) : snapshot(value);
    }
    return this.emit(kind, body, options);
  }

  /** A named score (number, boolean, category or text); the run's reward score sets the reward. Allowed after finish. */
  score(name: string, value: number | boolean | string, options: ScoreOptions = {}): void {
    try {
      const score: Record<string, unknown> = { name, value, source: options.source ?? "sdk" };
      if (options.comment !== undefined) score.comment = options.comment;
      if (options.dataType !== undefined) score.data_type = options.dataType;
      if (options.author !== undefined) score.author = options.author;
      this.deps.sender.enqueue("score", this.id, score);
    } catch (error) {
      this.deps.log.once("score", `could not record score ${name}: ${errorText(error)}`);
    }
  }

  // -- files -------------------------------------------------------------------------------------------------

  /** The task's files. */
  get files(): readonly TaskFile[] {
    return this.task?.files ?? [];
  }

  /**
   * The task's files, local. On Node: paths in a cache folder keyed by SHA-256 (downloaded once per machine;
   * a second call costs nothing). In the browser, or with `{as: "blob"}`: File objects (Blobs).
   */
  materializeFiles(options?: { dir?: string; as?: "path" }): Promise<string[]>;
  materializeFiles(options: { as: "blob" }): Promise<File[]>;
  materializeFiles(options: { dir?: string; as?: "path" | "blob" } = {}): Promise<string[] | File[]> {
    if (options.as === "blob" || !isNode) {
      this.materializedBlobs ??= materializeToBlobs(this.deps.transport, this.deps.blobCache, this.files);
      this.materializedBlobs.catch(() => (this.materializedBlobs = undefined));
      return this.materializedBlobs;
    }
    if (options.dir) {
      return cacheDir(options.dir).then((dir) => materializeToDisk(this.deps.transport, dir, this.files));
    }
    this.materialized ??= cacheDir(this.deps.filesCacheDir).then((dir) =>
      materializeToDisk(this.deps.transport, dir, this.files),
    );
    this.materialized.catch(() => (this.materialized = undefined));
    return this.materialized;
  }

  // -- finishing ---------------------------------------------------------------------------------------------

  /**
   * Finish the attempt with its output, status and error, stamped with the time of this call (`ended_at`).
   * The finish is queued behind the attempt's events and delivered in the same ingest batch or a later one,
   * retried through outages. Never throws: resolves with the finished rollout as stored, or null when it
   * could not be finished (logged).
   */
  finish(options: FinishOptions = {}): Promise<RolloutOut | null> {
    if (this.done) {
      this.deps.log.once("double-finish", `finish() was called twice on ${this}; the second call is ignored`);
      return this.finishing ?? Promise.resolve(null);
    }
    this.done = true;
    if (lastStarted === this) lastStarted = undefined;
    // The attempt ended now, not when the batch carrying its finish reaches the server.
    const body: Record<string, unknown> = { ended_at: isoNow() };
    try {
      if (options.status !== undefined) body.status = options.status;
      if (options.output !== undefined) body.output = snapshot(options.output);
      if (options.error !== undefined && options.error !== null) body.error = errorText(options.error);
      if (options.metadata) body.metadata = snapshot(options.metadata);
    } catch (error) {
      this.deps.log.once("finish-body", `could not record the output of ${this}: ${errorText(error)}`);
    }
    this.finishing = this.deps.sender.finish(this.id, body).then((rollout) => {
      if (rollout) this.info = rollout;
      return rollout;
    });
    return this.finishing;
  }
}

function newEventId(): string {
  return `ev_${randomUUID().replace(/-/g, "")}`;
}

/** Handle for a recorded tool call; `.result()` records the paired tool_result with its latency. */
export class ToolCall {
  private settled = false;

  constructor(
    readonly attempt: Attempt,
    readonly name: string,
    readonly callId: string,
    /** The tool_call event's id. */
    readonly id: string,
    private readonly parentId: string | undefined,
    private readonly startedAt: string,
    private readonly log: OnceLogger,
  ) {}

  /** Record what the tool returned. */
  result(output: unknown, options: { isError?: boolean; metadata?: Record<string, unknown> } = {}): string {
    if (this.settled) {
      this.log.once("tool-twice", `the result of tool call ${this.callId} was recorded twice; ignored`);
      return "";
    }
    this.settled = true;
    return this.attempt.toolResult(this.callId, output, {
      isError: options.isError ?? false,
      name: this.name,
      startedAt: this.startedAt,
      metadata: options.metadata,
      parentId: this.parentId,
    });
  }

  /** Record that the tool failed (a tool_result with is_error true). */
  error(error: unknown, options: { metadata?: Record<string, unknown> } = {}): string {
    return this.result(errorText(error), { isError: true, metadata: options.metadata });
  }
}

/** A named interval in the trace. Its event is sent at `end()` with the seq it got when it opened. */
export class Span {
  readonly startedAt = isoNow();
  readonly metadata: Record<string, unknown> | undefined;
  private ended = false;

  constructor(
    readonly attempt: Attempt,
    readonly name: string,
    options: EventOptions,
    readonly seq: number,
    /** The span event's id: pass as `parentId` to nest events by hand. */
    readonly id: string,
    readonly parentId: string | undefined,
  ) {
    this.metadata = options.metadata ? { ...options.metadata } : undefined;
  }

  /** Close the span (once); pass the error that ended it, if any. */
  end(error?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.attempt.emitSpan(this, error);
  }
}
