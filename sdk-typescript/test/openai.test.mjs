// wrapOpenAI with the real `openai` package against a fake OpenAI-compatible server started here:
// chat completions (plain, streaming, with tool calls, failing) and responses become llm_call events.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { withRollout, wrapOpenAI } from "../dist/index.js";
import { liveClient, needsLive } from "./helpers.mjs";

const TOOL_CALL = { id: "call_1", type: "function", function: { name: "search", arguments: '{"q":"attention"}' } };
const USAGE = { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 };
let fake;
let baseURL;

function chatCompletion(body) {
  const wantsTool = Array.isArray(body.tools) && body.tools.length > 0;
  return {
    id: "chatcmpl-1", object: "chat.completion", created: 1, model: `${body.model}-2024-07-18`,
    choices: [{ index: 0, finish_reason: wantsTool ? "tool_calls" : "stop", logprobs: null,
      message: { role: "assistant", content: wantsTool ? null : `echo: ${body.messages.at(-1).content}`, refusal: null,
        ...(wantsTool ? { tool_calls: [TOOL_CALL] } : {}) } }],
    usage: USAGE,
  };
}

function streamChunks(body) {
  const base = { id: "chatcmpl-2", object: "chat.completion.chunk", created: 1, model: body.model };
  const delta = (d, finish = null) => ({ ...base, choices: [{ index: 0, delta: d, finish_reason: finish }] });
  const chunks = [
    delta({ role: "assistant", content: "" }),
    delta({ content: "Hel" }),
    delta({ content: "lo" }),
    delta({ tool_calls: [{ index: 0, id: "call_9", type: "function", function: { name: "lookup", arguments: "" } }] }),
    delta({ tool_calls: [{ index: 0, function: { arguments: '{"id":' } }] }),
    delta({ tool_calls: [{ index: 0, function: { arguments: "7}" } }] }),
    delta({}, "tool_calls"),
  ];
  if (body.stream_options?.include_usage) chunks.push({ ...base, choices: [], usage: USAGE });
  return chunks;
}

before(async () => {
  fake = createServer((request, response) => {
    let raw = "";
    request.on("data", (chunk) => (raw += chunk));
    request.on("end", () => {
      const body = raw ? JSON.parse(raw) : {};
      const send = (status, payload) => {
        response.writeHead(status, { "content-type": "application/json" });
        response.end(JSON.stringify(payload));
      };
      if (body.model === "broken") {
        return send(400, { error: { message: "no such model", type: "invalid_request_error", code: "model_not_found" } });
      }
      if (request.url === "/v1/chat/completions" && body.stream) {
        response.writeHead(200, { "content-type": "text/event-stream" });
        for (const chunk of streamChunks(body)) response.write(`data: ${JSON.stringify(chunk)}\n\n`);
        return response.end("data: [DONE]\n\n");
      }
      if (request.url === "/v1/chat/completions") return send(200, chatCompletion(body));
      if (request.url === "/v1/responses") {
        return send(200, { id: "resp_1", object: "response", created_at: 1, model: body.model, status: "completed",
          output: [{ type: "message", id: "msg_1", role: "assistant", status: "completed",
            content: [{ type: "output_text", text: "a response", annotations: [] }] }],
          usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 } });
      }
      send(404, { error: { message: `no route ${request.url}` } });
    });
  });
  await new Promise((resolve) => fake.listen(0, "127.0.0.1", resolve));
  baseURL = `http://127.0.0.1:${fake.address().port}/v1`;
});

after(() => fake?.close());

test("wrapOpenAI records chat, streaming, responses and failed calls as llm_call events", { skip: needsLive }, async () => {
  const { client } = liveClient();
  const openai = new OpenAI({ apiKey: "sk-test", baseURL, maxRetries: 0 });
  const originalCreate = openai.chat.completions.create;
  const wrapped = wrapOpenAI(openai);
  assert.notEqual(wrapped, openai);
  const run = await client.startRun(null, { workflowName: "ts-openai" });
  const messages = [{ role: "system", content: "be brief" }, { role: "user", content: "find attention papers" }];

  const attemptId = await withRollout(run, null, async (attempt) => {
    const completion = await wrapped.chat.completions.create({ model: "gpt-4o-mini", messages,
      tools: [{ type: "function", function: { name: "search", parameters: { type: "object" } } }] });
    assert.equal(completion.choices[0].message.tool_calls[0].id, "call_1");

    const stream = await wrapped.chat.completions.create({ model: "gpt-4o-mini", messages, stream: true,
      stream_options: { include_usage: true } });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
    assert.equal(text, "Hello");

    const { data, response } = await wrapped.chat.completions
      .create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "again" }] })
      .withResponse();
    assert.equal(data.choices[0].message.content, "echo: again");
    assert.equal(response.status, 200);

    const answer = await wrapped.responses.create({ model: "gpt-4o-mini", input: "say something" });
    assert.equal(answer.output_text, "a response");

    await assert.rejects(wrapped.chat.completions.create({ model: "broken", messages }), OpenAI.BadRequestError);

    await openai.chat.completions.create({ model: "gpt-4o-mini", messages }); // the original records nothing
    return attempt.id;
  });
  assert.equal(openai.chat.completions.create, originalCreate, "the client passed in is not modified");

  const events = await client.listEvents(attemptId).toArray();
  assert.deepEqual(events.map((e) => e.kind), ["llm_call", "llm_call", "llm_call", "llm_call", "llm_call"]);
  const [tools, streamed, plain, responses, failed] = events;

  assert.equal(tools.model, "gpt-4o-mini-2024-07-18");
  assert.deepEqual(tools.input, messages);
  assert.deepEqual(tools.tool_calls, [TOOL_CALL]);
  assert.deepEqual(tools.usage, { input_tokens: 12, output_tokens: 7, total_tokens: 19 });
  assert.ok(tools.cost > 0, "priced from the built-in table");
  assert.ok(tools.duration_ms >= 0 && tools.latency_ms >= 0);
  assert.equal(tools.params.tools[0].function.name, "search");

  assert.equal(streamed.stream, true);
  assert.equal(streamed.output.content, "Hello");
  assert.deepEqual(streamed.tool_calls, [{ id: "call_9", type: "function", function: { name: "lookup", arguments: '{"id":7}' } }]);
  assert.deepEqual(streamed.usage, { input_tokens: 12, output_tokens: 7, total_tokens: 19 });
  assert.equal(streamed.finish_reason, "tool_calls");
  assert.ok(streamed.time_to_first_token_ms >= 0);

  assert.equal(plain.output.content, "echo: again");
  assert.equal(responses.name, "responses.create");
  assert.equal(responses.input, "say something");
  assert.equal(responses.output_text, "a response");
  assert.deepEqual(responses.usage, { input_tokens: 5, output_tokens: 2, total_tokens: 7 });
  assert.match(failed.error, /no such model/);
  assert.equal(failed.status, 400);

  const rollout = await client.getRollout(attemptId, { eventsLimit: 0 });
  assert.equal(rollout.input_tokens, 12 * 3 + 5);
});

test("concurrent rollouts each get their own calls", { skip: needsLive }, async () => {
  const { client } = liveClient();
  const wrapped = wrapOpenAI(new OpenAI({ apiKey: "sk-test", baseURL, maxRetries: 0 }));
  const run = await client.startRun(null, { workflowName: "ts-openai-concurrent" });
  const ids = await Promise.all(["one", "two", "three"].map((word) =>
    withRollout(run, null, async (attempt) => {
      for (let i = 0; i < 3; i++) {
        await wrapped.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: `${word} ${i}` }] });
      }
      return [word, attempt.id];
    })));
  for (const [word, id] of ids) {
    const events = await client.listEvents(id).toArray();
    assert.deepEqual(events.map((e) => e.output.content), [0, 1, 2].map((i) => `echo: ${word} ${i}`));
  }
});
