// Wire types, named: aliases of the schemas generated from docs/openapi.json (see generated/openapi.ts).

import type { components } from "./generated/openapi.js";

type Schemas = components["schemas"];

export type DatasetOut = Schemas["DatasetOut"];
export type VersionOut = Schemas["VersionOut"];
export type TaskIn = Schemas["TaskIn"];
export type TaskOut = Schemas["TaskOut"];
export type FileOut = Schemas["FileOut"];
export type RunCreate = Schemas["RunCreate"];
export type RunOut = Schemas["RunOut"];
export type RunDetail = Schemas["RunDetail"];
export type RunAggregates = Schemas["RunAggregates"];
export type RunTaskItem = Schemas["RunTaskItem"];
export type RolloutCreate = Schemas["RolloutCreate"];
export type RolloutFinish = Schemas["RolloutFinish"];
export type RolloutOut = Schemas["RolloutOut"];
export type RolloutDetail = Schemas["RolloutDetail"];
export type EventIn = Schemas["EventIn"];
export type EventOut = Schemas["EventOut"];
export type ScoreIn = Schemas["ScoreIn"];
export type ScoreOut = Schemas["ScoreOut"];
export type IngestBatch = Schemas["IngestBatch"];
export type IngestResult = Schemas["IngestResult"];
export type ItemResult = Schemas["ItemResult"];
export type WorkspaceOut = Schemas["WorkspaceOut"];

/** Statuses a rollout can finish with. */
export type FinishStatus = NonNullable<RolloutFinish["status"]>;
/** Trace event kinds. */
export type EventKind = EventIn["kind"];
/** Roles a message can have. */
export type MessageRole = "system" | "developer" | "user" | "assistant" | "tool";
