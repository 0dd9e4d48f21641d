// Typed errors for the calls that must block (starting runs and rollouts, datasets, files, reads).
// Telemetry calls (events, scores, finish) never throw: their failures go to the logger instead.

/** An RFC 9457 problem document as the server sends it. */
export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  instance?: string;
  errors?: Array<{ field?: string; in?: string; message?: string }>;
  [key: string]: unknown;
}

/** Base class of every error the SDK throws. */
export class RolloutError extends Error {
  override name = "RolloutError";
}

/** The server answered with an error status; `problem` holds its problem details. */
export class RolloutApiError extends RolloutError {
  override name = "RolloutApiError";
  readonly status: number;
  readonly method: string;
  readonly path: string;
  readonly problem: Problem | undefined;

  constructor(method: string, path: string, status: number, problem: Problem | undefined, text?: string) {
    const what = problem?.detail ?? problem?.title ?? (text ? text.slice(0, 500) : "no details");
    super(`${method} ${path} failed with ${status}: ${what}`);
    this.status = status;
    this.method = method;
    this.path = path;
    this.problem = problem;
  }

  /** The first offending field the server named, such as "tasks.0.key". */
  get field(): string | undefined {
    return this.problem?.errors?.[0]?.field;
  }
}

/** The server could not be reached (refused, reset, timed out) within the retry window. */
export class RolloutConnectionError extends RolloutError {
  override name = "RolloutConnectionError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Logger the SDK reports telemetry problems to; defaults to console with a "rollout:" prefix. */
export interface Logger {
  warn(message: string): void;
  debug?(message: string): void;
}

export const consoleLogger: Logger = {
  warn: (message) => console.warn(`rollout: ${message}`),
};

/** Logs each kind of problem once per logger, so a down server does not flood the agent's output. */
export class OnceLogger {
  private seen = new Set<string>();
  constructor(readonly logger: Logger) {}

  once(key: string, message: string): void {
    if (this.seen.has(key)) {
      this.logger.debug?.(message);
      return;
    }
    this.seen.add(key);
    try {
      this.logger.warn(message);
    } catch {
      // a broken logger must not break the agent either
    }
  }

  /** Forget a key so the next occurrence is reported again (after a recovery). */
  reset(key: string): void {
    this.seen.delete(key);
  }
}
