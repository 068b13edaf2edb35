"""Column types whose values SQLite stores in a packed form of their own (issue 21)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Dialect
from sqlalchemy.types import TypeEngine


class PackedOnSqlite(TypeEngine[Any]):
    """Put first among a column type's bases: on SQLite a value is bound as ``pack(value)``
    and read back with ``unpack``, SQL NULL staying None; other engines keep the type's own
    processing. ``pack``/``unpack`` are the subclass's static methods."""

    pack: Callable[[Any], Any]
    unpack: Callable[[Any], Any]

    def bind_processor(self, dialect: Dialect) -> Any:
        if dialect.name != "sqlite":
            return super().bind_processor(dialect)
        pack = self.pack

        def process(value: Any) -> Any:
            return None if value is None else pack(value)

        return process

    def result_processor(self, dialect: Dialect, coltype: Any) -> Any:
        if dialect.name != "sqlite":
            return super().result_processor(dialect, coltype)
        unpack = self.unpack

        def process(value: Any) -> Any:
            return None if value is None else unpack(value)

        return process
