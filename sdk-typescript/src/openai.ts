// wrapOpenAI: record each chat.completions / responses call of one OpenAI client as an llm_call event
// (input messages, output, tool calls, usage, latency, model, cost), streaming included. Only the object
// passed in is wrapped — a Proxy around it — and nothing global is patched.

import { currentAttempt, type Attempt } from "./attempt.js";
import type { PriceTable } from "./prices.js";
import { costOf, normalizeUsage } from "./prices.js";

export interface WrapOpenAIOptions {
  /** The attempt to record into (or a function returning it). Default: `currentAttempt()` at call time. */
  attempt?: Attempt | (() => Attempt | undefined);
  /** Prices per million tokens, merged over the built-in table, for the calls' cost. */
  prices?: PriceTable;
}

type Kind = "chat" | "responses";

const WRAPPED: Record<string, Kind> = {
  "chat.completions.create": "chat",
  "chat.completions.parse": "chat",
  "responses.create": "responses",
  "responses.parse": "responses",
};
const PREFIXES = new Set(["chat", "chat.completions", "responses"]);

/**
 * A view of `client` (an `OpenAI` instance or anything of the same shape) that records
 * `chat.completions.create/parse` and `responses.create/parse` calls, streaming or not, into the current
 * attempt. Calls made outside any attempt pass through unrecorded. The original client is not modified.
 */
export function wrapOpenAI<T extends object>(client: T, options: WrapOpenAIOptions = {}): T {
  return wrapPath(client, "", options, new WeakMap()) as T;
}

function wrapPath(target: object, path: string, options: WrapOpenAIOptions, cache: WeakMap<object, object>): object {
  const cached = cache.get(target);
  if (cached) return cached;
  const proxy = new Proxy(target, {
    get(t, prop, receiver) {
      const value = Reflect.get(t, prop, t);
      if (typeof prop !== "string") return typeof value === "function" ? value.bind(t) : value;
      const next = path ? `${path}.${prop}` : prop;
      const kind = WRAPPED[next];
      if (kind && typeof value === "function") return recorder(value.bind(t), kind, next, options);
      if (PREFIXES.has(next) && value && typeof value === "object") return wrapPath(value, next, options, cache);
      if (typeof value === "function") return value.bind(t);
      void receiver;
      return value;
    },
  });
  cache.set(target, proxy);
  return proxy;
}

function resolveAttempt(options: WrapOpenAIOptions): Attempt | undefined {
  const given = typeof options.attempt === "function" ? options.attempt() : options.attempt;
  const attempt = given ?? currentAttempt();
  return attempt && !attempt.finished ? attempt : undefined;
}

function recorder(original: (...args: any[]) => any, kind: Kind, name: string, options: WrapOpenAIOptions) {
  return function recorded(this: unknown, ...args: any[]): any {
    const attempt = resolveAttempt(options);
    if (!attempt) return original(...args);
    const params = (args[0] ?? {}) as Record<string, any>;
    const call = new CallRecord(attempt, kind, name, params, options.prices);
    let result: any;
    try {
      result = original(...args);
    } catch (error) {
      call.fail(error);
      throw error;
    }
    if (!result || typeof result.then !== "function") return call.done(result);
    const settled = result.then(
      (value: unknown) => call.done(value),
      (error: unknown) => {
        call.fail(error);
        throw error;
      },
    );
    settled.catch(() => undefined); // the caller sees the rejection through the proxy below
    // Keep the SDK's promise type (withResponse(), asResponse()…) while routing awaits through the recording.
    return new Proxy(result, {
      get(t, prop) {
        if (prop === "then") return settled.then.bind(settled);
        if (prop === "catch") return settled.catch.bind(settled);
        if (prop === "finally") return settled.finally.bind(settled);
        const value = Reflect.get(t, prop, t);
        return typeof value === "function" ? value.bind(t) : value;
      },
    });
  };
}

/** One provider call being recorded; emits exactly one llm_call event. */
class CallRecord {
  private readonly started = Date.now();
  private firstTokenAt: number | undefined;
  private recorded = false;

  constructor(
    private readonly attempt: Attempt,
    private readonly kind: Kind,
    private readonly name: string,
    private readonly params: Record<string, any>,
    private readonly prices: PriceTable | undefined,
  ) {}

  private get streaming(): boolean {
    return this.params.stream === true;
  }

  done(value: unknown): unknown {
    if (this.streaming && value && typeof value === "object") return this.wrapStream(value);
    try {
      if (this.kind === "chat") this.recordChat(value as any);
      else this.recordResponse(value as any);
    } catch {
      // recording must never break the agent's call
    }
    return value;
  }

  fail(error: unknown): void {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    const status = (error as any)?.status;
    this.emit({ output: undefined, usage: undefined, error: message, extra: status ? { status } : {} });
  }

  private request(): Record<string, unknown> {
    const { messages: _m, input: _i, stream: _s, ...rest } = this.params;
    return rest;
  }

  private emit(call: {
    model?: string;
    output: unknown;
    usage: unknown;
    toolCalls?: unknown;
    error?: string;
    extra?: Record<string, unknown>;
  }): void {
    if (this.recorded) return;
    this.recorded = true;
    const model = call.model ?? this.params.model;
    const usage = normalizeUsage(call.usage);
    const input =
      this.kind === "chat"
        ? this.params.messages
        : this.params.instructions !== undefined
          ? { instructions: this.params.instructions, input: this.params.input }
          : this.params.input;
    const extra: Record<string, unknown> = { ...(call.extra ?? {}) };
    if (this.streaming) extra.stream = true;
    if (this.firstTokenAt !== undefined) extra.time_to_first_token_ms = this.firstTokenAt - this.started;
    if (call.error) extra.error = call.error;
    const request = this.request();
    delete request.model;
    if (Object.keys(request).length) extra.params = request;
    this.attempt.llmCall({
      name: this.name,
      model,
      input,
      output: call.output,
      usage,
      cost: model && usage ? costOf(model, usage, this.prices) : undefined,
      toolCalls: call.toolCalls,
      startedAt: this.started,
      endedAt: Date.now(),
      latencyMs: Date.now() - this.started,
      ...extra,
    });
  }

  private recordChat(completion: any): void {
    const choice = completion?.choices?.[0];
    const message = choice?.message;
    const output = message
      ? Object.fromEntries(Object.entries(message).filter(([, v]) => v !== undefined && v !== null))
      : undefined;
    this.emit({
      model: completion?.model,
      output,
      usage: completion?.usage,
      toolCalls: message?.tool_calls?.length ? message.tool_calls : undefined,
      extra: { finish_reason: choice?.finish_reason, response_id: completion?.id },
    });
  }

  private recordResponse(response: any): void {
    const output = response?.output;
    const toolCalls = Array.isArray(output) ? output.filter((item: any) => item?.type === "function_call") : [];
    this.emit({
      model: response?.model,
      output: output ?? response?.output_text,
      usage: response?.usage,
      toolCalls: toolCalls.length ? toolCalls : undefined,
      extra: { response_id: response?.id, output_text: response?.output_text, status: response?.status },
    });
  }

  /** Record the stream as the caller reads it; the llm_call is emitted when it ends, breaks or fails. */
  private wrapStream(stream: any): unknown {
    const accumulate = this.kind === "chat" ? new ChatAccumulator() : new ResponsesAccumulator();
    const finish = (error?: unknown) => {
      try {
        if (error !== undefined) {
          const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
          this.emit({ ...accumulate.result(), error: message });
        } else this.emit(accumulate.result());
      } catch {
        // never break the caller's stream
      }
    };
    const self = this;
    const record = (iterator: AsyncIterator<any>): AsyncGenerator<any> =>
      (async function* () {
        let failed: unknown;
        try {
          while (true) {
            const step = await iterator.next();
            if (step.done) break;
            if (self.firstTokenAt === undefined) self.firstTokenAt = Date.now();
            try {
              accumulate.add(step.value);
            } catch {
              // an odd chunk is recorded as far as it goes
            }
            yield step.value;
          }
        } catch (error) {
          failed = error;
          throw error;
        } finally {
          if (failed === undefined) await iterator.return?.();
          finish(failed);
        }
      })();
    // openai's Stream reads chunks through its `iterator` property (for await, tee(), toReadableStream()):
    // replacing it on this one response object records every way of reading it.
    if (typeof stream.iterator === "function") {
      const original = stream.iterator.bind(stream);
      stream.iterator = () => record(original());
      return stream;
    }
    if (typeof stream[Symbol.asyncIterator] === "function") {
      const original = stream[Symbol.asyncIterator].bind(stream);
      return new Proxy(stream, {
        get(t, prop) {
          if (prop === Symbol.asyncIterator) return () => record(original());
          const value = Reflect.get(t, prop, t);
          return typeof value === "function" ? value.bind(t) : value;
        },
      });
    }
    finish();
    return stream;
  }
}

interface Accumulated {
  model?: string;
  output: unknown;
  usage: unknown;
  toolCalls?: unknown;
  extra?: Record<string, unknown>;
}

class ChatAccumulator {
  private model: string | undefined;
  private id: string | undefined;
  private role = "assistant";
  private content = "";
  private reasoning = "";
  private finishReason: string | undefined;
  private usage: unknown;
  private readonly tools = new Map<number, { id?: string; type: string; function: { name: string; arguments: string } }>();

  add(chunk: any): void {
    this.model ??= chunk?.model;
    this.id ??= chunk?.id;
    if (chunk?.usage) this.usage = chunk.usage;
    const choice = chunk?.choices?.[0];
    if (!choice) return;
    const delta = choice.delta ?? {};
    if (delta.role) this.role = delta.role;
    if (typeof delta.content === "string") this.content += delta.content;
    if (typeof delta.reasoning_content === "string") this.reasoning += delta.reasoning_content;
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    for (const call of delta.tool_calls ?? []) {
      const index = typeof call.index === "number" ? call.index : this.tools.size;
      let tool = this.tools.get(index);
      if (!tool) this.tools.set(index, (tool = { type: call.type ?? "function", function: { name: "", arguments: "" } }));
      if (call.id) tool.id = call.id;
      if (call.function?.name) tool.function.name += call.function.name;
      if (call.function?.arguments) tool.function.arguments += call.function.arguments;
    }
  }

  result(): Accumulated {
    const toolCalls = [...this.tools.entries()].sort(([a], [b]) => a - b).map(([, tool]) => tool);
    const output: Record<string, unknown> = { role: this.role, content: this.content || null };
    if (toolCalls.length) output.tool_calls = toolCalls;
    if (this.reasoning) output.reasoning_content = this.reasoning;
    return {
      model: this.model,
      output,
      usage: this.usage,
      toolCalls: toolCalls.length ? toolCalls : undefined,
      extra: { finish_reason: this.finishReason, response_id: this.id },
    };
  }
}

class ResponsesAccumulator {
  private final: any;
  private text = "";

  add(event: any): void {
    if (typeof event?.type !== "string") return;
    if (event.type === "response.output_text.delta" && typeof event.delta === "string") this.text += event.delta;
    if (event.response && /^response\.(completed|incomplete|failed)$/.test(event.type)) this.final = event.response;
  }

  result(): Accumulated {
    const response = this.final;
    const output = response?.output;
    const toolCalls = Array.isArray(output) ? output.filter((item: any) => item?.type === "function_call") : [];
    return {
      model: response?.model,
      output: output ?? this.text,
      usage: response?.usage,
      toolCalls: toolCalls.length ? toolCalls : undefined,
      extra: { response_id: response?.id, output_text: response?.output_text ?? this.text, status: response?.status },
    };
  }
}
