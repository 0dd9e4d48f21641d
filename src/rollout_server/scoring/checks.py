"""The deterministic built-in scorers: matches, containment, regex, JSON checks, numbers, length, and a
weighted combination of any of them. Each takes a pydantic config (unknown keys are refused)."""

from __future__ import annotations

import math
import re
import string
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, field_validator

from .base import (
    ScorerConfigError,
    ScoreResult,
    ScorerFailure,
    ScoringInput,
    as_text,
    at_path,
    is_missing,
    maybe_json,
    parse_path,
)


class CheckConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str | None = Field(None, description="JSON path into the output to check (default: the whole output).")
    score_name: str | None = Field(None, description="Name of the score written (default: the scorer's name).")


def _answer(item: ScoringInput, config: CheckConfig) -> Any:
    answer = item.answer()
    if config.path:
        found = at_path(maybe_json(answer), parse_path(config.path))
        if is_missing(found):
            raise ScorerFailure(f"the output has nothing at {config.path}")
        return found
    return answer


def _expected(item: ScoringInput, given: Any, has_given: bool) -> Any:
    if has_given:
        return given
    expected = item.expected()
    if expected is None:
        raise ScorerFailure("the task has no expected_output; give one in the task or set config.expected")
    return expected


class Check:
    """A built-in scorer: `Config` validates the configuration, `check` returns (passed or a number, comment)."""

    Config: type[CheckConfig] = CheckConfig
    data_type = "boolean"

    def __init__(self, name: str, config: dict[str, Any]) -> None:
        self.name = name
        try:
            self.config = self.Config.model_validate(config)
        except Exception as error:  # pydantic.ValidationError: turn the first problem into a field error
            errors: list[dict[str, Any]] = list(getattr(error, "errors", lambda: [])())
            first = errors[0] if errors else {"loc": (), "msg": str(error)}
            field = ".".join(str(p) for p in first.get("loc", ()))
            raise ScorerConfigError(f"{field or 'config'}: {first.get('msg')}", field=field or None) from error

    def check(self, item: ScoringInput) -> tuple[float | bool, str | None]:
        raise NotImplementedError

    def __call__(self, item: ScoringInput) -> list[ScoreResult]:
        value, comment = self.check(item)
        return [ScoreResult(name=self.config.score_name or self.name, value=value, data_type=self.data_type,
                            comment=comment)]


# -- matches ---------------------------------------------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_text(text: str) -> str:
    """SQuAD-style: lower case, no punctuation, no articles, single spaces."""
    text = text.casefold().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


class ExactMatch(Check):
    class Config(CheckConfig):
        expected: Any = None
        normalize: bool = False

    def check(self, item: ScoringInput) -> tuple[float | bool, str | None]:
        config = self.config
        expected = _expected(item, config.expected, "expected" in config.model_fields_set)  # type: ignore[attr-defined]
        answer = _answer(item, config)
        if config.normalize:  # type: ignore[attr-defined]
            return normalize_text(as_text(answer)) == normalize_text(as_text(expected)), None
        if isinstance(answer, str) and not isinstance(expected, str):
            answer = maybe_json(answer)
        if isinstance(answer, str) or isinstance(expected, str):
            return as_text(answer).strip() == as_text(expected).strip(), None
        return answer == expected, None


class NormalizedMatch(ExactMatch):
    class Config(ExactMatch.Config):
        normalize: bool = True


class Contains(Check):
    negate = False

    class Config(CheckConfig):
        value: str | list[str] = Field(description="Text (or texts) to look for.")
        mode: Literal["any", "all"] = "any"
        case_sensitive: bool = False

    def check(self, item: ScoringInput) -> tuple[float | bool, str | None]:
        config = self.config
        needles = [config.value] if isinstance(config.value, str) else list(config.value)  # type: ignore[attr-defined]
        haystack = as_text(_answer(item, config))
        if not config.case_sensitive:  # type: ignore[attr-defined]
            haystack = haystack.casefold()
            needles = [n.casefold() for n in needles]
        found = [n for n in needles if n in haystack]
        if self.negate:
            return not found, (f"found {found!r}" if found else None)
        passed = bool(found) if config.mode == "any" else len(found) == len(needles)  # type: ignore[attr-defined]
        missing = [n for n in needles if n not in found]
        return passed, (None if passed else f"missing {missing!r}")


class NotContains(Contains):
    negate = True


class Regex(Check):
    class Config(CheckConfig):
        pattern: str
        ignore_case: bool = False
        full_match: bool = False

        @field_validator("pattern")
        @classmethod
        def _compiles(cls, value: str) -> str:
            try:
                re.compile(value)
            except re.error as error:
                raise ValueError(f"not a valid regular expression: {error}") from error
            return value

    def check(self, item: ScoringInput) -> tuple[float | bool, str | None]:
        config = self.config
        flags = re.IGNORECASE if config.ignore_case else 0  # type: ignore[attr-defined]
        text = as_text(_answer(item, config))
        pattern = re.compile(config.pattern, flags)  # type: ignore[attr-defined]
        match = pattern.fullmatch(text) if config.full_match else pattern.search(text)  # type: ignore[attr-defined]
        return match is not None, None


class JsonPathEquals(Check):
    class Config(CheckConfig):
        path: str = Field(description="JSON path into the output, e.g. $.answer or items[0].id.")  # type: ignore[assignment]
        expected: Any = None

    def check(self, item: ScoringInput) -> tuple[float | bool, str | None]:
        config = self.config
        parts = parse_path(config.path or "")
        if "expected" in config.model_fields_set:
            expected = config.expected  # type: ignore[attr-defined]
        else:
            whole = item.expected()
            if whole is None:
                raise ScorerFailure("the task has no expected_output; give one in the task or set config.expected")
            found = at_path(maybe_json(whole), parts)
            expected = whole if is_missing(found) else found
        actual = at_path(maybe_json(item.answer()), parts)
        if is_missing(actual):
            return False, f"nothing at {config.path}"
        return actual == expected, None if actual == expected else f"{config.path} is {as_text(actual)[:200]}"


_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


def to_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip().replace(",", "")
        try:
            return float(text)
        except ValueError:
            found = _NUMBER.findall(text)
            return float(found[-1]) if found else None
    return None


class NumericClose(Check):
    class Config(CheckConfig):
        expected: float | None = None
        abs_tol: float = Field(1e-6, ge=0)
        rel_tol: float = Field(0.0, ge=0)

    def check(self, item: ScoringInput) -> tuple[float | bool, str | None]:
        config = self.config
        expected_raw = _expected(item, config.expected, config.expected is not None)  # type: ignore[attr-defined]
        expected = to_number(expected_raw)
        if expected is None:
            raise ScorerFailure(f"the expected output {as_text(expected_raw)[:100]!r} is not a number")
        actual = to_number(_answer(item, config))
        if actual is None:
            return False, "the output holds no number"
        close = math.isclose(actual, expected, abs_tol=config.abs_tol, rel_tol=config.rel_tol)  # type: ignore[attr-defined]
        return close, None if close else f"{actual} is not within tolerance of {expected}"


# -- JSON ------------------------------------------------------------------------------------------------

def _parsed(item: ScoringInput, config: CheckConfig) -> tuple[bool, Any, str | None]:
    value = _answer(item, config)
    if isinstance(value, str):
        try:
            return True, orjson.loads(value), None
        except orjson.JSONDecodeError as error:
            return False, None, f"not JSON: {error}"
    if value is None:
        return False, None, "no output"
    return True, value, None


class JsonValid(Check):
    def check(self, item: ScoringInput) -> tuple[float | bool, str | None]:
        ok, _, problem = _parsed(item, self.config)
        return ok, problem


class JsonKeys(Check):
    class Config(CheckConfig):
        keys: list[str] = Field(min_length=1)

    def check(self, item: ScoringInput) -> tuple[float | bool, str | None]:
        ok, value, problem = _parsed(item, self.config)
        if not ok:
            return False, problem
        if not isinstance(value, dict):
            return False, "the output is not a JSON object"
        missing = [k for k in self.config.keys if k not in value]  # type: ignore[attr-defined]
        return not missing, f"missing keys {missing!r}" if missing else None


class JsonSchema(Check):
    class Config(CheckConfig):
        schema_: dict[str, Any] | None = Field(None, alias="schema", description="Default: the task's output_schema.")

        model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def check(self, item: ScoringInput) -> tuple[float | bool, str | None]:
        import jsonschema

        schema = self.config.schema_ or (item.task or {}).get("output_schema")  # type: ignore[attr-defined]
        if not schema:
            raise ScorerFailure("the task has no output_schema; give one in the task or set config.schema")
        ok, value, problem = _parsed(item, self.config)
        if not ok:
            return False, problem
        validator_class = jsonschema.validators.validator_for(schema)
        try:
            validator_class.check_schema(schema)
        except jsonschema.SchemaError as error:
            raise ScorerFailure(f"the output_schema is not a valid JSON Schema: {error.message}") from error
        worst = jsonschema.exceptions.best_match(validator_class(schema).iter_errors(value))
        if worst is None:
            return True, None
        where = "/".join(str(p) for p in worst.absolute_path) or "(root)"
        return False, f"{where}: {worst.message}"[:500]


class Length(Check):
    class Config(CheckConfig):
        min: int | None = Field(None, ge=0)
        max: int | None = Field(None, ge=0)
        unit: Literal["chars", "words"] = "chars"

    def check(self, item: ScoringInput) -> tuple[float | bool, str | None]:
        config = self.config
        text = as_text(_answer(item, config))
        size = len(text.split()) if config.unit == "words" else len(text)  # type: ignore[attr-defined]
        low, high = config.min, config.max  # type: ignore[attr-defined]
        ok = (low is None or size >= low) and (high is None or size <= high)
        return ok, None if ok else f"{size} {config.unit}, allowed {low or 0}..{high if high is not None else '∞'}"  # type: ignore[attr-defined]


# -- combination -----------------------------------------------------------------------------------------

class WeightedCheck(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: str
    weight: float = Field(1.0, ge=0)


class Weighted(Check):
    """The weighted mean of other checks (each 0..1), and whether it reaches `threshold` (`<name>_pass`)."""

    data_type = "number"

    class Config(CheckConfig):
        checks: list[WeightedCheck] = Field(min_length=1)
        threshold: float = 0.5

    def __init__(self, name: str, config: dict[str, Any]) -> None:
        super().__init__(name, config)
        self.parts: list[tuple[float, Check]] = []
        for index, spec in enumerate(self.config.checks):  # type: ignore[attr-defined]
            kind = CHECKS.get(spec.type)
            if kind is None or kind is Weighted:
                raise ScorerConfigError(f"checks.{index}.type: {spec.type!r} is not a built-in check; use one of "
                                        f"{', '.join(sorted(k for k in CHECKS if k != 'weighted'))}",
                                        field=f"checks.{index}.type")
            try:
                part = kind(f"{name}.{index}", dict(spec.model_extra or {}))
            except ScorerConfigError as error:
                raise ScorerConfigError(f"checks.{index}.{error}", field=f"checks.{index}.{error.field or ''}") \
                    from error
            self.parts.append((spec.weight, part))
        if sum(w for w, _ in self.parts) <= 0:
            raise ScorerConfigError("checks: the weights add up to 0", field="checks")

    def check(self, item: ScoringInput) -> tuple[float | bool, str | None]:
        total = sum(w for w, _ in self.parts)
        score = 0.0
        notes = []
        for (weight, part), spec in zip(self.parts, self.config.checks, strict=True):  # type: ignore[attr-defined]
            value, comment = part.check(item)
            score += weight * float(value)
            notes.append(f"{spec.type}={float(value):g}" + (f" ({comment})" if comment else ""))
        return score / total, "; ".join(notes)

    def __call__(self, item: ScoringInput) -> list[ScoreResult]:
        value, comment = self.check(item)
        name = self.config.score_name or self.name
        return [
            ScoreResult(name=name, value=float(value), data_type="number", comment=comment),
            ScoreResult(name=f"{name}_pass", value=float(value) >= self.config.threshold,  # type: ignore[attr-defined]
                        data_type="boolean"),
        ]


CHECKS: dict[str, type[Check]] = {
    "exact_match": ExactMatch,
    "normalized_match": NormalizedMatch,
    "contains": Contains,
    "not_contains": NotContains,
    "regex": Regex,
    "json_path_equals": JsonPathEquals,
    "numeric_close": NumericClose,
    "json_valid": JsonValid,
    "json_keys": JsonKeys,
    "json_schema": JsonSchema,
    "length": Length,
    "weighted": Weighted,
}
