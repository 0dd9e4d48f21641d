// Delivery rules against a scripted fetch (no server): retries, what is never retried, finish after a lost
// answer, batching limits, and that telemetry never throws into the agent.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Client, RolloutConnectionError, wrapOpenAI } from "../dist/index.js";
import { recordingLogger } from "./helpers.mjs";

const json = (status, body) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

const networkError = (code) =>
  Object.assign(new TypeError("fetch failed"), { cause: Object.assign(new Error(code), { code }) });

const RUN = { id: "run_1", number: 1, url: "http://x/runs/1", num_repeats: 1, reward_score: "reward", status: "running",
  created_at: "2026-01-01T00:00:00Z", task_count: 0, aggregates: {} };
const rollout = (n, status = "running") => ({ id: `ro_${n}`, run_id: "run_1", run_number: 1, attempt: n,
  url: `http://x/ro/${n}`, repeat_index: 0, status, started_at: "2026-01-01T00:00:00Z" });

/** A scripted server: `routes` maps "METHOD /path" regexes to handlers; unmatched calls get happy defaults.
 * Its ingest applies finishes after events, once per rollout ("duplicate" after), as the real one does. */
function scripted(routes = []) {
  const calls = [];
  const finished = new Map();
  let attempts = 0;
  const fetch = async (url, init = {}) => {
    const { pathname } = new URL(url);
    const method = init.method ?? "GET";
    const body = typeof init.body === "string" ? JSON.parse(init.body) : undefined;
    const call = { method, path: pathname, body };
    calls.push(call);
    const key = `${method} ${pathname}`;
    for (const [pattern, handler] of routes) {
      if (pattern.test(key)) {
        const answer = await handler(call, calls);
        if (answer !== undefined) return answer;
      }
    }
    if (key === "POST /api/v1/runs") return json(201, RUN);
    if (/^POST \/api\/v1\/runs\/[^/]+\/rollouts$/.test(key)) return json(201, rollout(++attempts));
    if (key === "POST /api/v1/ingest") return json(200, ingest(body));
    const read = /^GET \/api\/v1\/rollouts\/(ro_\d+)$/.exec(key);
    if (read && finished.has(read[1])) return json(200, finished.get(read[1]));
    return json(404, { title: "Not found", detail: `no route ${key}` });
  };
  /** Store a batch (as the server would) and return its answer. */
  const ingest = (body) => {
    const finishes = (body.finishes ?? []).map((f, index) => {
      if (finished.has(f.rollout_id)) return { index, id: f.rollout_id, status: "duplicate" };
      finished.set(f.rollout_id, { ...rollout(Number(f.rollout_id.slice(3))), status: f.status ?? "succeeded",
        output: f.output ?? null, ended_at: f.ended_at });
      return { index, id: f.rollout_id, status: "created" };
    });
    return { created: body.events.length + body.scores.length, duplicates: 0, rejected: 0,
      events: body.events.map((e, index) => ({ index, id: e.id, status: "created" })),
      scores: body.scores.map((s, index) => ({ index, status: "created" })), finishes };
  };
  return { fetch, calls, ingest, finished, ingests: () => calls.filter((c) => c.path === "/api/v1/ingest") };
}

function client(server, options = {}) {
  const logger = recordingLogger();
  const c = new Client({ baseUrl: "http://fake", apiKey: "rk_x", fetch: server.fetch, logger,
    flushIntervalMs: 5, minBackoffMs: 5, maxBackoffMs: 20, retryWindowMs: 2000, ...options });
  return { client: c, logger };
}

describe("delivery", () => {
  test("events go out in ingest batches with client ids and a monotonic seq per rollout", async () => {
    const server = scripted();
    const { client: c } = client(server, { batchMaxEvents: 10 });
    const run = await c.startRun();
    const [a, b] = [await run.startRollout(), await run.startRollout()];
    for (let i = 0; i < 12; i++) {
      a.message(`a${i}`, { role: "user" });
      b.log(`b${i}`);
    }
    assert.equal(await c.flush(5000), true);
    const events = server.ingests().flatMap((call) => call.body.events);
    assert.ok(server.ingests().every((call) => call.body.events.length <= 10));
    assert.equal(events.length, 24);
    assert.equal(new Set(events.map((e) => e.id)).size, 24);
    for (const id of ["ro_1", "ro_2"]) {
      const seqs = events.filter((e) => e.rollout_id === id).map((e) => e.seq);
      assert.deepEqual(seqs, Array.from({ length: 12 }, (_, i) => i + 1));
    }
    assert.equal(c.stats.delivered, 24);
  });

  test("batches stay under the byte limit", async () => {
    const server = scripted();
    const { client: c } = client(server, { batchMaxBytes: 4096 });
    const attempt = await (await c.startRun()).startRollout();
    for (let i = 0; i < 10; i++) attempt.message("x".repeat(1000), { role: "user" });
    await c.flush(5000);
    assert.ok(server.ingests().length >= 3);
    for (const call of server.ingests()) assert.ok(JSON.stringify(call.body).length <= 4096);
  });

  test("network errors, 429 and 5xx are retried until delivered", async () => {
    let failures = 0;
    const server = scripted([[/POST \/api\/v1\/ingest/, () => {
      failures += 1;
      if (failures === 1) throw networkError("ECONNRESET");
      if (failures === 2) return json(503, { title: "Unavailable" });
      if (failures === 3) return new Response("", { status: 429, headers: { "retry-after": "0" } });
      return undefined;
    }]]);
    const { client: c } = client(server);
    const attempt = await (await c.startRun()).startRollout();
    attempt.message("hello", { role: "user" });
    assert.equal(await c.flush(5000), true);
    assert.equal(server.ingests().length, 4);
    const ids = server.ingests().map((call) => call.body.events[0].id);
    assert.equal(new Set(ids).size, 1, "a retried batch carries the same event ids");
    assert.deepEqual(c.stats, { pending: 0, delivered: 1, finished: 0, rejected: 0, dropped: 0 });
  });

  test("other 4xx answers are not retried and do not throw", async () => {
    const server = scripted([[/POST \/api\/v1\/ingest/, () => json(401, { title: "Unauthorized", detail: "bad key" })]]);
    const { client: c, logger } = client(server);
    const attempt = await (await c.startRun()).startRollout();
    attempt.message("one", { role: "user" });
    attempt.message("two", { role: "user" });
    assert.equal(await c.flush(5000), true);
    assert.equal(server.ingests().length, 1);
    assert.equal(c.stats.dropped, 2);
    assert.match(logger.warnings.join("\n"), /401.*bad key/);
  });

  test("a 422 naming one event sets only that event aside", async () => {
    let first = true;
    const server = scripted([[/POST \/api\/v1\/ingest/, () => {
      if (!first) return undefined;
      first = false;
      return json(422, { title: "Invalid input", errors: [{ field: "events.1", in: "body", message: "Value error, a message needs a role" }] });
    }]]);
    const { client: c } = client(server);
    const attempt = await (await c.startRun()).startRollout();
    attempt.message("ok", { role: "user" });
    attempt.message("bad", { role: "wizard" });
    attempt.message("ok too", { role: "user" });
    await c.flush(5000);
    assert.deepEqual(server.ingests()[1].body.events.map((e) => e.content), ["ok", "ok too"]);
    assert.equal(c.stats.rejected, 1);
    assert.equal(c.stats.delivered, 2);
  });

  test("a finish rides in the ingest batch of its events, stamped with the time finish() was called", async () => {
    const server = scripted();
    const { client: c } = client(server, { flushIntervalMs: 60_000 });
    const attempt = await (await c.startRun()).startRollout();
    attempt.message("before finish", { role: "user" });
    attempt.score("reward", 1);
    const called = Date.now();
    const done = await attempt.finish({ output: "answer", metadata: { k: 1 } });
    assert.equal(done.status, "succeeded");
    assert.equal(attempt.info.status, "succeeded", "the attempt keeps the stored rollout");
    const writes = server.calls.filter((call) => call.method === "POST").map((call) => call.path);
    assert.deepEqual(writes, ["/api/v1/runs", "/api/v1/runs/run_1/rollouts", "/api/v1/ingest"]);
    const batch = server.ingests()[0].body;
    assert.deepEqual([batch.events.length, batch.scores.length, batch.finishes.length], [1, 1, 1]);
    const { ended_at, ...finish } = batch.finishes[0];
    assert.deepEqual(finish, { output: "answer", metadata: { k: 1 }, rollout_id: "ro_1" });
    assert.ok(Math.abs(Date.parse(ended_at) - called) < 1000);
    assert.equal(c.stats.finished, 1);
    assert.equal(attempt.message("late"), "", "events after finish are ignored");
  });

  test("a finish whose answer was lost is confirmed by the duplicate that follows", async () => {
    let tries = 0;
    const server = scripted([[/POST \/api\/v1\/ingest/, (call) => {
      tries += 1;
      if (tries > 1) return undefined;
      server.ingest(call.body); // the server stored events and finish...
      throw networkError("ECONNRESET"); // ...and the answer was lost
    }]]);
    const { client: c, logger } = client(server);
    const attempt = await (await c.startRun()).startRollout();
    attempt.message("hi", { role: "user" });
    const done = await attempt.finish({ output: 42 });
    assert.equal(tries, 2);
    assert.equal(done.status, "succeeded");
    assert.deepEqual(server.ingests()[0].body, server.ingests()[1].body, "the same batch again, finish and all");
    assert.ok(!logger.warnings.some((w) => /could not finish/.test(w)));
  });

  test("a rollout already finished elsewhere is reported, not thrown", async () => {
    const server = scripted();
    server.finished.set("ro_1", rollout(1, "failed"));
    const { client: c, logger } = client(server);
    const attempt = await (await c.startRun()).startRollout();
    assert.equal(await attempt.finish(), null);
    assert.match(logger.warnings.join("\n"), /could not finish rollout ro_1: it was already finished/);
  });

  test("a 422 naming a finish sets only that finish aside", async () => {
    let first = true;
    const server = scripted([[/POST \/api\/v1\/ingest/, () => {
      if (!first) return undefined;
      first = false;
      return json(422, { title: "Invalid input", detail: "Field 'finishes.0.status': bad",
        errors: [{ field: "finishes.0.status", in: "body", message: "Input should be 'succeeded', 'failed', …" }] });
    }]]);
    const { client: c, logger } = client(server, { flushIntervalMs: 60_000 });
    const attempt = await (await c.startRun()).startRollout();
    attempt.message("kept", { role: "user" });
    assert.equal(await attempt.finish({ status: "exploded" }), null);
    assert.equal(await c.flush(5000), true);
    assert.deepEqual(server.ingests()[1].body.events.map((e) => e.content), ["kept"]);
    assert.deepEqual(server.ingests()[1].body.finishes, []);
    assert.match(logger.warnings.join("\n"), /could not finish rollout ro_1: Field 'finishes.0.status'/);
  });

  test("telemetry never throws: odd values, a full queue, calls after shutdown", async () => {
    const server = scripted();
    const { client: c } = client(server, { maxQueueSize: 5, flushIntervalMs: 60_000 });
    const attempt = await (await c.startRun()).startRollout();
    const circular = { name: "loop" };
    circular.self = circular;
    assert.notEqual(attempt.message(circular, { role: "user" }), "");
    assert.notEqual(attempt.log(10n), "");
    attempt.toolCall("t", { big: 1n }).error(new Error("tool broke"));
    attempt.llmCall({ model: "gpt-4o", usage: "not an object", output: circular });
    for (let i = 0; i < 10; i++) attempt.reasoning(`r${i}`);
    assert.ok(c.stats.dropped >= 5);
    await c.shutdown(2000);
    attempt.score("late", 1);
    assert.equal(await attempt.finish({ output: () => "functions are not JSON" }), null);
  });

  test("flush gives up at its timeout while the server is down, and shutdown drops the rest", async () => {
    const server = scripted([[/POST \/api\/v1\/ingest/, () => { throw networkError("ECONNREFUSED"); }]]);
    const { client: c, logger } = client(server);
    const attempt = await (await c.startRun()).startRollout();
    attempt.message("lost", { role: "user" });
    assert.equal(await c.flush(150), false);
    assert.equal(await c.shutdown(50), false);
    assert.equal(c.stats.dropped, 1);
    assert.match(logger.warnings.join("\n"), /retrying in the background/);
  });
});

describe("blocking calls", () => {
  test("starts carry a client_key, so a reset connection, a 5xx and one 409 are retried with it", async () => {
    // (Within the 2 s retry window of these clients: the transport's backoff starts at 200 ms.)
    const failures = [() => { throw networkError("ECONNRESET"); }, () => json(502, { title: "Bad gateway" }),
      () => json(409, { title: "Conflict", detail: "A concurrent request wrote the same unique value" })];
    let runFailures = [...failures];
    let rolloutFailures = [...failures];
    const server = scripted([
      [/POST \/api\/v1\/runs$/, () => runFailures.shift()?.()],
      [/POST \/api\/v1\/runs\/run_1\/rollouts/, () => rolloutFailures.shift()?.()],
    ]);
    const { client: c } = client(server);
    const run = await c.startRun();
    const attempt = await run.startRollout();
    assert.equal(attempt.id, "ro_1");
    for (const path of ["/api/v1/runs", "/api/v1/runs/run_1/rollouts"]) {
      const keys = server.calls.filter((call) => call.path === path).map((call) => call.body.client_key);
      assert.equal(keys.length, 4);
      assert.equal(new Set(keys).size, 1, `${path}: every retry sends the same key`);
      assert.match(keys[0], /^[A-Za-z0-9_.:-]{1,80}$/);
    }
    await run.startRollout();
    const keys = server.calls.filter((call) => call.path.endsWith("/rollouts")).map((call) => call.body.client_key);
    assert.notEqual(keys.at(-1), keys[0], "each call has a key of its own");

    const conflicted = scripted([[/rollouts$/, () => json(409, { title: "Conflict", detail: "run 1 is finished" })]]);
    const { client: other } = client(conflicted);
    await assert.rejects((await other.startRun()).startRollout(), (error) => error.status === 409);
    assert.equal(conflicted.calls.filter((call) => call.path.endsWith("/rollouts")).length, 2, "one 409 retried");
  });

  test("API errors carry the problem details", async () => {
    const server = scripted([[/POST \/api\/v1\/runs$/, () =>
      json(422, { title: "Invalid input", detail: "Field 'num_repeats': too big", errors: [{ field: "num_repeats" }] })]]);
    const { client: c } = client(server);
    await assert.rejects(c.startRun(null, { numRepeats: 5000 }), (error) => {
      assert.equal(error.name, "RolloutApiError");
      assert.equal(error.status, 422);
      assert.equal(error.field, "num_repeats");
      assert.match(error.message, /num_repeats/);
      return true;
    });
  });
});

describe("wrapOpenAI with a hand-made client", () => {
  test("records into the attempt given and leaves the original untouched", async () => {
    const server = scripted();
    const { client: c } = client(server);
    const attempt = await (await c.startRun()).startRollout();
    const create = async (params) => ({ id: "cmpl", model: params.model, choices: [{ message: { role: "assistant",
      content: "hi" }, finish_reason: "stop" }], usage: { prompt_tokens: 3, completion_tokens: 1 } });
    const raw = { chat: { completions: { create } } };
    const wrapped = wrapOpenAI(raw, { attempt });
    const answer = await wrapped.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "x" }] });
    assert.equal(answer.choices[0].message.content, "hi");
    assert.equal(raw.chat.completions.create, create);
    await raw.chat.completions.create({ model: "m", messages: [] });
    await c.flush(2000);
    const events = server.ingests().flatMap((call) => call.body.events);
    assert.equal(events.length, 1);
    assert.equal(events[0].kind, "llm_call");
    assert.deepEqual(events[0].usage, { input_tokens: 3, output_tokens: 1, total_tokens: 4 });
    assert.ok(events[0].cost > 0);
  });
});
