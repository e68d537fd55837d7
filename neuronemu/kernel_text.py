"""The bytes of a kernel file as text: UTF-8, with or without a byte-order mark, or UTF-16/32
with one; anything else is a located input error saying what to do.

Why: editors save with a byte-order mark (Windows Notepad, some IDEs' "UTF-8 with BOM") or in
UTF-16 ("Unicode"), and students upload what their editor saved. A mark is not part of the
program: read as a character it made the first line an error, and a lab's reference solution
saved that way scored 0 (issue 30 item 12). A file in another 8-bit encoding (a Latin-1 `é` in a
comment) cannot be read safely, so it is refused at the first undecodable byte, with its line.
"""

from __future__ import annotations

import codecs

from neuronemu.errors import InputError
from neuronemu.source import Location, SourceFile

# longest first: the UTF-32 LE mark begins with the UTF-16 LE one
_MARKS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
          (codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
          (codecs.BOM_UTF16_BE, "utf-16-be"))


def decode_kernel(data: bytes, name: str) -> str:
    """The text of a kernel file named ``name`` (for messages); raises ``InputError`` located at
    the first byte that does not decode."""
    encoding, start = "utf-8", 0
    for mark, codec in _MARKS:
        if data.startswith(mark):
            encoding, start = codec, len(mark)
            break
    body = data[start:]
    try:
        return body.decode(encoding)
    except UnicodeDecodeError as error:
        readable = body[:error.start].decode(encoding, errors="replace")
        line = readable.count("\n") + 1
        column = len(readable) - (readable.rfind("\n") + 1) + 1
        shown = SourceFile(name, body.decode(encoding, errors="replace"))
        bad = body[error.start:error.end]
        label = "UTF-8" if encoding == "utf-8" else encoding.upper()
        raise InputError(
            f"the kernel is not {label} text: byte{'s' if len(bad) > 1 else ''} "
            f"{bad.hex(' ')} cannot be decoded ({error.reason}); save the file as UTF-8 "
            f"(assembly needs only ASCII outside comments)",
            Location(shown, line, column, column + 1)) from None
