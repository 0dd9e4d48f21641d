// The seed loop from the design brief, in TypeScript: one run over a dataset, one attempt per task, the
// task's files on local disk, the trace recorded as the agent works, a failure recorded as failed.
//
//   (cd ../../sdk-typescript && npm ci && npm run build)   # build the SDK once
//   npm install                                            # links @rollout/sdk from ../../sdk-typescript
//   ROLLOUT_BASE_URL=http://127.0.0.1:8000 ROLLOUT_API_KEY=rk_… node seed-loop.mjs [dataset-name]
import { readFile } from "node:fs/promises";
import { Client, RolloutApiError } from "@rollout/sdk";

const client = new Client(); // reads ROLLOUT_BASE_URL and ROLLOUT_API_KEY
const datasetName = process.argv[2] ?? "paper-summary-v1";

// A three-page "paper" and one task per page asked about; page 9 does not exist, so that attempt fails.
const TOPICS = ["attention", "multi-head attention", "results on WMT 2014"];
const PAPER = new TextEncoder().encode(
  "%PDF-1.4\n" + TOPICS.map((topic, i) => `page ${i + 1}: ${topic}`).join("\f"),
);

async function ensureDataset() {
  try {
    return await client.getDataset(datasetName);
  } catch (error) {
    if (!(error instanceof RolloutApiError && error.status === 404)) throw error;
  }
  return client.createDataset(datasetName, {
    tasks: [1, 2, 9].map((page) => ({
      key: `page-${page}`,
      instruction: `Summarise page ${page} of the paper`,
      input: { page },
      files: [{ name: "paper.pdf", data: PAPER, mediaType: "application/pdf" }],
    })),
  });
}

// The "agent": reads the page with a tool and answers. Everything it does lands in the attempt's trace.
async function answerTask(attempt, instruction, input, files) {
  const tool = attempt.toolCall("read_pdf", { page: input.page });
  const pages = (await readFile(files[0], "latin1")).split("\f");
  if (input.page > pages.length) {
    tool.error(`no page ${input.page}`);
    throw new Error(`page ${input.page} is out of range (the paper has ${pages.length} pages)`);
  }
  const text = pages[input.page - 1];
  tool.result(text);
  const summary = `${instruction}: ${text.slice(text.indexOf(": ") + 2)}`;
  attempt.message(summary, { role: "assistant" });
  return summary;
}

await ensureDataset();
const run = await client.startRun(datasetName, { workflowName: "Paper QA", groupId: "thread-42" });
console.log(`run ${run.number}: ${run.url}`);
for await (const task of run.tasks) {
  const attempt = await run.startRollout(task);
  const files = await attempt.materializeFiles();
  try {
    attempt.message("Starting task", { role: "system" });
    const result = await answerTask(attempt, task.task.instruction, task.task.input, files);
    await attempt.finish({ output: result });
    console.log(`  attempt ${attempt.attempt} (${task.task.key}): succeeded  ${attempt.url}`);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    attempt.error(message);
    await attempt.finish({ status: "failed", error: message });
    console.log(`  attempt ${attempt.attempt} (${task.task.key}): failed: ${message}  ${attempt.url}`);
    // The design's Python loop re-raises here and stops the run at the first failure; an eval keeps going.
  }
}
await run.finish();
await client.shutdown();
