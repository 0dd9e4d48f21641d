// Module-level functions over one default client, configured by `configure()` or the environment.

import type { Attempt } from "./attempt.js";
import { Client, type Dataset, type Paginated, type RolloutFilters, type StartRunOptions } from "./client.js";
import type { ClientOptions } from "./config.js";
import type { Run, StartRolloutOptions } from "./run.js";
import type { RunTask, Task, TaskInput } from "./tasks.js";
import type { RolloutDetail, RolloutOut } from "./types.js";

let defaultClient: Client | undefined;

/** Replace the default client (the previous one is flushed in the background). */
export function configure(options: ClientOptions = {}): Client {
  const previous = defaultClient;
  defaultClient = new Client(options);
  if (previous) void previous.shutdown();
  return defaultClient;
}

/** The default client, created from ROLLOUT_BASE_URL / ROLLOUT_API_KEY on first use. */
export function getClient(): Client {
  defaultClient ??= new Client();
  return defaultClient;
}

export const startRun = (dataset?: string | Dataset | null, options?: StartRunOptions): Promise<Run> =>
  getClient().startRun(dataset, options);
export const getRun = (ref: string | number): Promise<Run> => getClient().getRun(ref);
export const createDataset = (name: string, options?: { tasks?: TaskInput[]; description?: string }): Promise<Dataset> =>
  getClient().createDataset(name, options);
export const getRollout = (
  ref: string | [string | number, number] | { run: string | number | Run; attempt: number },
  options?: { eventsLimit?: number },
): Promise<RolloutDetail> => getClient().getRollout(ref, options);
export const listRollouts = (filters?: RolloutFilters): Paginated<RolloutOut> => getClient().listRollouts(filters);
export const flush = (timeoutMs?: number): Promise<boolean> => getClient().flush(timeoutMs);
export const shutdown = (timeoutMs?: number): Promise<boolean> =>
  defaultClient ? defaultClient.shutdown(timeoutMs) : Promise.resolve(true);

export type { Attempt, RunTask, Task, StartRolloutOptions };
