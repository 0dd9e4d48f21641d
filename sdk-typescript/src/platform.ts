// What differs between Node and the browser, in one place: environment, Node built-ins, async context,
// ids and timers. Node modules are loaded lazily by name so browser bundles never try to include them.

type AnyRecord = Record<string, any>;

const proc: AnyRecord | undefined = (globalThis as AnyRecord).process;

/** True on Node (and runtimes that mimic it, like Bun and Deno's node mode). */
export const isNode: boolean = typeof proc?.versions?.node === "string";

/** An environment variable on Node; undefined in the browser. */
export function env(name: string): string | undefined {
  const value = proc?.env?.[name];
  return typeof value === "string" && value !== "" ? value : undefined;
}

/** A Node built-in, loaded synchronously where the runtime allows it (Node ≥ 20.16), else undefined. */
function builtinSync<T = AnyRecord>(name: string): T | undefined {
  try {
    const get = proc?.getBuiltinModule;
    return typeof get === "function" ? (get.call(proc, name) as T) : undefined;
  } catch {
    return undefined;
  }
}

const loaded = new Map<string, Promise<AnyRecord>>();

/** A Node built-in such as "node:fs/promises", loaded once; rejects in the browser. */
export function nodeModule<T = AnyRecord>(name: string): Promise<T> {
  let promise = loaded.get(name);
  if (!promise) {
    const sync = builtinSync(name);
    const specifier = name;
    promise = sync
      ? Promise.resolve(sync)
      : isNode
        ? (import(/* @vite-ignore */ /* webpackIgnore: true */ specifier) as Promise<AnyRecord>)
        : Promise.reject(new Error(`${name} is only available on Node`));
    loaded.set(name, promise);
  }
  return promise as Promise<T>;
}

// -- async context: which attempt and span the running code belongs to --------------------------------

interface Storage<T> {
  getStore(): T | undefined;
  run<R>(store: T, fn: () => R): R;
}

let contextStorage: Storage<unknown> | undefined;

function makeStorage(module: AnyRecord | undefined): void {
  if (!contextStorage && module?.AsyncLocalStorage) contextStorage = new module.AsyncLocalStorage();
}

if (isNode) {
  const sync = builtinSync("node:async_hooks");
  if (sync) makeStorage(sync);
  else nodeModule("node:async_hooks").then(makeStorage, () => undefined);
}

/** The value set by the innermost `runWithContext` around the running code (Node); undefined elsewhere. */
export function currentContext<T>(): T | undefined {
  return contextStorage?.getStore() as T | undefined;
}

/** Run `fn` with `value` as its context, kept across awaits on Node (AsyncLocalStorage). */
export function runWithContext<T, R>(value: T, fn: () => R): R {
  return contextStorage ? contextStorage.run(value, fn) : fn();
}

/** Whether context follows async code (Node); in the browser the SDK falls back to "last started". */
export function hasAsyncContext(): boolean {
  return contextStorage !== undefined;
}

// -- ids and time -----------------------------------------------------------------------------------------

const cryptoApi: AnyRecord | undefined = (globalThis as AnyRecord).crypto;

/** A random UUID v4: crypto.randomUUID where available (Node, secure browser contexts), else getRandomValues. */
export function randomUUID(): string {
  if (typeof cryptoApi?.randomUUID === "function") return cryptoApi.randomUUID();
  const bytes = new Uint8Array(16);
  if (typeof cryptoApi?.getRandomValues === "function") cryptoApi.getRandomValues(bytes);
  else for (let i = 0; i < 16; i++) bytes[i] = Math.floor(Math.random() * 256);
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Now as an ISO 8601 UTC timestamp (what the API's date-time fields take). */
export function isoNow(): string {
  return new Date().toISOString();
}

export function toIso(value: Date | number | string | undefined | null): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === "string") return value;
  const date = typeof value === "number" ? new Date(value) : value;
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/** A timer that does not keep Node alive unless `keepAlive`; `ref()` can pin it later. */
export interface Timer {
  cancel(): void;
  ref(): void;
}

export function startTimer(ms: number, fn: () => void, keepAlive: boolean): Timer {
  const handle: AnyRecord | number = setTimeout(fn, Math.max(0, ms));
  const node = typeof handle === "object" ? (handle as AnyRecord) : undefined;
  if (!keepAlive) node?.unref?.();
  return {
    cancel: () => clearTimeout(handle as any),
    ref: () => node?.ref?.(),
  };
}

const exitHooks = new Set<() => void>();
let exitListener: (() => void) | undefined;

/** Register `fn` to run when Node's event loop empties (our atexit); returns an unregister function. */
export function onBeforeExit(fn: () => void): () => void {
  if (!isNode || typeof proc?.on !== "function") return () => undefined;
  exitHooks.add(fn);
  if (!exitListener) {
    // One process listener for every client, however many a program creates.
    exitListener = () => {
      for (const hook of [...exitHooks]) hook();
    };
    proc.on("beforeExit", exitListener);
  }
  return () => {
    exitHooks.delete(fn);
  };
}
