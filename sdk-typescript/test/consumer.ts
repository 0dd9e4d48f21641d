// Compiled (never run) by types.test.mjs: what a strict TypeScript consumer writes must type-check against
// the published declarations in dist/, including wrapOpenAI keeping the client's own type.
import OpenAI from "openai";
import {
  Client,
  RolloutApiError,
  withRollout,
  wrapOpenAI,
  type Attempt,
  type RolloutDetail,
  type RunTask,
  type components,
} from "@rollout/sdk";

export async function seedLoop(): Promise<void> {
  const client = new Client({ baseUrl: "http://127.0.0.1:8000", apiKey: "rk_x" });
  await client.createDataset("paper-summary-v1", {
    tasks: [{ key: "q0", instruction: "Summarise", input: { page: 1 }, files: ["paper.pdf", new Uint8Array([1])] }],
  });
  const run = await client.startRun("paper-summary-v1", { workflowName: "Paper QA", groupId: "thread-42", numRepeats: 2 });
  for await (const item of run.tasks) {
    const task: RunTask = item;
    const repeat: number = task.repeatIndex;
    const expected: unknown = item.task.expectedOutput;
    const attempt: Attempt = await run.startRollout(item);
    const paths: string[] = await attempt.materializeFiles();
    const blobs: File[] = await attempt.materializeFiles({ as: "blob" });
    attempt.message("Starting task", { role: "system" });
    attempt.toolCall("search", { q: item.task.instruction }).result({ hits: paths.length + blobs.length + repeat });
    await attempt.span("think", async (span) => attempt.reasoning(`in ${span.name}`));
    attempt.llmCall({ model: "gpt-4o", usage: { input_tokens: 1, output_tokens: 2 }, output: expected });
    attempt.score("reward", 1, { comment: "ok" });
    const finished = await attempt.finish({ output: "x", status: "succeeded" });
    const status: string | undefined = finished?.status;
    void status;
  }
  const output: number = await withRollout(run, null, async (attempt) => attempt.attempt);
  const openai: OpenAI = wrapOpenAI(new OpenAI({ apiKey: "sk" }));
  const completion = await openai.chat.completions.create({ model: "gpt-4o-mini", messages: [] });
  const content: string | null | undefined = completion.choices[0]?.message.content;
  const detail: RolloutDetail = await client.getRollout([run.number, output]);
  const events: components["schemas"]["EventOut"][] = detail.events ?? [];
  try {
    await client.getRun(47);
  } catch (error) {
    if (error instanceof RolloutApiError) console.log(error.status, error.problem?.detail, content, events.length);
  }
  await client.shutdown();
}
