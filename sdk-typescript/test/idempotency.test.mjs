// Against the live server: a start whose answer is lost is retried with the same client_key and creates one
// run and one rollout; finishes ride in ingest batches and keep the time finish() was called.
import assert from "node:assert/strict";
import { test } from "node:test";
import { live, liveClient, needsLive, sleep, unique } from "./helpers.mjs";

/** fetch that lets each create reach the server, then drops the first answer as a reset connection would. */
function droppingFetch() {
  const dropped = [];
  const keys = [];
  const fetchImpl = async (url, init = {}) => {
    const { pathname } = new URL(url);
    const creates = init.method === "POST" && (pathname === "/api/v1/runs" || pathname.endsWith("/rollouts"));
    const response = await fetch(url, init);
    if (!creates) return response;
    keys.push(JSON.parse(init.body).client_key);
    if (dropped.includes(pathname)) return response;
    await response.arrayBuffer(); // the server committed it...
    dropped.push(pathname); // ...and the answer never arrives
    throw Object.assign(new TypeError("fetch failed"), {
      cause: Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }),
    });
  };
  return { fetch: fetchImpl, dropped, keys };
}

async function api(path) {
  const response = await fetch(`${live.baseUrl}/api/v1${path}`, { headers: { authorization: `Bearer ${live.apiKey}` } });
  assert.equal(response.status, 200, `${path}: ${response.status}`);
  return response.json();
}

test("a start retried after a dropped connection creates one run and one rollout", { skip: needsLive }, async () => {
  const wire = droppingFetch();
  const { client } = liveClient({ fetch: wire.fetch });
  const workflow = unique("ts-dropped");
  const run = await client.startRun(null, { workflowName: workflow });
  const attempt = await run.startRollout(null, { input: { n: 1 } });
  const done = await attempt.finish({ output: "ok" });
  assert.equal(done.status, "succeeded");
  assert.deepEqual(wire.dropped, ["/api/v1/runs", `/api/v1/runs/${run.id}/rollouts`]);
  assert.equal(wire.keys.length, 4);
  assert.equal(wire.keys[0], wire.keys[1], "the retry sends the first try's key");
  assert.equal(wire.keys[2], wire.keys[3]);
  assert.notEqual(wire.keys[0], wire.keys[2]);
  const runs = await api(`/runs?workflow_name=${encodeURIComponent(workflow)}`);
  assert.deepEqual(runs.items.map((r) => r.id), [run.id]);
  const rollouts = await api(`/rollouts?run=${run.id}`);
  assert.deepEqual(rollouts.items.map((r) => [r.id, r.attempt, r.status]), [[attempt.id, 1, "succeeded"]]);
  await client.shutdown();
});

test("finishes ride in the ingest batch with the time finish() was called", { skip: needsLive }, async () => {
  const posts = [];
  const { client } = liveClient({
    flushIntervalMs: 60_000,
    fetch: async (url, init = {}) => {
      if (init.method === "POST") posts.push([new URL(url).pathname, init.body ? JSON.parse(init.body) : null]);
      return fetch(url, init);
    },
  });
  const run = await client.startRun(null, { workflowName: unique("ts-batched-finish") });
  const attempts = [];
  for (let n = 0; n < 3; n++) attempts.push(await run.startRollout(null, { input: { n } }));
  posts.length = 0;
  const called = [];
  const finishes = attempts.map((attempt) => {
    attempt.message("answer", { role: "assistant" });
    attempt.score("reward", 1);
    called.push(Date.now());
    return attempt.finish({ output: "answer" });
  });
  await sleep(300);
  const stored = await Promise.all(finishes);
  assert.deepEqual(stored.map((r) => r.status), ["succeeded", "succeeded", "succeeded"]);
  assert.ok(posts.every(([path]) => path === "/api/v1/ingest"), "no per-rollout finish requests");
  assert.equal(posts.flatMap(([, body]) => body.finishes).length, 3);
  for (const [n, rollout] of stored.entries()) {
    assert.equal(rollout.event_count, 1);
    assert.equal(rollout.reward, 1);
    assert.ok(Math.abs(Date.parse(rollout.ended_at) - called[n]) < 500, "ended_at is when finish() was called");
  }
  assert.equal(client.stats.finished, 3);
  await client.shutdown();
});
