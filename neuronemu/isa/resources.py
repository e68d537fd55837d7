"""Locate the ISA data directory, in a source checkout (``isa/``) or an installed wheel
(``_isa/``), and read its TOML files: every table of ``isa/`` is read here, by one reader.

Why a cache of parsed tables: parsing the ISA's TOML files with tomllib took about 25 ms of every
process's start (every run loads the whole ISA). The parse of a file is stored under the sha256
of its bytes (and the Python version, since the format is ``marshal``'s), so an edited table is
a different key and is parsed afresh: a stale entry cannot be found. Entries are written
atomically (a temporary file renamed into place, safe when two processes start at once) and
carry a sha256 of their payload; one that is damaged or unreadable is parsed again and
replaced. ``marshal`` rather than pickle: loading it runs no code, and TOML's values (str, int,
float, bool, lists, tables) are all it needs; a table it cannot hold (a TOML date) is simply
not cached. Nowhere to write (a read-only home): every file is parsed, as before.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import marshal
import os
import sys
import tempfile
import tomllib
from pathlib import Path


@functools.lru_cache(maxsize=1)
def isa_dir() -> Path:
    checkout = Path(__file__).resolve().parents[2] / "isa"
    if (checkout / "grammar.lark").is_file():
        return checkout
    installed = Path(str(importlib.resources.files("neuronemu") / "_isa"))
    if (installed / "grammar.lark").is_file():
        return installed
    raise FileNotFoundError("neuronemu: cannot find the ISA tables (isa/ or neuronemu/_isa/)")


def read_toml(path: Path) -> dict:
    """One TOML file of an ISA directory (the bundled one or a test's copy), parsed."""
    data = path.read_bytes()
    key = hashlib.sha256(_KEY_PREFIX + data).hexdigest()
    cached = _load_parsed(key)
    if cached is not None:
        return cached
    parsed = tomllib.loads(data.decode())   # what tomllib.load does with a binary file
    _store_parsed(key, parsed)
    return parsed


# What a parse depends on besides the bytes: the format version of this cache and Python's
# (marshal's format and tomllib's behaviour are both the interpreter's).
_KEY_PREFIX = f"neuronemu parsed toml 1|{sys.version_info[:3]}|".encode()
_DIGEST = hashlib.sha256().digest_size
_KEEP_PARSED = 256   # entries kept when one is added (old table versions are never read again)


def parsed_cache_dir() -> Path:
    """Where parsed tables are cached: ``$XDG_CACHE_HOME/neuronemu/tables`` (or ~/.cache)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "neuronemu" / "tables"


def _load_parsed(key: str) -> dict | None:
    try:
        with open(parsed_cache_dir() / f"{key}.marshal", "rb") as f:
            blob = f.read()
    except OSError:
        return None
    payload = blob[_DIGEST:]
    if hashlib.sha256(payload).digest() != blob[:_DIGEST]:
        return None   # damaged: parsed again and rewritten
    try:
        value = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None
    return value if isinstance(value, dict) else None


def _store_parsed(key: str, parsed: dict) -> None:
    try:
        payload = marshal.dumps(parsed)
    except ValueError:
        return   # a value marshal cannot hold (a TOML date): not cached
    folder = parsed_cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(hashlib.sha256(payload).digest() + payload)
            os.replace(temporary, folder / f"{key}.marshal")
        except BaseException:
            os.unlink(temporary)
            raise
        _prune(folder)
    except OSError:
        pass   # nowhere to write: the next process parses it again


def _prune(folder: Path) -> None:
    entries = sorted(folder.glob("*.marshal"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[_KEEP_PARSED:]:
        old.unlink(missing_ok=True)


def read_table(name: str) -> dict:
    """The bundled table ``isa/<name>.toml``, parsed (callers cache what they build from it)."""
    return read_toml(isa_dir() / f"{name}.toml")
