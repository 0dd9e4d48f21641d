"""Done-means 4: wrap_openai with the real `openai` package against a local fake endpoint."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

import rollout
import rollout.aio
from tests.sdk.fake_openai import FakeOpenAI
from tests.sdk.helpers import make_client, unique

pytestmark = pytest.mark.live

MODEL = "gpt-4o-mini"
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+2?"}]
TOOLS = [{"type": "function", "function": {"name": "calculator", "parameters": {"type": "object"}}}]
RESPONSE_TOOLS = [{"type": "function", "name": "calculator", "parameters": {"type": "object"}}]
# gpt-4o-mini: $0.15 per M input, $0.075 per M cached input, $0.60 per M output.
COST = (1000 * 0.15 + 200 * 0.075 + 300 * 0.60) / 1e6


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def client(live_server: Any, tmp_path: Path) -> Iterator[rollout.Client]:
    made = make_client(live_server, tmp_path)
    yield made
    made.close()


def consume_sync(wrapped: Any, api: str, stream: bool, tools: bool) -> None:
    if api == "chat":
        kwargs: dict[str, Any] = {"model": MODEL, "messages": MESSAGES, "temperature": 0}
        if tools:
            kwargs["tools"] = TOOLS
        if stream:
            kwargs.update(stream=True, stream_options={"include_usage": True})
            with wrapped.chat.completions.create(**kwargs) as chunks:
                for _ in chunks:
                    pass
        else:
            wrapped.chat.completions.create(**kwargs)
    else:
        kwargs = {"model": MODEL, "input": "What is 2+2?", "instructions": "Be brief."}
        if tools:
            kwargs["tools"] = RESPONSE_TOOLS
        if stream:
            for _ in wrapped.responses.create(stream=True, **kwargs):
                pass
        else:
            wrapped.responses.create(**kwargs)


async def consume_async(wrapped: Any, api: str, stream: bool, tools: bool) -> None:
    if api == "chat":
        kwargs: dict[str, Any] = {"model": MODEL, "messages": MESSAGES, "temperature": 0}
        if tools:
            kwargs["tools"] = TOOLS
        if stream:
            kwargs.update(stream=True, stream_options={"include_usage": True})
            async for _ in await wrapped.chat.completions.create(**kwargs):
                pass
        else:
            await wrapped.chat.completions.create(**kwargs)
    else:
        kwargs = {"model": MODEL, "input": "What is 2+2?", "instructions": "Be brief."}
        if tools:
            kwargs["tools"] = RESPONSE_TOOLS
        if stream:
            async with await wrapped.responses.create(stream=True, **kwargs) as events:
                async for _ in events:
                    pass
        else:
            await wrapped.responses.create(**kwargs)


def check_llm_call(event: rollout.Event, api: str, stream: bool, tools: bool) -> None:
    body = event.model_extra or {}
    assert event.kind == "llm_call"
    assert body["model"] == MODEL
    assert event.duration_ms is not None and event.duration_ms >= 20  # the fake answers after 20 ms
    assert body["usage"] == {
        "input_tokens": 1200,
        "output_tokens": 300,
        "total_tokens": 1500,
        "cached_tokens": 200,
        "reasoning_tokens": 10,
    }
    assert body["cost"] == pytest.approx(COST)
    meta = event.metadata or {}
    assert meta["provider"] == "openai" and meta["stream"] is stream
    if stream:
        assert meta["time_to_first_token_ms"] >= 0
    if api == "chat":
        assert meta["api"] == "chat.completions" and body["input"] == MESSAGES
        assert meta["params"] == {"temperature": 0}
        output = body["output"]
        assert output["role"] == "assistant"
        if tools:
            assert meta["tools"] == ["calculator"] and meta["finish_reason"] == "tool_calls"
            assert output["tool_calls"][0]["function"] == {"name": "calculator", "arguments": '{"expression": "2+2"}'}
        else:
            assert output["content"] == "The answer is 4."
    else:
        assert meta["api"] == "responses" and meta["status"] == "completed"
        assert body["input"] == [
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": "What is 2+2?"},
        ]
        if not tools:
            assert body["output"][0]["content"][0]["text"] == "The answer is 4."
    if tools:
        assert body["tool_calls"] == [{"id": "call_1", "name": "calculator", "arguments": '{"expression": "2+2"}'}]
    else:
        assert "tool_calls" not in body


CASES = [(api, stream, tools) for api in ("chat", "responses") for stream in (False, True) for tools in (False, True)]


@pytest.mark.parametrize(("api", "stream", "tools"), CASES)
def test_sync_client(client: rollout.Client, fake: FakeOpenAI, api: str, stream: bool, tools: bool) -> None:
    run = client.start_run(workflow_name=unique("openai"))
    plain = openai.OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
    wrapped = rollout.wrap_openai(plain)
    with run.start_rollout() as attempt:
        consume_sync(wrapped, api, stream, tools)
        consume_sync(plain, api, stream, tools)  # the unwrapped client is not recorded: no global patching
    assert client.flush(timeout=30)
    events = client.get_rollout(attempt.id).events
    assert len(events) == 1
    check_llm_call(events[0], api, stream, tools)


@pytest.mark.parametrize(("api", "stream", "tools"), CASES)
def test_async_client(live_server: Any, tmp_path: Path, fake: FakeOpenAI, api: str, stream: bool, tools: bool) -> None:
    async def main() -> None:
        client = rollout.aio.AsyncClient(live_server.base_url, live_server.api_key, spool_dir=tmp_path / "spool")
        run = await client.start_run(workflow_name=unique("openai-async"), load_tasks=False)
        wrapped = rollout.wrap_openai(openai.AsyncOpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0))

        # Two concurrent tasks, each recording into its own attempt.
        async def one(n: int) -> str:
            async with run.start_rollout(input={"n": n}) as attempt:
                await consume_async(wrapped, api, stream, tools)
                return attempt.id

        ids = await asyncio.gather(one(0), one(1))
        assert await client.flush(timeout=30)
        for rollout_id in ids:
            events = (await client.get_rollout(rollout_id)).events
            assert len(events) == 1
            check_llm_call(events[0], api, stream, tools)
        await client.aclose()

    asyncio.run(main())


def test_explicit_attempt_prices_and_errors(client: rollout.Client, fake: FakeOpenAI) -> None:
    run = client.start_run(workflow_name=unique("openai-explicit"))
    target = run.start_rollout()
    wrapped = rollout.wrap_openai(
        openai.OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0),
        attempt=target,
        prices={MODEL: (1.0, 2.0)},
    )
    wrapped.chat.completions.create(model=MODEL, messages=MESSAGES)
    with pytest.raises(openai.NotFoundError):
        wrapped.with_options(max_retries=0).embeddings.create(model="x", input="y")  # passed through, not recorded
    broken = rollout.wrap_openai(
        openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="sk", max_retries=0), attempt=target
    )
    with pytest.raises(openai.APIConnectionError):
        broken.chat.completions.create(model=MODEL, messages=MESSAGES)
    target.finish(wait=True)
    first, failed = client.get_rollout(target.id).events
    assert (first.model_extra or {})["cost"] == pytest.approx((1000 * 1.0 + 200 * 1.0 + 300 * 2.0) / 1e6)
    assert "APIConnectionError" in (failed.metadata or {})["error"]
    assert (failed.model_extra or {})["input"] == MESSAGES
