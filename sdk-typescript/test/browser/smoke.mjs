// Runs in the browser (see index.html): a dataset with an uploaded Blob, a run, withRollout, materializeFiles
// as File objects, a span without AsyncLocalStorage, a tool call; then reads the rollout back.
import { Client, withRollout } from "../../dist/index.js";

const out = document.getElementById("result");
const check = (condition, what) => {
  if (!condition) throw new Error(`check failed: ${what}`);
};

try {
  const { baseUrl, apiKey } = await (await fetch("/config.json")).json();
  const client = new Client({ baseUrl, apiKey, flushIntervalMs: 10 });
  const name = `browser-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
  const note = new File(["hello from the browser"], "note.txt", { type: "text/plain" });
  await client.createDataset(name, { tasks: [{ key: "b1", instruction: "read the note", files: [note] }] });
  const run = await client.startRun(name, { workflowName: "browser" });
  for await (const item of run.tasks) {
    await withRollout(run, item, async (attempt) => {
      const files = await attempt.materializeFiles();
      check(files.length === 1 && files[0] instanceof Blob, "materializeFiles gives Blobs");
      check(files[0].name === "note.txt", "the Blob keeps the file name");
      check((await files[0].text()) === "hello from the browser", "the Blob holds the bytes");
      check((await attempt.materializeFiles()) === files, "the second call is free");
      await attempt.span("read", async () => attempt.message("inside the span", { role: "user" }));
      attempt.toolCall("lookup", { q: 1 }).result("found");
      return "done";
    });
  }
  check(await client.flush(5000), "flush");
  const rollout = await client.getRollout(`${run.number}/1`);
  const kinds = rollout.events.map((e) => `${e.kind}${e.parent_id ? ">" + rollout.events.find((p) => p.id === e.parent_id)?.kind : ""}`);
  check(rollout.status === "succeeded" && rollout.output === "done", `rollout finished: ${rollout.status}`);
  check(kinds.join(",") === "span,message>span,tool_call,tool_result", `trace: ${kinds.join(",")}`);
  out.textContent = `PASS ${kinds.join(",")}`;
} catch (error) {
  out.textContent = `FAIL ${error?.stack ?? error}`;
}
