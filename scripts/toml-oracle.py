#!/usr/bin/env python3
"""The TOML 1.0 oracle for GatewayConfig's parser (TOMLDifferentialTests).

    toml-oracle.py INPUTS OUTPUT

INPUTS holds documents, each a 4-byte big-endian length and its UTF-8 bytes.
OUTPUT gets one line per document: `ERR`, or `OK ` and the value tree in the
form TOMLDifferentialTests writes for the Swift parser:

    table  {HEXKEY:VALUE,...}  (keys as hex UTF-8, in document order)
    array  [VALUE,...]
    string sHEX   integer i123   float fHEXBITS (f+nan / f-nan)
    bool   T / F  dates and times  d:date, d:time, d:date-time

Python's tomllib (3.11+) decides, with the three rules where TOML 1.0 says
more than tomllib checks, or where GatewayConfig is deliberately narrower:
- integers must fit 64 bits ("an error must be thrown" if not lossless);
  tomllib takes any size;
- a UTF-8 byte-order mark may start the document (tomllib refuses one);
- tables and arrays nest at most 128 deep (GatewayConfig's cap against
  stack exhaustion; tomllib recurses until Python's recursion limit).
"""
import datetime
import math
import struct
import sys
import tomllib

MAX_DEPTH = 128
# datetime before date: a datetime is a date too.
DATES = [(datetime.datetime, "d:date-time"), (datetime.date, "d:date"), (datetime.time, "d:time")]


class Refused(Exception):
    pass


def canon(v, depth):
    if isinstance(v, (dict, list)):
        if depth > MAX_DEPTH:
            raise Refused
        if isinstance(v, dict):
            return "{" + ",".join(k.encode().hex() + ":" + canon(x, depth + 1) for k, x in v.items()) + "}"
        return "[" + ",".join(canon(x, depth + 1) for x in v) + "]"
    if isinstance(v, bool):
        return "T" if v else "F"
    if isinstance(v, int):
        if not -(1 << 63) <= v < (1 << 63):
            raise Refused
        return "i" + str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "f-nan" if math.copysign(1.0, v) < 0 else "f+nan"
        return "f" + struct.pack(">d", v).hex()
    if isinstance(v, str):
        return "s" + v.encode().hex()
    return next(form for kind, form in DATES if isinstance(v, kind))


def judge(text):
    try:  # the document is a table at depth 0: its values are at depth 1
        return "OK " + canon(tomllib.loads(text.removeprefix("\ufeff")), 0)
    except (tomllib.TOMLDecodeError, Refused, RecursionError):
        return "ERR"


def main():
    data, out, i = open(sys.argv[1], "rb").read(), [], 0
    while i < len(data):
        (n,) = struct.unpack(">I", data[i:i + 4])
        out.append(judge(data[i + 4:i + 4 + n].decode("utf-8")) + "\n")
        i += 4 + n
    with open(sys.argv[2], "w") as f:
        f.write("".join(out))


if __name__ == "__main__":
    main()
