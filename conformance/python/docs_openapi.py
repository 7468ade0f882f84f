#!/usr/bin/env python3
"""Documentation search (requirements section K) and the OpenAPI document, over raw HTTP.

`cargo xtask conformance` runs this after the SDK matrix, with the interpreter of
target/conformance/venv, against the router it started; by hand:

    CONFORMANCE_API_KEY=... [CONFORMANCE_DOCS_KEY=... CONFORMANCE_DOCS_IP_KEY=...] \
        python conformance/python/docs_openapi.py --base-url http://127.0.0.1:8080 --results out.jsonl

Requests go through httpx2, the HTTP client the official `openai` SDK is built on. The OpenAPI
document is validated with `openapi-spec-validator` (OpenAPI 3.1), and every section-K row is
checked: CONFORMANCE_DOCS_KEY is a key with no scope on an account with no credit (K-01) and
CONFORMANCE_DOCS_IP_KEY one whose IP allowlist excludes this client (K-11); without them those
rows use the inference key or are skipped. Each check is one JSON line in --results:
`{"check", "outcome": "pass" | "fail" | "skip", "detail"}`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from typing import Any, Callable
from urllib.parse import urlsplit

import httpx2
from openapi_spec_validator import validate


class CheckFailed(Exception):
    pass


def check(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


class Docs:
    def __init__(self, base: str, key: str) -> None:
        self.base = base
        self.key = key
        self.http = httpx2.Client(timeout=30)

    def get(self, params: dict[str, str] | str | None = None, key: str | None = None, header: str = "bearer") -> httpx2.Response:
        headers = {}
        key = self.key if key is None else key
        if key:
            headers = {"Authorization": f"Bearer {key}"} if header == "bearer" else {"x-api-key": key}
        url = f"{self.base}/v1/docs"
        if isinstance(params, str):
            return self.http.get(f"{url}{params}", headers=headers)
        return self.http.get(url, params=params, headers=headers)


def envelope(response: httpx2.Response) -> dict[str, Any]:
    """A 200 in the K-02 envelope with its request id (P-05)."""
    check("x-request-id" in response.headers, "no x-request-id")
    check(response.status_code == 200, f"status {response.status_code}: {response.text[:300]}")
    body = response.json()
    check(body.get("object") == "list", f"object: {body.get('object')!r}")
    check(body.get("query") is None or isinstance(body["query"], str), "query is neither null nor a string")
    check(isinstance(body.get("data"), list), "data is not a list")
    for item in body["data"]:
        for field in ("id", "title", "category", "url"):
            check(isinstance(item.get(field), str), f"{field} of {item}")
    return body


def error(response: httpx2.Response, status: int, code: str, param: str | None = None) -> None:
    """The OpenAI-style error envelope with x-request-id (K-12, P-01)."""
    check(response.status_code == status, f"status {response.status_code}, expected {status}: {response.text[:300]}")
    check("x-request-id" in response.headers, "no x-request-id")
    body = response.json()["error"]
    for field in ("message", "type", "param", "code"):
        check(field in body, f"error.{field} missing")
    check(body["code"] == code, f"code {body['code']!r}, expected {code!r}")
    if param is not None:
        check(body["param"] == param, f"param {body['param']!r}, expected {param!r}")


def ids(body: dict[str, Any]) -> list[str]:
    return [item["id"] for item in body["data"]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--results", required=True)
    args = parser.parse_args()
    base = args.base_url.rstrip("/")
    key = os.environ.get("CONFORMANCE_API_KEY", "")
    docs_key = os.environ.get("CONFORMANCE_DOCS_KEY", "")
    ip_key = os.environ.get("CONFORMANCE_DOCS_IP_KEY", "")
    docs = Docs(base, docs_key or key)
    checks: list[tuple[str, Callable[[], str | None]]] = []

    def case(name: str) -> Callable[[Callable[[], str | None]], Callable[[], str | None]]:
        def register(function: Callable[[], str | None]) -> Callable[[], str | None]:
            checks.append((name, function))
            return function

        return register

    @case("K-01 any valid key, no scope, no credit")
    def _() -> str | None:
        if not docs_key:
            return "skip: no CONFORMANCE_DOCS_KEY"
        envelope(docs.get({"q": "models"}))
        envelope(docs.get(header="x-api-key"))
        error(docs.get(key=""), 401, "invalid_api_key")
        error(docs.get(key="rk-not-a-key"), 401, "invalid_api_key")
        return None

    @case("K-02/K-03 listing without q: ordered metadata, no body")
    def _() -> str | None:
        first = envelope(docs.get())
        check(first["query"] is None, "query is not null")
        check(len(first["data"]) > 0, "no sections")
        for item in first["data"]:
            check("body" not in item, f"body in {item['id']}")
        again = envelope(docs.get())
        check(ids(again) == ids(first), "two listings differ in order")
        check(len(set(ids(first))) == len(first["data"]), "ids repeat")
        return None

    @case("K-04 q returns at most limit sections with body")
    def _() -> str | None:
        body = envelope(docs.get({"q": "models"}))
        check(body["query"] == "models", f"query {body['query']!r}")
        check(0 < len(body["data"]) <= 4, f"{len(body['data'])} items with the default limit")
        for item in body["data"]:
            check(isinstance(item.get("body"), str), f"no body in {item['id']}")
        ten = envelope(docs.get({"q": "models", "limit": "10"}))
        check(len(ten["data"]) <= 10, f"{len(ten['data'])} items with limit 10")
        check(ids(ten)[: len(body["data"])] == ids(body), "best first: the default page is not the head of limit=10")
        return None

    @case("K-05 q at most 500 characters")
    def _() -> str | None:
        envelope(docs.get({"q": "a" * 500}))
        error(docs.get({"q": "a" * 501}), 400, "invalid_parameter", "q")
        return None

    @case("K-06 limit is an integer from 1 to 10 with q")
    def _() -> str | None:
        for bad in ("0", "11", "abc", "1.5"):
            error(docs.get({"q": "models", "limit": bad}), 400, "invalid_parameter", "limit")
        one = envelope(docs.get({"q": "models", "limit": "1"}))
        check(len(one["data"]) <= 1, f"{len(one['data'])} items with limit 1")
        return None

    @case("K-07 limit is ignored without q")
    def _() -> str | None:
        everything = envelope(docs.get())
        for limit in ("1", "99", "abc"):
            body = envelope(docs.get({"limit": limit}))
            check(ids(body) == ids(everything), f"limit={limit} changed the listing")
        return None

    @case("K-08 no match is an empty list")
    def _() -> str | None:
        body = envelope(docs.get({"q": "xyzzyplughfrobnicate"}))
        check(body["data"] == [], f"{len(body['data'])} matches")
        return None

    @case("K-09 url values are absolute URIs")
    def _() -> str | None:
        for item in envelope(docs.get())["data"]:
            url = urlsplit(item["url"])
            check(url.scheme in ("http", "https") and bool(url.netloc), f"not absolute: {item['url']}")
        return None

    @case("K-10 empty q is absent")
    def _() -> str | None:
        for q in ("", "   "):
            body = envelope(docs.get({"q": q}))
            check(body["query"] is None, f"q={q!r}: query {body['query']!r}")
            check(all("body" not in item for item in body["data"]), f"q={q!r}: bodies")
        return None

    @case("K-11 the key's IP policy applies")
    def _() -> str | None:
        if not ip_key:
            return "skip: no CONFORMANCE_DOCS_IP_KEY"
        error(docs.get({"q": "models"}, key=ip_key), 403, "ip_not_allowed")
        return None

    @case("K-12 errors use the OpenAI envelope with x-request-id")
    def _() -> str | None:
        error(docs.get({"q": "models", "limit": "0"}), 400, "invalid_parameter", "limit")
        return None

    @case("R-01 /openapi.json is a valid OpenAPI 3.1 document, version 0.1.0")
    def _() -> str | None:
        response = httpx2.get(f"{base}/openapi.json", timeout=30)
        check(response.status_code == 200, f"status {response.status_code}")
        document = response.json()
        validate(document)
        check(document["openapi"].startswith("3.1"), f"openapi {document['openapi']}")
        check(document["info"]["version"] == "0.1.0", f"info.version {document['info']['version']}")
        schemes = document["components"]["securitySchemes"]
        kinds = {(s["type"], s.get("scheme") or s.get("in")) for s in schemes.values()}
        for kind in (("http", "bearer"), ("apiKey", "header"), ("apiKey", "cookie")):
            check(kind in kinds, f"no {kind} security scheme")
        check("/v1/docs" in document["paths"], "/v1/docs is not described")
        return None

    failed = 0
    with open(args.results, "w", encoding="utf-8") as results:
        for name, function in checks:
            try:
                outcome = function()
                record = {"check": name, "outcome": "skip" if outcome else "pass", "detail": outcome}
            except Exception as exc:  # noqa: BLE001 - every failure is reported, none stops the run
                failed += 1
                detail = str(exc) if isinstance(exc, CheckFailed) else traceback.format_exc(limit=3)
                record = {"check": name, "outcome": "fail", "detail": detail}
                print(f"docs_openapi: {name}: {detail}", file=sys.stderr)
            results.write(json.dumps(record) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
