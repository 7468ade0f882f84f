#!/usr/bin/env python3
"""Uploads against a real S3-compatible store (requirements section I, issue 18).

`cargo xtask conformance` starts `moto` in server mode on loopback, points the router's
ROUTER_OBJECT_STORE at `s3://CONFORMANCE_S3_BUCKET/uploads` on it, and runs this with the
interpreter of target/conformance/venv. The bucket is created here, before the first upload.
Checks: a small upload (one PUT) and a 7 MiB one (an S3 multipart upload of 5 MiB parts) land
in the bucket byte for byte under random keys; DELETE and one `upload-purge` pass remove the
object. Each check is one JSON line in --results: `{"check", "outcome", "detail"}`.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import struct
import sys
import zlib
from typing import Callable

import boto3
import httpx2

from checks import check, run_checks


def png(total: int) -> bytes:
    """A valid 1x1 PNG padded to exactly `total` bytes with a private ancillary chunk."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    head = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
    tail = chunk(b"IDAT", zlib.compress(b"\x00\x00")) + chunk(b"IEND", b"")
    pad = total - len(head) - len(tail) - 12
    out = head + chunk(b"ruSt", b"\x5a" * pad) + tail
    assert len(out) == total
    return out


class Run:
    def __init__(self, base: str, key: str, admin: str, endpoint: str, bucket: str) -> None:
        self.base = base
        self.key = key
        self.admin = admin
        self.bucket = bucket
        self.http = httpx2.Client(timeout=60)
        self.s3 = boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"],
            region_name=os.environ["AWS_REGION"],
        )

    def objects(self) -> dict[str, int]:
        listed = self.s3.list_objects_v2(Bucket=self.bucket)
        return {o["Key"]: o["Size"] for o in listed.get("Contents", [])}

    def upload(self, data: bytes) -> httpx2.Response:
        return self.http.post(
            f"{self.base}/v1/uploads",
            headers={"Authorization": f"Bearer {self.key}"},
            files={"file": ("holiday photo.png", data, "image/png")},
        )

    def stored_as(self, data: bytes, before: dict[str, int]) -> str:
        new = [k for k in self.objects() if k not in before]
        check(len(new) == 1, f"expected one new object, got {new}")
        key = new[0]
        check(key.startswith("uploads/"), f"object outside the prefix: {key}")
        check("holiday" not in key and "upl_" not in key, f"guessable key: {key}")
        body = self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        check(
            hashlib.sha256(body).digest() == hashlib.sha256(data).digest(),
            f"stored {len(body)} bytes differ from the {len(data)} uploaded",
        )
        return key


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--results", required=True)
    args = parser.parse_args()
    run = Run(
        args.base_url.rstrip("/"),
        os.environ["CONFORMANCE_API_KEY"],
        os.environ["CONFORMANCE_ADMIN_TOKEN"],
        os.environ["CONFORMANCE_S3_ENDPOINT"],
        os.environ["CONFORMANCE_S3_BUCKET"],
    )
    run.s3.create_bucket(Bucket=run.bucket)
    state: dict[str, str] = {}

    def small_upload_is_one_object() -> None:
        before = run.objects()
        data = png(4096)
        response = run.upload(data)
        check(response.status_code == 201, f"{response.status_code} {response.text}")
        record = response.json()
        check(record["bytes"] == len(data), str(record))
        state["small"] = record["id"]
        state["small_key"] = run.stored_as(data, before)

    def seven_mib_upload_is_a_multipart_write() -> None:
        before = run.objects()
        data = png(7 * 1024 * 1024)
        response = run.upload(data)
        check(response.status_code == 201, f"{response.status_code} {response.text}")
        run.stored_as(data, before)

    def delete_and_purge_remove_the_object() -> None:
        check("small" in state, "the small upload did not happen")
        response = run.http.delete(
            f"{run.base}/v1/uploads/{state['small']}",
            headers={"Authorization": f"Bearer {run.key}"},
        )
        check(response.status_code == 204, f"{response.status_code} {response.text}")
        check(state["small_key"] in run.objects(), "removed before the purge pass")
        response = run.http.post(
            f"{run.base}/admin/jobs/upload-purge/run",
            headers={"Authorization": f"Bearer {run.admin}"},
        )
        check(response.status_code == 200, f"{response.status_code} {response.text}")
        check(response.json()["processed"] >= 1, response.text)
        check(state["small_key"] not in run.objects(), "the object is still in the bucket")

    checks: list[Callable[[], None]] = [
        small_upload_is_one_object,
        seven_mib_upload_is_a_multipart_write,
        delete_and_purge_remove_the_object,
    ]
    return run_checks("s3", checks, args.results)


if __name__ == "__main__":
    sys.exit(main())
