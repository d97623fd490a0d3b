#!/usr/bin/env python3
"""Checks Dropbox API calls against Dropbox's own schema: the official SDK's (PyPI `dropbox`)
stone serializers, strict, as the SDK reads answers from the real service.

Usage: dropbox_schema.py SOURCE
SOURCE is the sandbox's base URL (the exchanges are read from `/_sandbox/dropbox/exchanges`)
or a file of those JSON lines. Each exchange's argument (RPC body or `Dropbox-API-Arg`) is
decoded with the route's `arg_type`; a 200 answer (body, or `Dropbox-API-Result` of a
download) with `result_type`; a 409 answer must be `{"error_summary": str, "error": …}` with
`error` decoded by `error_type` and `error_summary` beginning with the tags it nests; a 401 `error` by `auth.AuthError`, a 429 `error` by
`auth.RateLimitError`. Any other status (a 400 is plain text: the emulation refused the
call) is a failure, as are routes the SDK does not know, older calls the sandbox let go and
texts it cut.

Prints each failure (route, status, what, the texts), then `checked ROUTE N` per route, and
exits 1 on any failure, 2 on unusable input, else 0. Run with the SDK's python (the venv
scripts/deps.sh makes at ${XDG_CACHE_HOME:-~/.cache}/evidence/dropbox-sdk).
"""
import importlib
import json
import re
import sys
import urllib.request
from collections import Counter

from dropbox import auth, stone_base, stone_serializers


def route_object(path):
    """`files/upload_session/append_v2` → dropbox.files ROUTES["upload_session/append:2"]."""
    namespace, _, name = path.partition("/")
    try:
        module = importlib.import_module("dropbox." + namespace)
    except ImportError:
        return None
    m = re.fullmatch(r"(.*)_v(\d+)", name)
    key = f"{m.group(1)}:{m.group(2)}" if m else name
    return getattr(module, "ROUTES", {}).get(key)


def tag_path(value):
    """The union tags an error nests, outermost first (`path`, `conflict`, `file`), through
    the struct members that hold a union (`UploadWriteFailed.reason`): what Dropbox's
    `error_summary` spells out, and what clients (ours) decide on."""
    tags = []
    while value is not None:
        if isinstance(value, stone_base.Union):
            tags.append(value._tag)
            value = value._value
        elif isinstance(value, stone_base.Struct):
            value = next((getattr(value, f) for f in value._all_field_names_
                          if isinstance(getattr(value, f), stone_base.Union)), None)
        else:
            break
    return tags


def decode(data_type, text):
    stone_serializers.json_decode(data_type, text, strict=True)


def check(exchange):
    """The failures of one exchange, as short descriptions."""
    route = route_object(exchange["route"])
    if route is None:
        return ["route unknown to the SDK"]
    problems = []
    arg = exchange.get("arg")
    try:
        decode(route.arg_type, "null" if arg in (None, "") else arg)
    except Exception as e:  # stone raises ValidationError; bad JSON raises ValueError
        problems.append(f"argument: {e}")
    status, answer = exchange["status"], exchange["answer"]
    try:
        if status == 200:
            decode(route.result_type, answer if answer != "" else "null")
        elif status in (401, 409, 429):
            body = json.loads(answer)
            if not isinstance(body, dict) or not isinstance(body.get("error_summary"), str) or "error" not in body:
                raise ValueError("not {\"error_summary\": str, \"error\": …}")
            kind = {401: auth.AuthError_validator, 409: route.error_type, 429: auth.RateLimitError_validator}[status]
            error = stone_serializers.json_compat_obj_decode(kind, body["error"], strict=True)
            tags = "/".join(tag_path(error))
            if status == 409 and not body["error_summary"].startswith(tags + "/"):
                problems.append(f"error_summary {body['error_summary']!r} does not begin with the error's tags {tags!r}")
        else:
            problems.append(f"status {status} has no schema (the call was refused)")
    except Exception as e:
        problems.append(f"answer ({status}): {e}")
    if exchange.get("truncated"):
        problems.append("the sandbox cut a text longer than it keeps")
    return problems


def shown(text):
    """A text to print, link passwords blanked (what a client sends is logged nowhere in full)."""
    return re.sub(r'("link_password"\s*:\s*)"(?:[^"\\]|\\.)*"', r'\1"(not shown)"', text or "")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    source = sys.argv[1]
    if source.startswith(("http://", "https://")):
        with urllib.request.urlopen(source.rstrip("/") + "/_sandbox/dropbox/exchanges", timeout=30) as r:
            text = r.read().decode()
    else:
        with open(source) as f:
            text = f.read()
    checked, failures = Counter(), 0
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            exchange = json.loads(line)
        except ValueError as e:
            print(f"line {n}: not JSON: {e}", file=sys.stderr)
            sys.exit(2)
        if "dropped" in exchange:
            print(f"FAIL the sandbox let {exchange['dropped']} older calls go: they were not checked")
            failures += 1
            continue
        problems = check(exchange)
        checked[exchange["route"]] += 1
        for p in problems:
            failures += 1
            for secret in re.findall(r'"link_password"\s*:\s*"((?:[^"\\]|\\.)*)"', exchange.get("arg") or ""):
                p = p.replace(secret, "(not shown)")
            print(f"FAIL {exchange['route']} {exchange['status']}: {p}\n  arg: {shown(exchange.get('arg'))}\n"
                  f"  answer: {shown(exchange['answer'][:2000])}")
    for route, count in sorted(checked.items()):
        print(f"checked {route} {count}")
    print(f"{sum(checked.values())} exchanges, {failures} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
