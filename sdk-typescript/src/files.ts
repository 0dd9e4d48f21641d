// Task files: uploads for new datasets, and materializeFiles() — on Node a local cache keyed by SHA-256
// (<cache>/<sha256[:2]>/<sha256>/<file name>, the Python SDK's layout, so both share one cache), in the
// browser File objects (Blobs) kept in memory by SHA-256.

import { RolloutError } from "./errors.js";
import type { Transport } from "./http.js";
import { env, isNode, nodeModule, randomUUID } from "./platform.js";
import type { FileOut } from "./types.js";

/** A file attached to a task. */
export interface TaskFile {
  id: string;
  name: string;
  mediaType: string;
  size: number;
  sha256: string;
  /** API path that streams the bytes (same auth). */
  downloadPath: string;
  createdAt: string;
}

export function toTaskFile(file: FileOut): TaskFile {
  return {
    id: file.id,
    name: file.name,
    mediaType: file.media_type,
    size: file.size,
    sha256: file.sha256,
    downloadPath: file.download_path,
    createdAt: file.created_at,
  };
}

/** Bytes as data: a typed array, an ArrayBuffer or a Blob (File). */
export type FileData = Uint8Array | ArrayBuffer | Blob;

/**
 * What a task's `files` may hold: an uploaded file's ID ("file_…") or object, a local path (Node),
 * bytes or a Blob, or `{name, data, mediaType}` to name bytes.
 */
export type FileSource =
  | string
  | FileData
  | { name: string; data: FileData | string; mediaType?: string }
  | { id: string };

function isFileId(value: string): boolean {
  return /^file_[A-Za-z0-9_-]+$/.test(value);
}

async function sha256Hex(data: ArrayBuffer | Uint8Array): Promise<string | undefined> {
  const subtle = (globalThis as any).crypto?.subtle;
  if (!subtle) return undefined;
  const digest: ArrayBuffer = await subtle.digest("SHA-256", data);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

function toBlob(data: FileData | string, mediaType?: string): Blob {
  if (data instanceof Blob) return data;
  const part = typeof data === "string" ? data : data instanceof Uint8Array ? data : new Uint8Array(data);
  return new Blob([part as BlobPart], mediaType ? { type: mediaType } : {});
}

async function defaultName(blob: Blob): Promise<string> {
  const digest = await sha256Hex(await blob.arrayBuffer());
  return digest ? `file-${digest.slice(0, 12)}` : "file";
}

/** An uploadable {name, blob} for a source, or the file ID it already is. */
async function resolveSource(source: FileSource): Promise<{ id: string } | { name: string; blob: Blob }> {
  if (typeof source === "string") {
    if (isNode) {
      const fs = await nodeModule<typeof import("node:fs")>("node:fs");
      const path = await nodeModule<typeof import("node:path")>("node:path");
      const exists = fs.existsSync(source);
      if (!exists && isFileId(source)) return { id: source };
      if (!exists || !fs.statSync(source).isFile()) {
        throw new RolloutError(`cannot upload ${source}: no such file (pass a path, bytes, a Blob or a file_… ID)`);
      }
      return { name: path.basename(source), blob: await fs.openAsBlob(source) };
    }
    if (isFileId(source)) return { id: source };
    throw new RolloutError(`cannot upload ${source}: local paths need Node; in the browser pass a Blob or bytes`);
  }
  if (source instanceof Blob) {
    const name = (source as File).name || (await defaultName(source));
    return { name, blob: source };
  }
  if (source instanceof Uint8Array || source instanceof ArrayBuffer) {
    const blob = toBlob(source);
    return { name: await defaultName(blob), blob };
  }
  if (source && typeof source === "object") {
    if ("data" in source && "name" in source) {
      return { name: String(source.name), blob: toBlob(source.data, source.mediaType) };
    }
    if ("id" in source && typeof source.id === "string") return { id: source.id };
  }
  throw new RolloutError(
    `cannot upload ${Object.prototype.toString.call(source)}: pass a path, bytes, a Blob, {name, data} or a file ID`,
  );
}

/** Upload one file (POST /api/v1/files, the raw body with ?name=); the server stores bytes once. */
export async function uploadFile(
  transport: Transport,
  source: FileSource,
  options: { name?: string; mediaType?: string } = {},
): Promise<FileOut> {
  const resolved = await resolveSource(source);
  if ("id" in resolved) {
    return transport.json<FileOut>("GET", `/api/v1/files/${encodeURIComponent(resolved.id)}`);
  }
  const mediaType = options.mediaType || resolved.blob.type || "application/octet-stream";
  return transport.json<FileOut>("POST", "/api/v1/files", {
    query: { name: options.name ?? resolved.name },
    body: resolved.blob,
    headers: { "content-type": mediaType },
    retry: "connect",
    timeoutMs: 0,
  });
}

/** Turn task `files` entries into file IDs, uploading each distinct local source once. */
export async function fileIds(
  transport: Transport,
  sources: readonly FileSource[],
  uploaded: Map<unknown, Promise<string>>,
): Promise<string[]> {
  const ids: string[] = [];
  for (const source of sources) {
    if (typeof source === "string" && isFileId(source) && !(isNode && (await pathExists(source)))) {
      ids.push(source);
      continue;
    }
    if (source && typeof source === "object" && "id" in source && typeof source.id === "string" && !("data" in source)) {
      ids.push(source.id);
      continue;
    }
    let pending = uploaded.get(source);
    if (!pending) {
      pending = uploadFile(transport, source).then((file) => file.id);
      uploaded.set(source, pending);
    }
    ids.push(await pending);
  }
  return ids;
}

async function pathExists(path: string): Promise<boolean> {
  const fs = await nodeModule<typeof import("node:fs")>("node:fs");
  return fs.existsSync(path);
}

// -- materializing -------------------------------------------------------------------------------------------

/** A file name safe on every file system, keeping what people recognise. */
export function safeName(name: string): string {
  const base = name.replace(/\\/g, "/").split("/").pop() || "file";
  const cleaned = base.replace(/[^\p{L}\p{N}_.\- ()+,=@]+/gu, "_").replace(/^[ .]+|[ .]+$/g, "") || "file";
  return cleaned.slice(0, 200);
}

/** The files cache folder on Node: option, $ROLLOUT_FILES_CACHE_DIR, $ROLLOUT_CACHE_DIR/files, ~/.cache/rollout/files. */
export async function cacheDir(explicit?: string): Promise<string> {
  const path = await nodeModule<typeof import("node:path")>("node:path");
  const os = await nodeModule<typeof import("node:os")>("node:os");
  const expand = (p: string) => (p.startsWith("~") ? path.join(os.homedir(), p.slice(1)) : p);
  if (explicit) return expand(explicit);
  const filesDir = env("ROLLOUT_FILES_CACHE_DIR");
  if (filesDir) return expand(filesDir);
  const root = env("ROLLOUT_CACHE_DIR") ?? path.join(env("XDG_CACHE_HOME") ?? path.join(os.homedir(), ".cache"), "rollout");
  return path.join(expand(root), "files");
}

async function cachePath(dir: string, file: TaskFile): Promise<string> {
  const path = await nodeModule<typeof import("node:path")>("node:path");
  let digest = file.sha256.toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(digest)) {
    const crypto = await nodeModule<typeof import("node:crypto")>("node:crypto");
    digest = crypto.createHash("sha256").update(file.id).digest("hex"); // no hash from the server: key by id
  }
  return path.join(dir, digest.slice(0, 2), digest, safeName(file.name || file.id));
}

/** Local paths of `files`, in order, downloading only what the cache lacks; each download's SHA-256 is checked. */
export async function materializeToDisk(transport: Transport, dir: string, files: readonly TaskFile[]): Promise<string[]> {
  const fsp = await nodeModule<typeof import("node:fs/promises")>("node:fs/promises");
  const fs = await nodeModule<typeof import("node:fs")>("node:fs");
  const pathMod = await nodeModule<typeof import("node:path")>("node:path");
  const crypto = await nodeModule<typeof import("node:crypto")>("node:crypto");
  const { Readable, Transform } = await nodeModule<typeof import("node:stream")>("node:stream");
  const { pipeline } = await nodeModule<typeof import("node:stream/promises")>("node:stream/promises");

  const paths: string[] = [];
  for (const file of files) {
    const target = await cachePath(dir, file);
    const existing = await fsp.stat(target).catch(() => undefined);
    if (existing?.isFile() && existing.size === file.size) {
      paths.push(target);
      continue;
    }
    const folder = pathMod.dirname(target);
    await fsp.mkdir(folder, { recursive: true });
    const partial = pathMod.join(folder, `.${randomUUID().slice(0, 12)}.part`);
    try {
      const response = await transport.request("GET", file.downloadPath || `/api/v1/files/${file.id}/content`, {
        timeoutMs: 0,
        headers: { accept: "*/*" },
      });
      if (!response.body) throw new RolloutError(`downloading ${file.name} (${file.id}) returned no body`);
      const hash = crypto.createHash("sha256");
      const hasher = new Transform({
        transform(chunk, _encoding, callback) {
          hash.update(chunk);
          callback(null, chunk);
        },
      });
      await pipeline(Readable.fromWeb(response.body as any), hasher, fs.createWriteStream(partial));
      const digest = hash.digest("hex");
      if (file.sha256 && digest !== file.sha256.toLowerCase()) {
        throw new RolloutError(
          `downloaded ${file.name} (${file.id}) but its SHA-256 is ${digest}, not ${file.sha256}; ` +
            "the transfer was corrupted - try again",
        );
      }
      await fsp.rename(partial, target);
    } finally {
      await fsp.rm(partial, { force: true }).catch(() => undefined);
    }
    paths.push(target);
  }
  return paths;
}

/** File objects (Blobs with a name) for `files`, in order, each downloaded once per client and checked. */
export async function materializeToBlobs(
  transport: Transport,
  memory: Map<string, Promise<File>>,
  files: readonly TaskFile[],
): Promise<File[]> {
  const out: File[] = [];
  for (const file of files) {
    const key = file.sha256 ? `${file.sha256}/${file.name}` : file.id;
    let pending = memory.get(key);
    if (!pending) {
      pending = (async () => {
        const response = await transport.request("GET", file.downloadPath || `/api/v1/files/${file.id}/content`, {
          timeoutMs: 0,
          headers: { accept: "*/*" },
        });
        const bytes = await response.arrayBuffer();
        const digest = await sha256Hex(bytes);
        if (digest && file.sha256 && digest !== file.sha256.toLowerCase()) {
          throw new RolloutError(`downloaded ${file.name} (${file.id}) but its SHA-256 is ${digest}, not ${file.sha256}`);
        }
        return new File([bytes], file.name, { type: file.mediaType });
      })();
      pending.catch(() => memory.delete(key));
      memory.set(key, pending);
    }
    out.push(await pending);
  }
  return out;
}
