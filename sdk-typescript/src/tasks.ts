// Tasks as the SDK hands them to agent code: camelCase views of the wire's TaskOut and RunTaskItem.

import { toTaskFile, type FileSource, type TaskFile } from "./files.js";
import type { RunTaskItem, TaskOut } from "./types.js";

/** One unit of work from a dataset. */
export interface Task {
  /** Task revision ID (task_…). */
  id: string;
  datasetId: string;
  /** Stable name inside the dataset, kept across versions. */
  key: string;
  instruction: string;
  input: Record<string, unknown> | null;
  expectedOutput: unknown;
  outputSchema: Record<string, unknown> | null;
  metadata: Record<string, unknown> | null;
  split: string | null;
  files: TaskFile[];
  /** The dataset version this revision first appeared in. */
  version: number;
  createdAt: string;
}

/** One item of a run's task list: a task and which repeat of it this is. */
export interface RunTask {
  /** 0-based place in the run's task list. */
  position: number;
  repeatIndex: number;
  task: Task;
}

/** A task to create: files may be IDs, local paths (Node), bytes, Blobs or `{name, data}`. */
export interface TaskInput {
  key?: string;
  instruction?: string;
  input?: Record<string, unknown>;
  expectedOutput?: unknown;
  outputSchema?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  split?: string;
  files?: FileSource[];
}

export function toTask(task: TaskOut): Task {
  return {
    id: task.id,
    datasetId: task.dataset_id,
    key: task.key,
    instruction: task.instruction,
    input: (task.input as Record<string, unknown> | null | undefined) ?? null,
    expectedOutput: task.expected_output ?? null,
    outputSchema: (task.output_schema as Record<string, unknown> | null | undefined) ?? null,
    metadata: (task.metadata as Record<string, unknown> | null | undefined) ?? null,
    split: task.split ?? null,
    files: (task.files ?? []).map(toTaskFile),
    version: task.version,
    createdAt: task.created_at,
  };
}

export function toRunTask(item: RunTaskItem): RunTask {
  return { position: item.position, repeatIndex: item.repeat_index, task: toTask(item.task) };
}

export function isRunTask(value: unknown): value is RunTask {
  return !!value && typeof value === "object" && "task" in value && "repeatIndex" in value;
}

export function isTask(value: unknown): value is Task {
  return !!value && typeof value === "object" && "id" in value && "instruction" in value && "key" in value;
}
