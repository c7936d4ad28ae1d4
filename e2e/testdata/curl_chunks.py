"""Reads an NDJSON stream through libcurl's write callback (Debian's
python3-pycurl) and prints, as one JSON object, how the callbacks cut it.

libcurl decodes a chunked body chunk by chunk and hands the data of each
chunk to the write callback on its own (in pieces of at most
CURL_MAX_WRITE_SIZE, 16 KiB, and cut where a socket read ended), never
together with the next chunk. So when every line is a chunk of its own, no
callback holds bytes of two lines; a callback that does is a chunk that held
two lines.

Usage: curl_chunks.py URL TOKEN BODY [insecure]
"""

import json
import sys

import pycurl

url, token, body = sys.argv[1:4]
calls = []
c = pycurl.Curl()
c.setopt(pycurl.URL, url)
c.setopt(pycurl.POSTFIELDS, body)
c.setopt(pycurl.HTTPHEADER, ["Authorization: Bearer " + token, "Content-Type: application/json"])
c.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_1_1)
if sys.argv[4:] == ["insecure"]:
    c.setopt(pycurl.SSL_VERIFYPEER, 0)
    c.setopt(pycurl.SSL_VERIFYHOST, 0)
c.setopt(pycurl.WRITEFUNCTION, calls.append)
c.perform()

report = {
    "status": c.getinfo(pycurl.RESPONSE_CODE),
    "callbacks": len(calls),
    "maxCallback": max((len(b) for b in calls), default=0),
    "shared": 0,  # callbacks holding bytes of two lines
    "whole": 0,  # lines that came in one callback
    "torn": 0,  # lines that came in several callbacks
    "tornSmall": 0,  # of those, lines of at most 16 KiB
    "ids": [],  # payload ids of the event lines, in order
    "bad": [],  # the first lines that are not {"type":"event",...}
}
pieces = []
for b in calls:
    if b"\n" in b[:-1]:
        report["shared"] += 1
    pieces.append(b)
    if not b.endswith(b"\n"):
        continue
    line = b"".join(pieces)
    if len(pieces) == 1:
        report["whole"] += 1
    else:
        report["torn"] += 1
        report["tornSmall"] += len(line) <= 16384
    pieces = []
    try:
        doc = json.loads(line)
        assert doc["type"] == "event" and line.endswith(b"}\n") and line.count(b"\n") == 1
        report["ids"].append(doc["payload"]["id"])
    except Exception:
        if len(report["bad"]) < 3:
            report["bad"].append(line[:200].decode("utf-8", "replace"))
if pieces:
    report["bad"].append("unterminated: " + b"".join(pieces)[:200].decode("utf-8", "replace"))
print(json.dumps(report))
