// Price table for common models, in US dollars per million tokens: [input, output, cached input?].
// The same figures as the Python SDK's table; list prices change, so pass `prices` to the Client or
// wrapOpenAI to override or extend them. A model matches its exact entry, else the longest entry it
// starts with ("gpt-4o-2024-08-06" → "gpt-4o"); unknown models get no cost.

export type Price = readonly [input: number, output: number, cachedInput?: number];
export type PriceTable = Readonly<Record<string, Price>>;

export const DEFAULT_PRICES: PriceTable = {
  // OpenAI
  "gpt-5": [1.25, 10.0, 0.125],
  "gpt-5-mini": [0.25, 2.0, 0.025],
  "gpt-5-nano": [0.05, 0.4, 0.005],
  "gpt-4.1": [2.0, 8.0, 0.5],
  "gpt-4.1-mini": [0.4, 1.6, 0.1],
  "gpt-4.1-nano": [0.1, 0.4, 0.025],
  "gpt-4o": [2.5, 10.0, 1.25],
  "gpt-4o-mini": [0.15, 0.6, 0.075],
  "gpt-4-turbo": [10.0, 30.0],
  "gpt-4": [30.0, 60.0],
  "gpt-3.5-turbo": [0.5, 1.5],
  o1: [15.0, 60.0, 7.5],
  "o1-mini": [1.1, 4.4, 0.55],
  o3: [2.0, 8.0, 0.5],
  "o3-mini": [1.1, 4.4, 0.55],
  "o4-mini": [1.1, 4.4, 0.275],
  // Anthropic (through OpenAI-compatible gateways)
  "claude-opus-4": [15.0, 75.0, 1.5],
  "claude-sonnet-4": [3.0, 15.0, 0.3],
  "claude-3-7-sonnet": [3.0, 15.0, 0.3],
  "claude-3-5-sonnet": [3.0, 15.0, 0.3],
  "claude-3-5-haiku": [0.8, 4.0, 0.08],
  // Google
  "gemini-2.5-pro": [1.25, 10.0, 0.31],
  "gemini-2.5-flash": [0.3, 2.5, 0.075],
  "gemini-2.0-flash": [0.1, 0.4, 0.025],
};

export function priceOf(model: string, table: PriceTable = DEFAULT_PRICES): Price | undefined {
  let name = model.toLowerCase();
  if (name.includes("/")) name = name.slice(name.lastIndexOf("/") + 1); // "openai/gpt-4o" from routers
  const exact = table[name];
  if (exact) return exact;
  let best: string | undefined;
  for (const key of Object.keys(table)) {
    if (name.startsWith(key) && (best === undefined || key.length > best.length)) best = key;
  }
  return best === undefined ? undefined : table[best];
}

export interface Usage {
  input_tokens?: number;
  output_tokens?: number;
  total_tokens?: number;
  cached_tokens?: number;
  reasoning_tokens?: number;
}

/** Dollar cost of one call, or undefined when the model is not in the table. */
export function costOf(model: string, usage: Usage, table?: PriceTable): number | undefined {
  const merged = table ? { ...DEFAULT_PRICES, ...lower(table) } : DEFAULT_PRICES;
  const price = priceOf(model, merged);
  if (!price) return undefined;
  const tokensIn = usage.input_tokens ?? 0;
  const tokensOut = usage.output_tokens ?? 0;
  const cached = Math.min(usage.cached_tokens ?? 0, tokensIn);
  const cachedPrice = price[2] ?? price[0];
  const total = (tokensIn - cached) * price[0] + cached * cachedPrice + tokensOut * price[1];
  return Math.round((total / 1_000_000) * 1e10) / 1e10;
}

function lower(table: PriceTable): PriceTable {
  return Object.fromEntries(Object.entries(table).map(([k, v]) => [k.toLowerCase(), v]));
}

/** Usage in the API's shape (input/output/total tokens) from OpenAI's chat or responses usage objects. */
export function normalizeUsage(usage: unknown): Usage | undefined {
  if (!usage || typeof usage !== "object") return undefined;
  const u = usage as Record<string, any>;
  const num = (...names: string[]): number | undefined => {
    for (const name of names) {
      const value = u[name];
      if (typeof value === "number" && Number.isFinite(value)) return Math.trunc(value);
    }
    return undefined;
  };
  const out: Usage = {};
  const tokensIn = num("input_tokens", "prompt_tokens");
  const tokensOut = num("output_tokens", "completion_tokens");
  let total = num("total_tokens");
  if (tokensIn !== undefined) out.input_tokens = tokensIn;
  if (tokensOut !== undefined) out.output_tokens = tokensOut;
  if (total === undefined && (tokensIn !== undefined || tokensOut !== undefined)) total = (tokensIn ?? 0) + (tokensOut ?? 0);
  if (total !== undefined) out.total_tokens = total;
  const cached = num("cached_tokens") ?? (u.input_tokens_details ?? u.prompt_tokens_details)?.cached_tokens;
  const reasoning = num("reasoning_tokens") ?? (u.output_tokens_details ?? u.completion_tokens_details)?.reasoning_tokens;
  if (typeof cached === "number") out.cached_tokens = cached;
  if (typeof reasoning === "number") out.reasoning_tokens = reasoning;
  return Object.keys(out).length > 0 ? out : undefined;
}
