// A run: iterate its task list, start attempts, finish it.

import { Attempt, runInAttempt, type AttemptDeps, type FinishOptions } from "./attempt.js";
import { RolloutError } from "./errors.js";
import type { Transport } from "./http.js";
import { randomUUID } from "./platform.js";
import { isRunTask, isTask, toRunTask, type RunTask, type Task } from "./tasks.js";
import type { RolloutCreate, RolloutOut, RunDetail, RunTaskItem } from "./types.js";

export interface StartRolloutOptions {
  /** Input of an ad-hoc rollout (no task), e.g. a production request. */
  input?: unknown;
  /** Which repeat this is (default: the item's repeat index, else 0). */
  repeatIndex?: number;
  /** Training step this sample belongs to. */
  step?: number;
  /** Samples that share a prompt share a group key. */
  groupKey?: string;
  metadata?: Record<string, unknown>;
}

export interface RunDeps extends AttemptDeps {
  flush(timeoutMs?: number): Promise<boolean>;
}

/** One execution of a dataset version (or of ad-hoc tasks). */
export class Run {
  /** Run ID (run_…). */
  readonly id: string;
  /** Per-workspace number: "run 47". */
  readonly number: number;
  /** The run's page in the web UI. */
  readonly url: string;
  /** The run as the server last described it (status, aggregates…). */
  info: RunDetail;

  constructor(
    private readonly deps: RunDeps,
    info: RunDetail,
  ) {
    this.info = info;
    this.id = info.id;
    this.number = info.number;
    this.url = info.url;
  }

  private get transport(): Transport {
    return this.deps.transport;
  }

  toString(): string {
    return `run ${this.number} (${this.id})`;
  }

  /** The run's task list (tasks × repeats, or a source run's failed tasks), fetched page by page. */
  get tasks(): AsyncIterable<RunTask> {
    return { [Symbol.asyncIterator]: () => this.iterateTasks() };
  }

  private async *iterateTasks(pageSize = 200): AsyncGenerator<RunTask> {
    const path = `/api/v1/runs/${encodeURIComponent(this.id)}/tasks`;
    for await (const item of this.transport.paginate<RunTaskItem>(path, { limit: pageSize })) {
      yield toRunTask(item);
    }
  }

  /**
   * Start an attempt at an item of `run.tasks` (or a Task, or a task ID); with no item, an ad-hoc rollout
   * for production traffic. The request carries a fresh `client_key`, so it is retried through network
   * errors and 5xx without ever creating a second rollout. Throws RolloutApiError / RolloutConnectionError
   * when the server refuses or cannot be reached.
   */
  async startRollout(item?: RunTask | Task | string | null, options: StartRolloutOptions = {}): Promise<Attempt> {
    // A fresh idempotency key per call, reused by its retries: a retried start never makes a second rollout.
    const body: RolloutCreate = { repeat_index: 0, client_key: randomUUID() };
    let runItem: RunTask | undefined;
    if (isRunTask(item)) {
      runItem = item;
      body.task_id = item.task.id;
      body.repeat_index = item.repeatIndex;
    } else if (isTask(item)) {
      runItem = { position: -1, repeatIndex: options.repeatIndex ?? 0, task: item };
      body.task_id = item.id;
    } else if (typeof item === "string") {
      body.task_id = item;
    } else if (item !== undefined && item !== null) {
      throw new RolloutError("startRollout() takes an item of run.tasks, a Task or a task ID");
    }
    if (options.repeatIndex !== undefined) body.repeat_index = options.repeatIndex;
    if (options.input !== undefined) body.input = options.input;
    if (options.step !== undefined) body.step = options.step;
    if (options.groupKey !== undefined) body.group_key = options.groupKey;
    if (options.metadata !== undefined) body.metadata = options.metadata;
    const info = await this.transport.json<RolloutOut>("POST", `/api/v1/runs/${encodeURIComponent(this.id)}/rollouts`, {
      json: body,
      retry: "all",
      retryConflict: true,
    });
    return new Attempt(this.deps, info, runItem);
  }

  /** Start an attempt, run `fn` in it, and finish it: see `withRollout`. */
  withRollout<T>(item: RunTask | Task | string | null | undefined, fn: (attempt: Attempt) => T | Promise<T>,
                 options: StartRolloutOptions = {}): Promise<T> {
    return withRollout(this, item, fn, options);
  }

  /** Mark the run finished (or failed, cancelled), after the client's pending deliveries. */
  async finish(options: { status?: "finished" | "failed" | "cancelled" } = {}): Promise<RunDetail> {
    await this.deps.flush();
    this.info = await this.transport.json<RunDetail>("POST", `/api/v1/runs/${encodeURIComponent(this.id)}/finish`, {
      json: { status: options.status ?? "finished" },
      retry: "all",
    });
    return this.info;
  }

  /** Fetch the run again (status, aggregates). */
  async refresh(): Promise<RunDetail> {
    this.info = await this.transport.json<RunDetail>("GET", `/api/v1/runs/${encodeURIComponent(this.id)}`);
    return this.info;
  }
}

/**
 * Start an attempt at `item`, run `fn(attempt)` with it as the current attempt, and finish it: with `fn`'s
 * return value as output when `fn` did not finish it itself, or as failed with the error when one escapes
 * (the error is recorded in the trace and rethrown). Waits for the finish to be delivered.
 */
export async function withRollout<T>(
  run: Run,
  item: RunTask | Task | string | null | undefined,
  fn: (attempt: Attempt) => T | Promise<T>,
  options: StartRolloutOptions & { finish?: Omit<FinishOptions, "error"> } = {},
): Promise<T> {
  const attempt = await run.startRollout(item, options);
  let result: T;
  try {
    result = await runInAttempt(attempt, () => fn(attempt));
  } catch (error) {
    if (!attempt.finished) {
      attempt.error(error);
      await attempt.finish({ status: "failed", error });
    }
    throw error;
  }
  if (!attempt.finished) {
    await attempt.finish({ output: result === undefined ? undefined : result, ...(options.finish ?? {}) });
  }
  return result;
}
