"""Parquet output for every export format, written row group by row group into a byte stream.

Each format has a fixed column list. Scalars get their own types; nested values (messages, events, params...)
are JSON text, because their shape varies between rows (content as text or parts, per-kind event bodies) and a
Parquet file has one schema. Keys a format's column list does not name go to an `extra` JSON column.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

import orjson

ROW_GROUP = 2000

J, S, I, F, B, FL, SL = "json", "string", "int", "float", "bool", "list<float>", "list<string>"  # noqa: E741
COLUMNS: dict[str, list[tuple[str, str]]] = {
    "rollout": [("schema", S), ("ref", J), ("run", J), ("task", J), ("attempt", I), ("repeat_index", I), ("input", J),
                ("status", S), ("output", J), ("error", S), ("reward", F), ("advantage", F), ("discarded", B),
                ("discard_reason", S), ("step", I), ("group_key", S), ("metadata", J), ("started_at", S),
                ("ended_at", S), ("latency_ms", F), ("input_tokens", I), ("output_tokens", I), ("cost", F),
                ("scores", J), ("events", J)],
    "nemo-gym": [("responses_create_params", J), ("response", J), ("reward", F)],
    "openai-sft": [("messages", J), ("tools", J)],
    "trl-sft": [("messages", J), ("prompt", J), ("completion", J), ("tools", J)],
    "openai-dpo": [("input", J), ("preferred_output", J), ("non_preferred_output", J)],
    "trl-dpo": [("prompt", J), ("chosen", J), ("rejected", J), ("score_chosen", F), ("score_rejected", F)],
    "grpo": [("prompt", J), ("completions", J), ("rewards", FL), ("advantages", FL), ("task_key", S),
             ("group_key", S), ("run_number", I), ("step", I), ("rollout_ids", SL)],
}


def _json(value: Any) -> str | None:
    if value is None:
        return None
    return orjson.dumps(value, option=orjson.OPT_UTC_Z | orjson.OPT_NON_STR_KEYS).decode()


def _cell(value: Any, kind: str) -> Any:
    if kind == J:
        return _json(value)
    if kind == S and isinstance(value, datetime):
        return _json(value)[1:-1]  # type: ignore[index]
    return value


def _schema(fmt: str) -> Any:
    import pyarrow as pa

    types = {J: pa.large_string(), S: pa.string(), I: pa.int64(), F: pa.float64(), B: pa.bool_(),
             FL: pa.list_(pa.float64()), SL: pa.list_(pa.string())}
    fields = [pa.field(name, types[kind]) for name, kind in COLUMNS[fmt]]
    return pa.schema([*fields, pa.field("extra", pa.large_string())])


class _Sink:
    """A write-only file object that hands what pyarrow wrote back to the generator."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.position = 0
        self.closed = False

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self.chunks.append(chunk)
        self.position += len(chunk)
        return len(chunk)

    def tell(self) -> int:
        return self.position

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def take(self) -> bytes:
        out = b"".join(self.chunks)
        self.chunks = []
        return out


def parquet_stream(fmt: str, lines: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _schema(fmt)
    columns = COLUMNS[fmt]
    known = {name for name, _ in columns}
    sink = _Sink()
    writer = pq.ParquetWriter(sink, schema, compression="zstd")
    batch: dict[str, list[Any]] = {name: [] for name in schema.names}

    def flush() -> bytes:
        writer.write_table(pa.Table.from_pydict(batch, schema=schema))
        for values in batch.values():
            values.clear()
        return sink.take()

    count = 0
    for line in lines:
        for name, kind in columns:
            batch[name].append(_cell(line.get(name), kind))
        rest = {k: v for k, v in line.items() if k not in known}
        batch["extra"].append(_json(rest) if rest else None)
        count += 1
        if count % ROW_GROUP == 0:
            yield flush()
    if count % ROW_GROUP or count == 0:
        data = flush()
        if data:
            yield data
    writer.close()
    yield sink.take()
