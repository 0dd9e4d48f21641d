"""Rollout SDK: record each attempt of your agent (trace, output, scores) once, for debugging, evals and RL.

    import rollout

    run = rollout.start_run("paper-summary-v1", workflow_name="Paper QA")
    for task in run.tasks:
        with run.start_rollout(task) as attempt:
            attempt.message("Starting task", role="system")
            attempt.finish(output=answer(task.task.instruction))

Configuration: rollout.configure(base_url=..., api_key=...) or ROLLOUT_BASE_URL / ROLLOUT_API_KEY.
Async agents: `rollout.aio`. OpenAI clients: `rollout.wrap_openai(client)`.
"""

from __future__ import annotations

from ._attempt import AttemptBase, Span, ToolCall, current_attempt
from ._client import Attempt, Client, Dataset, Run
from ._default import (
    configure,
    create_dataset,
    flush,
    get_client,
    get_dataset,
    get_rollout,
    get_run,
    list_datasets,
    list_rollouts,
    list_runs,
    materialize_files,
    shutdown,
    start_run,
    upload_file,
    whoami,
)
from ._errors import (
    APIError,
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ConflictError,
    DeliveryError,
    InvalidRequestError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    RolloutConnectionError,
    RolloutError,
    ServerError,
)
from ._openai import wrap_openai
from ._prices import DEFAULT_PRICES, cost_of, get_prices, set_prices
from ._types import (
    ApiKey,
    ApiKeyCreated,
    DatasetInfo,
    DatasetVersion,
    Event,
    File,
    Rollout,
    RolloutDetail,
    RunAggregates,
    RunInfo,
    RunTask,
    Score,
    Task,
    Workspace,
)
from ._version import __version__

__all__ = [
    "DEFAULT_PRICES",
    "APIError",
    "ApiKey",
    "ApiKeyCreated",
    "Attempt",
    "AttemptBase",
    "AuthenticationError",
    "BadRequestError",
    "Client",
    "ConfigurationError",
    "ConflictError",
    "Dataset",
    "DatasetInfo",
    "DatasetVersion",
    "DeliveryError",
    "Event",
    "File",
    "InvalidRequestError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitError",
    "Rollout",
    "RolloutConnectionError",
    "RolloutDetail",
    "RolloutError",
    "Run",
    "RunAggregates",
    "RunInfo",
    "RunTask",
    "Score",
    "ServerError",
    "Span",
    "Task",
    "ToolCall",
    "Workspace",
    "__version__",
    "configure",
    "cost_of",
    "create_dataset",
    "current_attempt",
    "flush",
    "get_client",
    "get_dataset",
    "get_prices",
    "get_rollout",
    "get_run",
    "list_datasets",
    "list_rollouts",
    "list_runs",
    "materialize_files",
    "set_prices",
    "shutdown",
    "start_run",
    "upload_file",
    "whoami",
    "wrap_openai",
]
