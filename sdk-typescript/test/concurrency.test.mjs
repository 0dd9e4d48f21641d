// 20 rollouts recorded at once from one client: every event stored exactly once and in order.
import assert from "node:assert/strict";
import { test } from "node:test";
import { withRollout } from "../dist/index.js";
import { liveClient, needsLive, sleep } from "./helpers.mjs";

const ROLLOUTS = 20;
const EVENTS = 100;

test("20 concurrent rollouts: all events stored once, in order", { skip: needsLive }, async () => {
  const { client, logger } = liveClient({ batchMaxEvents: 250 });
  const run = await client.startRun(null, { workflowName: "ts-concurrency" });
  const ids = await Promise.all(
    Array.from({ length: ROLLOUTS }, (_, r) =>
      withRollout(run, null, async (attempt) => {
        for (let i = 0; i < EVENTS; i++) {
          if (i % 3 === 0) attempt.message({ r, i }, { role: "user" });
          else if (i % 3 === 1) attempt.log(`r${r} i${i}`, { metadata: { r, i } });
          else attempt.toolCall("step", { r, i }).result({ r, i });
          if (i % 10 === 0) await sleep(Math.random() * 5); // interleave the rollouts' batches
        }
        attempt.score("reward", r / ROLLOUTS);
        return attempt.id;
      }, { input: { r } }),
    ),
  );
  assert.equal(await client.flush(20_000), true);
  assert.equal(client.stats.dropped, 0);
  assert.equal(client.stats.rejected, 0);
  assert.deepEqual(logger.warnings, []);

  for (const [r, id] of ids.entries()) {
    const events = await client.listEvents(id).toArray();
    // tool calls are two events (call + result)
    const expected = Array.from({ length: EVENTS }, (_, i) => i).flatMap((i) => (i % 3 === 2 ? [i, i] : [i]));
    assert.equal(events.length, expected.length, `rollout ${r}: every event stored once`);
    assert.deepEqual(events.map((e) => e.seq), expected.map((_, n) => n + 1), `rollout ${r}: in order`);
    assert.equal(new Set(events.map((e) => e.id)).size, events.length);
    const order = events.map((e) => e.content?.i ?? e.metadata?.i ?? e.arguments?.i ?? e.output?.i);
    assert.deepEqual(order, expected, `rollout ${r}: the caller's order`);
    assert.ok(events.every((e) => (e.content?.r ?? e.metadata?.r ?? e.arguments?.r ?? e.output?.r) === r));
  }
  const rollouts = await client.listRollouts({ run: run.id, limit: 100 }).toArray();
  assert.equal(rollouts.length, ROLLOUTS);
  assert.ok(rollouts.every((ro) => ro.status === "succeeded" && ro.event_count === 133));
});
