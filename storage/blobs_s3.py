"""Attachment bytes in an S3-compatible bucket (AWS S3, MinIO, Ceph, R2 …).

Uses ``obstore`` (the ``s3`` extra: ``pip install 'switchboard-server[s3]'``): a
maintained, typed, natively async object-store client in one wheel with no further
dependencies, where aiobotocore would bring botocore and aiohttp. Imported only when
``SWITCHBOARD_ATTACHMENT_STORE=s3``. Every call has a timeout, and the client's own
retries (with backoff) cover a passing fault.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import obstore
from obstore.exceptions import NotFoundError
from obstore.store import S3Store

from storage.blobs import BlobMissing, check_key

TIMEOUT = timedelta(seconds=30)
CONNECT_TIMEOUT = timedelta(seconds=5)


class S3BlobStore:
    """Blobs as objects of ``bucket``, under ``prefix`` (``attachments/`` by default)."""

    def __init__(
        self,
        bucket: str,
        *,
        endpoint: str | None = None,
        region: str = "us-east-1",
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        prefix: str = "attachments",
    ) -> None:
        config: dict[str, object] = {"region": region}
        if endpoint:
            # Path-style requests: what MinIO and most S3-compatible servers expect.
            config.update(endpoint=endpoint, virtual_hosted_style_request=False)
        if access_key_id and secret_access_key:
            config.update(access_key_id=access_key_id, secret_access_key=secret_access_key)
        self._store = S3Store(
            bucket,
            prefix=prefix,
            config=config,  # type: ignore[arg-type]
            client_options={
                "timeout": TIMEOUT,
                "connect_timeout": CONNECT_TIMEOUT,
                # Plain http only when the endpoint says so (a server on loopback, tests).
                "allow_http": bool(endpoint and endpoint.startswith("http://")),
            },
        )

    async def put(self, key: str, data: bytes) -> None:
        await obstore.put_async(self._store, check_key(key), data)

    async def get(self, key: str) -> bytes:
        try:
            result = await obstore.get_async(self._store, check_key(key))
            return bytes(await result.bytes_async())
        except (NotFoundError, FileNotFoundError):
            raise BlobMissing(key) from None

    async def delete(self, keys: Sequence[str]) -> None:
        if keys:
            # S3 answers a delete of a missing object with success, so gone stays gone.
            await obstore.delete_async(self._store, [check_key(key) for key in keys])
