// The design's seed loop in TypeScript against a live server: a dataset with a file, a run, one rollout
// per task, files materialised, messages and tool calls in order, a failed attempt recorded as failed.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { RolloutApiError, withRollout } from "../dist/index.js";
import { liveClient, needsLive, unique } from "./helpers.mjs";

const PDF = new Uint8Array(Buffer.concat([Buffer.from("%PDF-1.4\n"), Buffer.alloc(64 * 1024, 7)]));

function answerTask(attempt, instruction, input, files) {
  const tool = attempt.toolCall("read_pdf", { page: input.page });
  const text = readFileSync(files[0]);
  tool.result(`${text.length} bytes`);
  if (input.refuse) throw new Error("model refused");
  attempt.message(`summary of page ${input.page}`, { role: "assistant" });
  return `${instruction}: ${text.length} bytes`;
}

test("the seed loop records one rollout per task, in order, with files and failures", { skip: needsLive }, async () => {
  const { client } = liveClient();
  const folder = mkdtempSync(join(tmpdir(), "rollout-ts-seed-"));
  const notes = join(folder, "notes.txt");
  writeFileSync(notes, "reviewer notes\n");
  const name = unique("paper-summary");
  const dataset = await client.createDataset(name, {
    tasks: [0, 1, 2].map((page) => ({
      key: `q${page}`,
      instruction: `Summarise page ${page}`,
      input: { page, refuse: page === 1 },
      expectedOutput: `page ${page}`,
      files: [{ name: "paper.pdf", data: PDF, mediaType: "application/pdf" }, notes],
    })),
  });
  assert.equal(dataset.taskCount, 3);
  await assert.rejects(client.createDataset(name), (error) => error instanceof RolloutApiError && error.status === 409);

  const run = await client.startRun(name, { workflowName: "Paper QA", groupId: "thread-42", agentName: "ts-test",
    model: "gpt-4o-mini", params: { temperature: 0 }, tags: ["ts"] });
  const seen = [];
  let firstPaths;
  for await (const item of run.tasks) {
    seen.push([item.task.key, item.repeatIndex]);
    const attempt = await run.startRollout(item);
    const files = await attempt.materializeFiles();
    assert.equal(files.length, 2);
    assert.equal(await attempt.materializeFiles(), files, "the second call is free");
    assert.deepEqual(new Uint8Array(readFileSync(files[0])), PDF);
    assert.equal(createHash("sha256").update(readFileSync(files[0])).digest("hex"), item.task.files[0].sha256);
    if (firstPaths) {
      assert.deepEqual(files, firstPaths, "the same bytes are cached once by SHA-256");
    } else {
      firstPaths = files;
    }
    try {
      attempt.message("Starting task", { role: "system" });
      const result = answerTask(attempt, item.task.instruction, item.task.input, files);
      await attempt.finish({ output: result });
    } catch (error) {
      attempt.error(String(error));
      await attempt.finish({ status: "failed", error: String(error) });
    }
  }
  assert.deepEqual(seen, [["q0", 0], ["q1", 0], ["q2", 0]]);
  const mtime = statSync(firstPaths[0]).mtimeMs;
  const again = await (await run.startRollout((await arrayOf(run.tasks))[0])).materializeFiles();
  assert.equal(statSync(again[0]).mtimeMs, mtime, "a later attempt reuses the cached file");
  const finished = await run.finish();
  assert.equal(finished.status, "finished");

  const detail = await client.getRun(run.number);
  assert.deepEqual(detail.info.aggregates.by_status, { succeeded: 2, failed: 1, running: 1 });
  const failed = await client.getRollout(`${run.number}/2`);
  assert.equal(failed.status, "failed");
  assert.equal(failed.error, "Error: model refused");
  assert.deepEqual(failed.events.map((e) => e.kind), ["message", "tool_call", "tool_result", "error"]);
  const first = await client.getRollout([run.number, 1]);
  assert.equal(first.task_key, "q0");
  assert.equal(first.output, `Summarise page 0: ${PDF.length} bytes`);
  assert.deepEqual(first.events.map((e) => [e.seq, e.kind]),
    [[1, "message"], [2, "tool_call"], [3, "tool_result"], [4, "message"]]);
  const [call, result] = first.events.slice(1, 3);
  assert.equal(call.name, "read_pdf");
  assert.deepEqual(call.arguments, { page: 0 });
  assert.equal(result.call_id, call.call_id);
  assert.equal(result.is_error, false);
  assert.ok(result.duration_ms >= 0, "the tool result carries its latency");
  assert.equal(first.events[0].role, "system");

  const listed = await client.listRollouts({ run: run.number, status: "failed" }).toArray();
  assert.deepEqual(listed.map((r) => r.attempt), [2]);

  await client.deleteRollout(failed.id);
  await assert.rejects(client.getRollout(failed.id), (error) => error.status === 404);
  await client.deleteRun(run.number);
  await assert.rejects(client.getRun(run.id), (error) => error.status === 404);
});

test("withRollout finishes by itself, re-runs take only failed tasks, repeats multiply the list", { skip: needsLive }, async () => {
  const { client } = liveClient();
  const name = unique("with-rollout");
  const dataset = await client.createDataset(name, { tasks: ["a", "b"].map((key) => ({ key, instruction: key })) });
  const run = await client.startRun(name, { numRepeats: 2 });
  const version = await dataset.addTasks([{ key: "c", instruction: "c" }], { message: "one more" });
  assert.equal(version.number, 2);
  assert.equal(dataset.latestVersion, 2);
  assert.deepEqual((await dataset.tasks().toArray()).map((t) => t.key).sort(), ["a", "b", "c"]);
  assert.equal(run.info.dataset_version, 1, "the run keeps the version it pinned");
  const items = await arrayOf(run.tasks);
  assert.deepEqual(items.map((i) => [i.task.key, i.repeatIndex]), [["a", 0], ["a", 1], ["b", 0], ["b", 1]]);

  for (const item of items) {
    const work = withRollout(run, item, async (attempt) => {
      await attempt.span("plan", async () => {
        attempt.reasoning(`thinking about ${item.task.key}`);
        attempt.llmCall({ model: "gpt-4o-mini", input: [{ role: "user", content: "hi" }], output: "ok",
          usage: { prompt_tokens: 100, completion_tokens: 20 }, latencyMs: 12 });
      });
      attempt.score("reward", item.task.key === "a" ? 1 : 0, { comment: "graded" });
      if (item.task.key === "b" && item.repeatIndex === 1) throw new TypeError("bad tool output");
      return { answer: item.task.key };
    });
    if (item.task.key === "b" && item.repeatIndex === 1) await assert.rejects(work, TypeError);
    else assert.deepEqual(await work, { answer: item.task.key });
  }
  await run.finish();

  const rollouts = await client.listRollouts({ run: run.id }).toArray();
  assert.equal(rollouts.length, 4);
  const bad = rollouts.find((r) => r.status === "failed");
  assert.equal(bad.error, "TypeError: bad tool output");
  const detail = await client.getRollout(bad.id);
  assert.deepEqual(detail.events.map((e) => e.kind), ["span", "reasoning", "llm_call", "error"]);
  const [span, reasoning, llm] = detail.events;
  assert.equal(span.parent_id ?? null, null);
  assert.equal(reasoning.parent_id, span.id);
  assert.equal(llm.parent_id, span.id);
  assert.deepEqual(llm.usage, { input_tokens: 100, output_tokens: 20, total_tokens: 120 });
  assert.equal(detail.total_tokens, 120);
  assert.ok(detail.cost > 0);
  assert.equal(detail.scores[0].name, "reward");
  const good = rollouts.find((r) => r.status === "succeeded" && r.reward === 1);
  assert.deepEqual(good.output, { answer: "a" });

  const rerun = await client.startRun(null, { onlyFailedFrom: run.number });
  const again = await arrayOf(rerun.tasks);
  assert.deepEqual(again.map((i) => i.task.key), ["b"]);
});

test("ad-hoc rollouts for production traffic need no dataset", { skip: needsLive }, async () => {
  const { client } = liveClient();
  const run = await client.startRun(null, { workflowName: unique("prod") });
  const attempt = await run.startRollout(null, { input: { question: "why?" }, groupKey: "g1", step: 3 });
  attempt.message("why?", { role: "user" });
  const done = await attempt.finish({ output: "because" });
  assert.equal(done.status, "succeeded");
  assert.equal(done.step, 3);
  const read = await client.getRollout(attempt.id);
  assert.deepEqual(read.input, { question: "why?" });
  assert.equal(read.events.length, 1);
});

async function arrayOf(iterable) {
  const out = [];
  for await (const item of iterable) out.push(item);
  return out;
}
