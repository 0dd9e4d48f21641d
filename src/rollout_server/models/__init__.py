"""SQLAlchemy models: the concept model's tables. Import everything here so metadata is complete."""

from ..db.base import Base
from .dataset import Dataset, DatasetVersion, Task, TaskFile
from .file import File
from .job import Job
from .rollout import Rollout, Score, TraceEvent
from .run import Run
from .scorer import ScorerConfig
from .storage import WorkspaceStorage
from .workspace import ApiKey, Membership, User, Workspace

__all__ = [
    "ApiKey",
    "Base",
    "Dataset",
    "DatasetVersion",
    "File",
    "Job",
    "Membership",
    "Rollout",
    "Run",
    "Score",
    "ScorerConfig",
    "Task",
    "TaskFile",
    "TraceEvent",
    "User",
    "Workspace",
    "WorkspaceStorage",
]
