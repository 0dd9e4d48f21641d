// The published declarations work for a strict TypeScript consumer (test/consumer.ts, compiled, not run).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { test } from "node:test";

test("a strict TypeScript consumer type-checks against dist/*.d.ts", () => {
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  const result = spawnSync(process.execPath, [tsc, "-p", "test/tsconfig.json"], { encoding: "utf8" });
  assert.equal(result.status, 0, `${result.stdout}${result.stderr}`);
});
