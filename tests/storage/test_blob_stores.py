"""The attachment blob stores, each against the real thing: a directory, and an
S3-compatible server speaking the S3 wire format (moto's, on loopback)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from storage.attachments import new_blob_key
from storage.blobs import BlobMissing, BlobStore, LocalBlobStore
from storage.blobs_s3 import S3BlobStore
from tests.support.s3 import ACCESS_KEY, REGION, SECRET_KEY, local_s3


@pytest.fixture(params=["local", "s3"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BlobStore]:
    if request.param == "local":
        yield LocalBlobStore(tmp_path / "blobs")
        return
    with local_s3() as s3:
        yield S3BlobStore(
            s3.bucket,
            endpoint=s3.endpoint,
            region=REGION,
            access_key_id=ACCESS_KEY,
            secret_access_key=SECRET_KEY,
        )


async def test_put_get_delete(store: BlobStore) -> None:
    first, second = new_blob_key(), new_blob_key()
    await store.put(first, b"\x89PNG first")
    await store.put(second, b"second")
    assert await store.get(first) == b"\x89PNG first"
    await store.put(first, b"replaced")
    assert await store.get(first) == b"replaced"

    await store.delete([first, new_blob_key()])  # a key never written is no error
    with pytest.raises(BlobMissing):
        await store.get(first)
    assert await store.get(second) == b"second"
    await store.delete([])


async def test_a_key_the_server_did_not_make_is_refused(store: BlobStore) -> None:
    for key in ("../../etc/passwd", "ab/../../x", "AB/" + "0" * 32, ""):
        with pytest.raises(ValueError, match="not a blob key"):
            await store.get(key)
        with pytest.raises(ValueError, match="not a blob key"):
            await store.put(key, b"x")


async def test_local_files_are_private_and_complete(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    key = new_blob_key()
    await store.put(key, b"data")
    path = tmp_path / "blobs" / key
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no partial file left
