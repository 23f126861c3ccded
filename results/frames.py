"""The results store as pandas DataFrames, for notebooks and analyses of one's own.

Read through a read-only connection, so a frame can be loaded while a run is
still writing. JSON columns (a run's configuration, an item's answer, a call's
images) arrive parsed; a run's configuration is also spread into `config.*`
columns so runs can be filtered by strategy, agents or seed.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from datasets_io.sqlite_errors import reading_uri
from results.store import StoreError

TABLES = ("runs", "items", "calls", "verdicts", "decisions")
JSON_COLUMNS = {"runs": ("config",), "items": ("answer",), "calls": ("images", "parsed")}


def _parsed(value: object) -> object:
    """A JSON text parsed; SQL NULL (which pandas may read as NaN) stays None."""
    return json.loads(value) if isinstance(value, str) else None


def store_frame(path: Path, table: str, run_ids: Sequence[str] | None = None) -> pd.DataFrame:
    """One table of the store at `path`, optionally only the rows of some runs."""
    if table not in TABLES:
        raise ValueError(f"no table {table!r} in the results store (tables: {', '.join(TABLES)})")
    if not path.is_file():
        raise StoreError(f"no results store at {path}")
    key = "id" if table == "runs" else "run_id"
    where = f" WHERE {key} IN ({', '.join('?' * len(run_ids))})" if run_ids is not None else ""
    try:
        with sqlite3.connect(reading_uri(path), uri=True) as connection:
            frame = pd.read_sql_query(f"SELECT * FROM {table}{where}", connection, params=list(run_ids or []))
    except (sqlite3.Error, pd.errors.DatabaseError) as error:
        raise StoreError(f"results store {path}: cannot read table {table}: {error}") from None
    for column in JSON_COLUMNS.get(table, ()):
        frame[column] = frame[column].map(_parsed)
    if table == "runs" and not frame.empty:
        config = pd.json_normalize(frame["config"].tolist(), max_level=1).add_prefix("config.")
        frame = pd.concat([frame, config], axis=1)
    return frame


def store_frames(path: Path, run_ids: Sequence[str] | None = None) -> dict[str, pd.DataFrame]:
    """Every table of the store, by name."""
    return {table: store_frame(path, table, run_ids) for table in TABLES}
