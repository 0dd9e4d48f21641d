// @rollout/sdk: record agent rollouts (traces with rewards) to a Rollout server, from Node ≥ 20 and browsers.

export { Client, Dataset, type Paginated, type RolloutFilters, type RunFilters, type StartRunOptions } from "./client.js";
export { Run, withRollout, type StartRolloutOptions } from "./run.js";
export {
  Attempt,
  Span,
  ToolCall,
  currentAttempt,
  runInAttempt,
  type EventOptions,
  type FinishOptions,
  type LlmCallOptions,
  type ScoreOptions,
} from "./attempt.js";
export { wrapOpenAI, type WrapOpenAIOptions } from "./openai.js";
export { configure, getClient, startRun, getRun, createDataset, getRollout, listRollouts, flush, shutdown } from "./default.js";
export { DEFAULT_BASE_URL, type ClientOptions } from "./config.js";
export {
  RolloutError,
  RolloutApiError,
  RolloutConnectionError,
  consoleLogger,
  type Logger,
  type Problem,
} from "./errors.js";
export type { SenderStats } from "./sender.js";
export type { Task, RunTask, TaskInput } from "./tasks.js";
export type { TaskFile, FileSource, FileData } from "./files.js";
export { DEFAULT_PRICES, costOf, type Price, type PriceTable, type Usage } from "./prices.js";
export type * from "./types.js";
export type { components, paths, operations } from "./generated/openapi.js";
