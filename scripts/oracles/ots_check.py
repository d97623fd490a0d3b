#!/usr/bin/env python3
"""OpenTimestamps oracle for evidence's tests, on python-opentimestamps (PyPI `opentimestamps`,
the reference implementation the `ots` client is built on) and python-bitcoinlib's header parser.

  ots_check.py proof FILE.ots ORIGINAL ESPLORA_URL
      Deserializes FILE.ots with the reference code, checks that it is a proof of ORIGINAL's
      SHA-256, re-serializes it and compares the bytes (canonical form), and checks every
      Bitcoin attestation with `BitcoinBlockHeaderAttestation.verify_against_blockheader` against
      the header ESPLORA_URL serves (which must hash to the block hash it names). Prints
      {"attested": [{"height": H, "time": T}], "pending": [URI...]}; exit 1 on any failure.

  ots_check.py client CALENDAR_URL ESPLORA_URL MINE_URL
      Drives a calendar as the reference client does (RemoteCalendar.submit, then
      get_timestamp after MINE_URL is POSTed) and verifies the upgrade against the header source.
"""
import hashlib
import json
import sys
import urllib.request

from bitcoin.core import CBlockHeader
from opentimestamps.calendar import RemoteCalendar
from opentimestamps.core.notary import BitcoinBlockHeaderAttestation, PendingAttestation
from opentimestamps.core.serialize import BytesDeserializationContext, BytesSerializationContext
from opentimestamps.core.timestamp import DetachedTimestampFile


def header(esplora, height):
    block_hash = urllib.request.urlopen("%s/block-height/%d" % (esplora, height)).read().decode().strip()
    raw = bytes.fromhex(urllib.request.urlopen("%s/block/%s/header" % (esplora, block_hash)).read().decode().strip())
    h = CBlockHeader.deserialize(raw)
    if h.GetHash()[::-1].hex() != block_hash:
        raise SystemExit("header of block %d does not hash to %s" % (height, block_hash))
    return h


def check_attestations(timestamp, esplora):
    attested, pending = [], []
    for msg, att in timestamp.all_attestations():
        if isinstance(att, BitcoinBlockHeaderAttestation):
            t = att.verify_against_blockheader(msg, header(esplora, att.height))
            attested.append({"height": att.height, "time": t})
        elif isinstance(att, PendingAttestation):
            pending.append(att.uri)
    return attested, pending


def proof(path, original, esplora):
    data = open(path, "rb").read()
    ctx = BytesDeserializationContext(data)
    dtf = DetachedTimestampFile.deserialize(ctx)
    ctx.assert_eof()
    digest = hashlib.sha256(open(original, "rb").read()).digest()
    if dtf.file_digest != digest:
        raise SystemExit("the proof is of %s, the file hashes to %s" % (dtf.file_digest.hex(), digest.hex()))
    out = BytesSerializationContext()
    dtf.serialize(out)
    if out.getbytes() != data:
        raise SystemExit("not in canonical form: the reference serializer writes other bytes")
    attested, pending = check_attestations(dtf.timestamp, esplora)
    print(json.dumps({"attested": attested, "pending": pending}))


def client(calendar, esplora, mine):
    digest = hashlib.sha256(b"evidence sandbox calendar check").digest()
    c = RemoteCalendar(calendar)
    submitted = c.submit(digest)
    pending = [(m, a) for m, a in submitted.all_attestations() if isinstance(a, PendingAttestation)]
    if len(pending) != 1:
        raise SystemExit("expected one pending attestation, got %r" % list(submitted.all_attestations()))
    urllib.request.urlopen(urllib.request.Request(mine, method="POST")).read()
    commitment, attestation = pending[0]
    upgraded = RemoteCalendar(attestation.uri).get_timestamp(commitment)
    attested, _ = check_attestations(upgraded, esplora)
    if not attested:
        raise SystemExit("the upgrade has no Bitcoin attestation")
    print(json.dumps({"attested": attested, "uri": attestation.uri}))


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "proof":
        proof(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 5 and sys.argv[1] == "client":
        client(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        raise SystemExit(__doc__)
