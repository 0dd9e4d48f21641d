"""Record an OpenAI tool-calling loop: every model call becomes an llm_call event, tools are paired.

export ROLLOUT_BASE_URL=http://127.0.0.1:8000 ROLLOUT_API_KEY=rk_...
export OPENAI_API_KEY=sk-...            # or OPENAI_BASE_URL for any OpenAI-compatible server
python examples/openai_agent.py "What is 17 * 23?"
"""

from __future__ import annotations

import json
import os
import sys

from openai import OpenAI

import rollout

MODEL = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "calculator",
            "description": "Evaluate an arithmetic expression.",
            "parameters": {
                "type": "object",
                "properties": {"expression": {"type": "string"}},
                "required": ["expression"],
            },
        },
    }
]


def calculator(expression: str) -> str:
    allowed = set("0123456789+-*/(). ")
    if not set(expression) <= allowed:
        raise ValueError(f"not arithmetic: {expression!r}")
    return str(eval(expression))  # only arithmetic characters get here


def main(question: str) -> None:
    client = rollout.wrap_openai(OpenAI())
    run = rollout.start_run(workflow_name="calculator agent", agent="examples/openai_agent.py", model=MODEL)
    with run, run.start_rollout(input={"question": question}) as attempt:
        messages: list[dict] = [{"role": "user", "content": question}]
        attempt.message(question, role="user")
        for _ in range(5):
            reply = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
            message = reply.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                attempt.finish(output=message.content)
                break
            for call in message.tool_calls:
                arguments = json.loads(call.function.arguments)
                with attempt.tool_call(call.function.name, arguments, call_id=call.id) as recorded:
                    result = calculator(**arguments)
                    recorded.result(result)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    rollout.flush()
    print(f"{attempt.url}")


if __name__ == "__main__":
    main(" ".join(sys.argv[1:]) or "What is 17 * 23?")
