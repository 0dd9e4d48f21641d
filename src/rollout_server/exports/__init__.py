"""Exports (streamed JSONL and Parquet in the trainer formats, to the client or to S3) and imports (native and
NeMo Gym JSONL into a new run)."""
