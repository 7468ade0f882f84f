#!/usr/bin/env python3
"""Video jobs through the official OpenAI Python SDK (requirements section O, issue 22).

`cargo xtask conformance` runs this with the interpreter of target/conformance/venv against
the local router (its object store: moto's S3, as for uploads) and the mock supplier, whose
videos endpoint completes a job on its second poll. The router polls every 200 ms.

The SDK's `videos.create` sends multipart/form-data by default; the router's
`POST /v1/videos` takes JSON only (O-34, GP-52), so the call passes
`extra_headers={"Content-Type": "application/json"}` and the router's own fields
(`mode`, `resolution`, `duration`, `client_task_id`) through `extra_body`.
Checks: create → a queued video object; the same create again → the same id (O-16);
retrieve until completed (O-21); download_content → the mock's bytes, and a raw ranged GET
→ 206 (O-27); a reused client_task_id with other parameters → the SDK raises ConflictError
(409 idempotency_conflict, O-17). Each check is one JSON line in --results.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from typing import Callable

import httpx2
import openai

from checks import CheckFailed, check, run_checks


MODEL = "conf-video"
JSON = {"Content-Type": "application/json"}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--results", required=True)
    args = parser.parse_args()
    base = args.base_url.rstrip("/")
    key = os.environ["CONFORMANCE_API_KEY"]
    client = openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0)
    http = httpx2.Client(timeout=60)
    task = f"conf-{uuid.uuid4().hex[:12]}"
    fields = {"mode": "references", "resolution": "720p", "duration": 5, "client_task_id": task}
    state: dict[str, object] = {}

    def create_returns_a_queued_video() -> None:
        video = client.videos.create(model=MODEL, prompt="a cat surfing", extra_headers=JSON, extra_body=fields)
        check(video.object == "video", str(video))
        check(video.status == "queued", str(video))
        check(video.model == MODEL, str(video))
        check(video.id.startswith("video_"), str(video))
        state["id"] = video.id

    def the_same_create_is_the_same_video() -> None:
        check("id" in state, "create did not happen")
        again = client.videos.create(model=MODEL, prompt="a cat surfing", extra_headers=JSON, extra_body=fields)
        check(again.id == state["id"], f"{again.id} != {state['id']}")

    def retrieve_until_completed() -> None:
        check("id" in state, "create did not happen")
        deadline = time.monotonic() + 60
        video = client.videos.retrieve(str(state["id"]))
        while video.status not in ("completed", "failed") and time.monotonic() < deadline:
            time.sleep(0.2)
            video = client.videos.retrieve(str(state["id"]))
        check(video.status == "completed", str(video))
        check(video.progress == 100, str(video))
        check(video.completed_at is not None, str(video))
        metadata = (video.model_extra or {}).get("metadata") or {}
        check(metadata.get("url") == f"/v1/videos/{state['id']}/content", str(video))
        state["completed"] = True

    def download_content_is_the_video() -> None:
        check(state.get("completed") is True, "the video did not complete")
        content = client.videos.download_content(str(state["id"]))
        data = content.read()
        check(len(data) > 1000 and data[4:8] == b"ftyp", f"{len(data)} bytes: {data[:16]!r}")
        ranged = http.get(
            f"{base}/v1/videos/{state['id']}/content",
            headers={"Authorization": f"Bearer {key}", "Range": "bytes=0-99"},
        )
        check(ranged.status_code == 206, f"{ranged.status_code} {ranged.headers}")
        check(ranged.headers["content-range"] == f"bytes 0-99/{len(data)}", str(ranged.headers))
        check(ranged.content == data[:100], "the range differs from the file")

    def other_parameters_are_a_conflict() -> None:
        changed = dict(fields, duration=10)
        try:
            client.videos.create(model=MODEL, prompt="a cat surfing", extra_headers=JSON, extra_body=changed)
        except openai.ConflictError as error:
            body = error.body if isinstance(error.body, dict) else {}
            check(body.get("code") == "idempotency_conflict", str(error.body))
            check(body.get("requestId") == error.response.headers.get("x-request-id"), str(error.body))
            return
        raise CheckFailed("a changed request under the same client_task_id was accepted")

    checks: list[Callable[[], None]] = [
        create_returns_a_queued_video,
        the_same_create_is_the_same_video,
        retrieve_until_completed,
        download_content_is_the_video,
        other_parameters_are_a_conflict,
    ]
    return run_checks("videos", checks, args.results)


if __name__ == "__main__":
    sys.exit(main())
