// The server goes down for a few seconds in the middle of a run: nothing recorded is lost or stored twice,
// finishes made during the outage land after it, and a rollout started during it waits for the server.
import assert from "node:assert/strict";
import { test } from "node:test";
import { control, liveClient, needsControl, sleep } from "./helpers.mjs";

const ROLLOUTS = 6;
const BEFORE = 20;
const DURING = 30;

test("server down mid-run: after flush every event is on the server exactly once", { skip: needsControl }, async () => {
  const { client, logger } = liveClient({ minBackoffMs: 50, maxBackoffMs: 400, retryWindowMs: 30_000 });
  const run = await client.startRun(null, { workflowName: "ts-outage" });
  const attempts = [];
  for (let r = 0; r < ROLLOUTS; r++) attempts.push(await run.startRollout(null, { input: { r } }));
  const record = (from, to) => {
    for (const [r, attempt] of attempts.entries()) {
      for (let i = from; i < to; i++) attempt.message({ r, i }, { role: i % 2 ? "assistant" : "user" });
    }
  };

  record(0, BEFORE);
  await sleep(50); // let some of it go out before the outage
  await control("stop");
  const down = Date.now();
  record(BEFORE, BEFORE + DURING / 2);
  const late = run.startRollout(null, { input: { late: true } }); // waits for the server (connection refused)
  await sleep(1000);
  record(BEFORE + DURING / 2, BEFORE + DURING);
  // Two attempts finish while the server is down: their events go first, then the finish, after the outage.
  const finishes = attempts.slice(0, 2).map((attempt, r) => attempt.finish({ output: `done ${r}` }));
  assert.equal(await client.flush(300), false, "nothing can be delivered while the server is down");
  await sleep(Math.max(0, 2500 - (Date.now() - down)));
  await control("start");

  const lateAttempt = await late;
  lateAttempt.message("after the outage", { role: "user" });
  const finished = await Promise.all(finishes);
  assert.deepEqual(finished.map((f) => f?.status), ["succeeded", "succeeded"]);
  for (const attempt of attempts.slice(2)) await attempt.finish({ output: "done later" });
  await lateAttempt.finish();
  assert.equal(await client.flush(20_000), true);
  assert.deepEqual({ dropped: client.stats.dropped, rejected: client.stats.rejected }, { dropped: 0, rejected: 0 });
  assert.match(logger.warnings.join("\n"), /retrying/, "the outage was noticed (and reported once)");

  for (const [r, attempt] of attempts.entries()) {
    const events = await client.listEvents(attempt.id).toArray();
    assert.equal(events.length, BEFORE + DURING, `rollout ${r}: nothing lost, nothing twice`);
    assert.deepEqual(events.map((e) => e.content.i), Array.from({ length: BEFORE + DURING }, (_, i) => i));
    assert.deepEqual(events.map((e) => e.seq), Array.from({ length: BEFORE + DURING }, (_, i) => i + 1));
    const rollout = await client.getRollout(attempt.id, { eventsLimit: 0 });
    assert.equal(rollout.status, "succeeded");
    assert.equal(rollout.event_count, BEFORE + DURING);
  }
  const lateRead = await client.getRollout(lateAttempt.id);
  assert.deepEqual(lateRead.input, { late: true });
  assert.equal(lateRead.events.length, 1);
});
