"""Where attachment bytes live: a small ``BlobStore`` interface and its local backend.

The database holds an attachment's metadata (``storage.attachments``); the bytes go to a
blob store under a key the server makes (never a name the person chose), so a store can
be a directory on this machine (the default, under ``SWITCHBOARD_DATA_DIR``) or an
S3-compatible bucket (``storage.blobs_s3``, the ``s3`` extra). File I/O runs in a worker
thread: a slow disk must not stall the event loop that serves every socket.
"""

from __future__ import annotations

import asyncio
import os
import re
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

# Keys are made by the server (storage.attachments.new_key): lowercase hex, one slash.
KEY_PATTERN = re.compile(r"^[0-9a-f]{2}/[0-9a-f]{32,64}$")


class BlobMissing(LookupError):
    """No blob under that key (deleted, or never written)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"no blob {key!r}")
        self.key = key


class BlobStore(Protocol):
    """Bytes by key. ``delete`` ignores keys that are already gone."""

    async def put(self, key: str, data: bytes) -> None: ...

    async def get(self, key: str) -> bytes: ...

    async def delete(self, keys: Sequence[str]) -> None: ...


def check_key(key: str) -> str:
    """The key, if it is one the server could have made (a path never escapes the root)."""
    if not KEY_PATTERN.fullmatch(key):
        raise ValueError(f"not a blob key: {key!r}")
    return key


class LocalBlobStore:
    """Blobs as files under ``root`` (``<data dir>/attachments`` by default)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    async def put(self, key: str, data: bytes) -> None:
        await asyncio.to_thread(self._write, self._path(key), data)

    async def get(self, key: str) -> bytes:
        path = self._path(key)
        try:
            return await asyncio.to_thread(path.read_bytes)
        except FileNotFoundError:
            raise BlobMissing(key) from None

    async def delete(self, keys: Sequence[str]) -> None:
        paths = [self._path(key) for key in keys]
        if paths:
            await asyncio.to_thread(self._remove, paths)

    @staticmethod
    def _write(path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written beside, then renamed: a reader never sees half a file.
        partial = path.with_name(f".{path.name}.{uuid.uuid4().hex}.partial")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(partial, path)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise

    @staticmethod
    def _remove(paths: list[Path]) -> None:
        for path in paths:
            path.unlink(missing_ok=True)
