// The client: configuration, the background sender, and the blocking calls (runs, datasets, files, reads).

import type { Attempt } from "./attempt.js";
import { resolveSettings, type ClientOptions, type Settings } from "./config.js";
import { OnceLogger, RolloutError } from "./errors.js";
import { fileIds, toTaskFile, uploadFile, type FileSource, type TaskFile } from "./files.js";
import { Transport } from "./http.js";
import { Run, withRollout, type RunDeps, type StartRolloutOptions } from "./run.js";
import { randomUUID } from "./platform.js";
import { Sender, type SenderStats } from "./sender.js";
import { toTask, type RunTask, type Task, type TaskInput } from "./tasks.js";
import type {
  DatasetOut,
  EventOut,
  RolloutDetail,
  RolloutOut,
  RunCreate,
  RunDetail,
  RunOut,
  TaskIn,
  TaskOut,
  VersionOut,
  WorkspaceOut,
} from "./types.js";

export interface StartRunOptions {
  /** Dataset version to pin (default: the latest). */
  datasetVersion?: number;
  workflowName?: string;
  /** Groups runs of one conversation, experiment or thread. */
  groupId?: string;
  agentName?: string;
  agentVersion?: string;
  model?: string;
  params?: Record<string, unknown>;
  tags?: string[];
  /** Each task appears this many times in `run.tasks` (default 1). */
  numRepeats?: number;
  /** Which score is the reward (default "reward"). */
  rewardScore?: string;
  /** Run ID or number: run only the tasks that failed there. */
  onlyFailedFrom?: string | number | Run;
  /** Statuses that count as failed for onlyFailedFrom (default failed, errored). */
  failedStatuses?: Array<"failed" | "errored" | "cancelled" | "running">;
}

export interface RolloutFilters {
  run?: string | number | Run;
  taskId?: string;
  status?: "running" | "succeeded" | "failed" | "errored" | "cancelled";
  workflowName?: string;
  groupId?: string;
  startedAfter?: Date | string;
  startedBefore?: Date | string;
  rewardMin?: number;
  rewardMax?: number;
  step?: number;
  groupKey?: string;
  /** Page size of the underlying requests (default 100). */
  limit?: number;
}

export interface RunFilters {
  status?: "running" | "finished" | "failed" | "cancelled";
  workflowName?: string;
  groupId?: string;
  dataset?: string;
  agentName?: string;
  model?: string;
  tag?: string;
  limit?: number;
}

/** An async iterable over every item of a paged list, with a helper to collect it. */
export interface Paginated<T> extends AsyncIterable<T> {
  /** Collect the items (at most `max`). */
  toArray(max?: number): Promise<T[]>;
}

function paginated<T>(make: () => AsyncGenerator<T>): Paginated<T> {
  return {
    [Symbol.asyncIterator]: make,
    async toArray(max = Infinity) {
      const out: T[] = [];
      if (max <= 0) return out;
      for await (const item of make()) {
        out.push(item);
        if (out.length >= max) break;
      }
      return out;
    },
  };
}

const snake = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

function query(values: Record<string, unknown>): Record<string, string | number | boolean | undefined> {
  const out: Record<string, string | number | boolean | undefined> = {};
  for (const [key, value] of Object.entries(values)) {
    if (value === undefined || value === null) continue;
    out[snake(key)] =
      value instanceof Date ? value.toISOString() : value instanceof Run ? value.id : (value as string | number | boolean);
  }
  return out;
}

/** "47/3", "run 47 / attempt 3", [47, 3] or {run, attempt} → ["47", 3]; undefined for a rollout ID. */
function splitHandle(ref: unknown): [string, number] | undefined {
  if (Array.isArray(ref) && ref.length === 2) return [String(ref[0]), Number(ref[1])];
  if (ref && typeof ref === "object" && "run" in ref && "attempt" in ref) {
    const r = ref as { run: unknown; attempt: unknown };
    return [String(r.run instanceof Run ? r.run.id : r.run), Number(r.attempt)];
  }
  if (typeof ref === "string") {
    const match = /^\s*(?:run\s*)?([^/\s]+)\s*\/\s*(?:attempt\s*)?(\d+)\s*$/i.exec(ref);
    if (match) return [match[1]!, Number(match[2])];
  }
  return undefined;
}

function toTaskIn(task: TaskInput, files: string[]): TaskIn {
  const out: TaskIn = { files };
  if (task.key !== undefined) out.key = task.key;
  if (task.instruction !== undefined) out.instruction = task.instruction;
  if (task.input !== undefined) out.input = task.input;
  if (task.expectedOutput !== undefined) out.expected_output = task.expectedOutput;
  if (task.outputSchema !== undefined) out.output_schema = task.outputSchema;
  if (task.metadata !== undefined) out.metadata = task.metadata;
  if (task.split !== undefined) out.split = task.split;
  return out;
}

const TASK_FIELDS = new Set(["key", "instruction", "input", "expectedOutput", "outputSchema", "metadata", "split", "files"]);

/** A named, versioned collection of tasks. */
export class Dataset {
  readonly id: string;
  readonly name: string;
  info: DatasetOut;

  constructor(
    private readonly client: Client,
    info: DatasetOut,
  ) {
    this.info = info;
    this.id = info.id;
    this.name = info.name;
  }

  get latestVersion(): number {
    return this.info.latest_version;
  }

  get taskCount(): number {
    return this.info.task_count;
  }

  /** Add tasks as a new immutable version; returns that version. */
  async addTasks(tasks: TaskInput[], options: { message?: string } = {}): Promise<VersionOut> {
    const add = await this.client.prepareTasks(tasks);
    const version = await this.client.transport.json<VersionOut>(
      "POST",
      `/api/v1/datasets/${encodeURIComponent(this.id)}/versions`,
      { json: { add, message: options.message }, retry: "connect" },
    );
    this.info = await this.client.transport.json<DatasetOut>("GET", `/api/v1/datasets/${encodeURIComponent(this.id)}`);
    return version;
  }

  /** The tasks of a version (default: the latest). */
  tasks(version?: number): Paginated<Task> {
    const path = `/api/v1/datasets/${encodeURIComponent(this.id)}/tasks`;
    const transport = this.client.transport;
    return paginated(async function* () {
      for await (const task of transport.paginate<TaskOut>(path, { version, limit: 500 })) yield toTask(task);
    });
  }
}

/**
 * A connection to a Rollout server. Options fall back to ROLLOUT_BASE_URL and ROLLOUT_API_KEY on Node.
 * Several clients in one process are independent.
 */
export class Client {
  readonly settings: Settings;
  /** @internal */
  readonly transport: Transport;
  /** @internal */
  readonly sender: Sender;
  private readonly deps: RunDeps;

  constructor(options: ClientOptions = {}) {
    this.settings = resolveSettings(options);
    this.transport = new Transport(this.settings);
    this.sender = new Sender(this.transport, this.settings);
    const log: OnceLogger = this.sender.logger;
    this.deps = {
      transport: this.transport,
      sender: this.sender,
      log,
      filesCacheDir: this.settings.filesCacheDir,
      blobCache: new Map(),
      prices: this.settings.prices,
      flush: (timeoutMs) => this.flush(timeoutMs),
    };
  }

  get baseUrl(): string {
    return this.settings.baseUrl;
  }

  /** Delivery counters: pending, delivered, rejected and dropped items. */
  get stats(): Readonly<SenderStats> {
    return { ...this.sender.stats };
  }

  /** The API key's workspace (a cheap way to check the key). */
  workspace(): Promise<WorkspaceOut> {
    return this.transport.json<WorkspaceOut>("GET", "/api/v1/workspace");
  }

  // -- runs --------------------------------------------------------------------------------------------------

  /** Start a run of a dataset (name, ID or Dataset; latest version unless pinned), or with none for ad-hoc rollouts. */
  async startRun(dataset?: string | Dataset | null, options: StartRunOptions = {}): Promise<Run> {
    // A fresh idempotency key per call, reused by its retries: a start whose answer was lost is sent again
    // and gets the run the first try created.
    const body: RunCreate = { num_repeats: options.numRepeats ?? 1, client_key: randomUUID() };
    if (dataset) body.dataset = typeof dataset === "string" ? dataset : dataset.id;
    if (options.datasetVersion !== undefined) body.dataset_version = options.datasetVersion;
    if (options.workflowName !== undefined) body.workflow_name = options.workflowName;
    if (options.groupId !== undefined) body.group_id = options.groupId;
    if (options.agentName !== undefined) body.agent_name = options.agentName;
    if (options.agentVersion !== undefined) body.agent_version = options.agentVersion;
    if (options.model !== undefined) body.model = options.model;
    if (options.params !== undefined) body.params = options.params;
    if (options.tags !== undefined) body.tags = options.tags;
    if (options.rewardScore !== undefined) body.reward_score = options.rewardScore;
    if (options.onlyFailedFrom !== undefined) {
      const source = options.onlyFailedFrom;
      body.only_failed_from = source instanceof Run ? source.id : String(source);
    }
    if (options.failedStatuses !== undefined) body.failed_statuses = options.failedStatuses;
    const info = await this.transport.json<RunDetail>("POST", "/api/v1/runs", {
      json: body,
      retry: "all",
      retryConflict: true,
    });
    return new Run(this.deps, info);
  }

  /** A run by ID (run_…) or number (47). */
  async getRun(ref: string | number): Promise<Run> {
    const info = await this.transport.json<RunDetail>("GET", `/api/v1/runs/${encodeURIComponent(String(ref))}`);
    return new Run(this.deps, info);
  }

  /** Delete a run and everything recorded in it (rollouts, trace events, scores). Irreversible; a run that
   * re-runs were made from is refused (409) until those are deleted. */
  async deleteRun(ref: string | number): Promise<void> {
    await this.transport.json<void>("DELETE", `/api/v1/runs/${encodeURIComponent(String(ref))}`);
  }

  /** Delete a rollout with its trace events and scores. Irreversible. */
  async deleteRollout(rolloutId: string): Promise<void> {
    await this.transport.json<void>("DELETE", `/api/v1/rollouts/${encodeURIComponent(rolloutId)}`);
  }

  /** Runs, newest first. */
  listRuns(filters: RunFilters = {}): Paginated<RunOut> {
    const { limit, ...rest } = filters;
    const transport = this.transport;
    return paginated(() => transport.paginate<RunOut>("/api/v1/runs", { ...query(rest), limit: limit ?? 100 }));
  }

  /** See the module-level `withRollout`. */
  withRollout<T>(run: Run, item: RunTask | Task | string | null | undefined, fn: (attempt: Attempt) => T | Promise<T>,
                 options: StartRolloutOptions = {}): Promise<T> {
    return withRollout(run, item, fn, options);
  }

  // -- datasets and files ------------------------------------------------------------------------------------

  /** @internal task inputs → wire tasks, uploading local files once each. */
  async prepareTasks(tasks: readonly TaskInput[]): Promise<TaskIn[]> {
    const uploaded = new Map<unknown, Promise<string>>();
    const out: TaskIn[] = [];
    for (const [index, task] of tasks.entries()) {
      if (!task || typeof task !== "object") throw new RolloutError(`task ${index} must be an object`);
      const unknown = Object.keys(task).filter((k) => !TASK_FIELDS.has(k));
      if (unknown.length) {
        throw new RolloutError(
          `task ${index} has unknown field(s) ${unknown.join(", ")}; a task has ${[...TASK_FIELDS].join(", ")}`,
        );
      }
      out.push(toTaskIn(task, await fileIds(this.transport, task.files ?? [], uploaded)));
    }
    return out;
  }

  /** Create a dataset; its tasks become version 1. Files may be IDs, paths (Node), bytes, Blobs or {name, data}. */
  async createDataset(
    name: string,
    options: { tasks?: TaskInput[]; description?: string; message?: string } = {},
  ): Promise<Dataset> {
    const tasks = await this.prepareTasks(options.tasks ?? []);
    const info = await this.transport.json<DatasetOut>("POST", "/api/v1/datasets", {
      json: { name, description: options.description, tasks, message: options.message },
      retry: "connect",
    });
    return new Dataset(this, info);
  }

  /** A dataset by name or ID. */
  async getDataset(ref: string): Promise<Dataset> {
    return new Dataset(this, await this.transport.json<DatasetOut>("GET", `/api/v1/datasets/${encodeURIComponent(ref)}`));
  }

  /** Upload one file (stored once per workspace by SHA-256). */
  async uploadFile(source: FileSource, options: { name?: string; mediaType?: string } = {}): Promise<TaskFile> {
    return toTaskFile(await uploadFile(this.transport, source, options));
  }

  // -- reading back ------------------------------------------------------------------------------------------

  /**
   * A rollout with its scores and the first page of its trace: by ID (ro_…) or by handle
   * ("47/3", "run 47 / attempt 3", [47, 3], {run, attempt}).
   */
  getRollout(ref: string | [string | number, number] | { run: string | number | Run; attempt: number },
             options: { eventsLimit?: number } = {}): Promise<RolloutDetail> {
    const handle = splitHandle(ref);
    const path = handle
      ? `/api/v1/runs/${encodeURIComponent(handle[0])}/rollouts/${handle[1]}`
      : `/api/v1/rollouts/${encodeURIComponent(String(ref))}`;
    return this.transport.json<RolloutDetail>("GET", path, { query: { events_limit: options.eventsLimit } });
  }

  /** Rollouts, newest first, with filters. */
  listRollouts(filters: RolloutFilters = {}): Paginated<RolloutOut> {
    const { limit, ...rest } = filters;
    const transport = this.transport;
    return paginated(() => transport.paginate<RolloutOut>("/api/v1/rollouts", { ...query(rest), limit: limit ?? 100 }));
  }

  /** A rollout's whole trace, in order. */
  listEvents(rolloutId: string, options: { limit?: number } = {}): Paginated<EventOut> {
    const transport = this.transport;
    const path = `/api/v1/rollouts/${encodeURIComponent(rolloutId)}/events`;
    return paginated(() => transport.paginate<EventOut>(path, { limit: options.limit ?? 1000 }));
  }

  // -- delivery ----------------------------------------------------------------------------------------------

  /** Wait until every recorded event, score and finish is on the server; false if `timeoutMs` passes first. */
  flush(timeoutMs?: number): Promise<boolean> {
    return this.sender.flush(timeoutMs);
  }

  /** Flush (up to `timeoutMs`, default 10 s), then stop: later events are dropped. */
  shutdown(timeoutMs?: number): Promise<boolean> {
    return this.sender.shutdown(timeoutMs);
  }
}
