"""Price table for common models, in US dollars per million tokens (input, output, cached input).

Figures are list prices published by the providers when this table was written; they change. Override
or extend them with `rollout.set_prices({"my-model": (in, out)})` or `wrap_openai(client, prices=...)`.
A model name matches its exact entry, else the longest entry it starts with
("gpt-4o-2024-08-06" -> "gpt-4o"); unknown models get no cost.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

Price = tuple[float, float] | tuple[float, float, float]

DEFAULT_PRICES: dict[str, Price] = {
    # OpenAI
    "gpt-5": (1.25, 10.00, 0.125),
    "gpt-5-mini": (0.25, 2.00, 0.025),
    "gpt-5-nano": (0.05, 0.40, 0.005),
    "gpt-4.1": (2.00, 8.00, 0.50),
    "gpt-4.1-mini": (0.40, 1.60, 0.10),
    "gpt-4.1-nano": (0.10, 0.40, 0.025),
    "gpt-4o": (2.50, 10.00, 1.25),
    "gpt-4o-mini": (0.15, 0.60, 0.075),
    "gpt-4-turbo": (10.00, 30.00),
    "gpt-4": (30.00, 60.00),
    "gpt-3.5-turbo": (0.50, 1.50),
    "o1": (15.00, 60.00, 7.50),
    "o1-mini": (1.10, 4.40, 0.55),
    "o3": (2.00, 8.00, 0.50),
    "o3-mini": (1.10, 4.40, 0.55),
    "o4-mini": (1.10, 4.40, 0.275),
    # Anthropic (through OpenAI-compatible gateways)
    "claude-opus-4": (15.00, 75.00, 1.50),
    "claude-sonnet-4": (3.00, 15.00, 0.30),
    "claude-3-7-sonnet": (3.00, 15.00, 0.30),
    "claude-3-5-sonnet": (3.00, 15.00, 0.30),
    "claude-3-5-haiku": (0.80, 4.00, 0.08),
    # Google
    "gemini-2.5-pro": (1.25, 10.00, 0.31),
    "gemini-2.5-flash": (0.30, 2.50, 0.075),
    "gemini-2.0-flash": (0.10, 0.40, 0.025),
}

_prices: dict[str, Price] = dict(DEFAULT_PRICES)
_lock = threading.Lock()


def set_prices(prices: Mapping[str, Price], *, replace: bool = False) -> None:
    """Add or change entries (per million tokens: input, output[, cached input]) for the whole process."""
    global _prices
    with _lock:
        table = {} if replace else dict(_prices)
        table.update({name.lower(): tuple(value) for name, value in prices.items()})  # type: ignore[misc]
        _prices = table


def get_prices() -> dict[str, Price]:
    return dict(_prices)


def price_of(model: str, table: Mapping[str, Price] | None = None) -> Price | None:
    prices = table if table is not None else _prices
    name = model.lower()
    if "/" in name:  # "openai/gpt-4o" from routers
        name = name.rsplit("/", 1)[1]
    if name in prices:
        return prices[name]
    best = None
    for key in prices:
        if name.startswith(key) and (best is None or len(key) > len(best)):
            best = key
    return prices[best] if best is not None else None


def cost_of(model: str, usage: Mapping[str, int], table: Mapping[str, Price] | None = None) -> float | None:
    """Dollar cost of one call, or None when the model is not in the table."""
    price = price_of(model, table)
    if price is None:
        return None
    tokens_in = int(usage.get("input_tokens", 0) or 0)
    tokens_out = int(usage.get("output_tokens", 0) or 0)
    cached = min(int(usage.get("cached_tokens", 0) or 0), tokens_in)
    cached_price = price[2] if len(price) > 2 else price[0]  # type: ignore[misc]
    total = (tokens_in - cached) * price[0] + cached * cached_price + tokens_out * price[1]
    return round(total / 1_000_000, 10)
