// Shared by the test files: the live server the harness started (env), a quiet client, the control hook.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "../dist/index.js";

export const live = {
  baseUrl: process.env.ROLLOUT_BASE_URL,
  apiKey: process.env.ROLLOUT_API_KEY,
  control: process.env.ROLLOUT_TEST_CONTROL_URL,
};

/** Skip reason for tests that need a live server (they run under pytest tests/sdk_typescript). */
export const needsLive =
  live.baseUrl && live.apiKey
    ? false
    : "needs a live server: set ROLLOUT_BASE_URL and ROLLOUT_API_KEY (pytest tests/sdk_typescript does)";

export const needsControl = needsLive || (live.control ? false : "needs ROLLOUT_TEST_CONTROL_URL to stop and start the server");

/** A logger that keeps warnings for assertions instead of printing them. */
export function recordingLogger() {
  const warnings = [];
  return { warnings, warn: (message) => warnings.push(message), debug: () => undefined };
}

export function liveClient(options = {}) {
  const logger = options.logger ?? recordingLogger();
  const client = new Client({
    baseUrl: live.baseUrl,
    apiKey: live.apiKey,
    filesCacheDir: mkdtempSync(join(tmpdir(), "rollout-ts-cache-")),
    flushIntervalMs: 20,
    logger,
    ...options,
  });
  return { client, logger };
}

let counter = 0;
export function unique(prefix) {
  counter += 1;
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${counter}`;
}

/** Stop or start the live server through the harness's control hook. */
export async function control(action) {
  const response = await fetch(`${live.control}/${action}`, { method: "POST" });
  if (!response.ok) throw new Error(`control ${action} answered ${response.status}: ${await response.text()}`);
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
