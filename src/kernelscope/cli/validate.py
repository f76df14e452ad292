"""argparse ``type=`` checkers for numeric flags: a bad value is one clear line and exit 2."""

from __future__ import annotations

import argparse
import math


def _number(text: str, kind: type[int] | type[float]) -> float:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def non_negative_int(text: str) -> int:
    value = int(_number(text, int))
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative; give 0 or more")
    return value


def positive_int(text: str) -> int:
    value = int(_number(text, int))
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be 1 or more")
    return value


def non_negative_float(text: str) -> float:
    value = _number(text, float)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative; give 0 or more")
    return value


def fraction_pct(text: str) -> float:
    value = _number(text, float)
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage between 0 and 100")
    return value
