"""A local S3-compatible server for the attachment store's tests: moto's server (the
``moto[server]`` dev dependency), which speaks the S3 REST API over HTTP, on a free
loopback port, with one bucket."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
from moto.server import ThreadedMotoServer

REGION = "us-east-1"
# moto checks no signature; any key pair is accepted (and nothing real is ever used).
ACCESS_KEY = "test-access-key"
SECRET_KEY = "test-secret-key"


@dataclass(frozen=True)
class LocalS3:
    endpoint: str
    bucket: str


@contextmanager
def local_s3() -> Iterator[LocalS3]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        bucket = f"attachments-{uuid.uuid4().hex[:8]}"
        # Path-style CreateBucket, as any S3 client sends it.
        created = httpx.put(f"{endpoint}/{bucket}", timeout=10)
        created.raise_for_status()
        yield LocalS3(endpoint, bucket)
    finally:
        server.stop()
