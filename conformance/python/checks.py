"""What the conformance scripts share: a failed check, and the run that
writes one JSON line per check to the results file xtask reads."""

from __future__ import annotations

import json
import sys
import traceback
from typing import Callable


class CheckFailed(Exception):
    pass


def check(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def run_checks(prefix: str, checks: list[Callable[[], None]], results: str) -> int:
    """Runs every check (none stops the run) and records `prefix: name`."""
    with open(results, "w", encoding="utf-8") as out:
        for fn in checks:
            try:
                fn()
                record = {"check": f"{prefix}: {fn.__name__}", "outcome": "pass", "detail": ""}
            except Exception as error:  # a failed check, or anything else that broke it
                detail = str(error) if isinstance(error, CheckFailed) else traceback.format_exc()
                record = {"check": f"{prefix}: {fn.__name__}", "outcome": "fail", "detail": detail}
            out.write(json.dumps(record) + "\n")
            out.flush()
            print(f"{record['outcome']}: {record['check']}", file=sys.stderr)
    return 0
