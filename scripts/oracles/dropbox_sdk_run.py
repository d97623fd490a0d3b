#!/usr/bin/env python3
"""The official Dropbox Python SDK (PyPI `dropbox`) against the sandbox's emulation, by
Dropbox's real host names (run where api.dropboxapi.com and content.dropboxapi.com lead to
the sandbox's TLS front, as the peer tests' network namespace arranges).

Usage: dropbox_sdk_run.py CA_PEM
With the emulation's app key, secret and refresh token (the SDK refreshes first): account,
folder, a small `files_upload`, a larger file by upload session (start, append_v2, finish,
1 MiB pieces) and one by `finish_batch_v2` (beside a session not closed), concurrent sessions
started wrongly, an upload conflict, `files_list_folder` one
entry a page (+ continue), a shared link and the second one's `shared_link_already_exists`,
`files_download`, `files_get_metadata`, the other route errors (names, conflicts, paths, links,
sessions), delete, and the session errors a resuming client meets
(wrong offset, damaged piece), and a write refused (429) while another is under way. Checks names, sizes and `content_hash`
(computed here from the bytes). Exit 0 when all held, 1 with each failure on stderr.
"""
import hashlib
import json
import os
import socket
import ssl
import sys
import time

import dropbox
from dropbox import files, sharing
from dropbox.exceptions import ApiError, RateLimitError

BLOCK = 4 << 20
PIECE = 1 << 20
failures = []


def expect(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL " + what, file=sys.stderr)


def content_hash(data):
    """Dropbox's content_hash: SHA-256 of the SHA-256s of 4 MiB blocks."""
    return hashlib.sha256(b"".join(hashlib.sha256(data[i:i + BLOCK]).digest()
                                   for i in range(0, len(data), BLOCK))).hexdigest()


def api_error(call):
    """The route error `call` raised (None when it succeeded)."""
    try:
        call()
    except ApiError as e:
        return e.error
    return None


def session_upload(dbx, data, path):
    """start + append_v2 … + finish, PIECE bytes a call."""
    start = dbx.files_upload_session_start(data[:PIECE])
    cursor = files.UploadSessionCursor(session_id=start.session_id, offset=PIECE)
    while len(data) - cursor.offset > PIECE:
        dbx.files_upload_session_append_v2(data[cursor.offset:cursor.offset + PIECE], cursor)
        cursor.offset += PIECE
    return dbx.files_upload_session_finish(data[cursor.offset:], cursor, files.CommitInfo(path=path))


def overlapping_write(dbx, ca):
    """A write while another is under way: Dropbox answers 429 too_many_write_operations.
    The other is an upload whose body we hold back, sent by hand; an SDK client that does not
    retry on rate limits asks for folders (each a new one) until one is refused."""
    raw = ssl.create_default_context(cafile=ca).wrap_socket(socket.create_connection(("content.dropboxapi.com", 443), timeout=30),
                                                             server_hostname="content.dropboxapi.com")
    arg = json.dumps({"path": "/held.bin"})
    raw.sendall((f"POST /2/files/upload HTTP/1.1\r\nHost: content.dropboxapi.com\r\nAuthorization: Bearer {dbx._oauth2_access_token}\r\n"
                 f"Content-Type: application/octet-stream\r\nDropbox-API-Arg: {arg}\r\nContent-Length: 10\r\nConnection: close\r\n\r\n"
                 "12345").encode())
    impatient = dbx.clone(max_retries_on_rate_limit=0)
    refused, deadline, n = None, time.monotonic() + 20, 0
    while refused is None and time.monotonic() < deadline:
        n += 1
        try:
            impatient.files_create_folder_v2(f"/while-held-{n}")
        except RateLimitError as e:
            refused = e
    expect(refused is not None and refused.error.reason.is_too_many_write_operations(), f"a write during another: {refused}")
    raw.sendall(b"67890")
    answer = b""
    while chunk := raw.recv(65536):
        answer += chunk
    raw.close()
    expect(answer.startswith(b"HTTP/1.1 200"), f"the held upload: {answer[:300]}")


def route_errors(dbx):
    """The emulation's other route errors, each read by the SDK as the tag Dropbox documents."""
    def reason(e):
        return e.get_path().reason if e is not None and e.is_path() else None
    cases = [
        ("upload of a disallowed name", lambda: dbx.files_upload(b"x", "/SDK/desktop.ini"),
         lambda e: reason(e) is not None and reason(e).is_disallowed_name()),
        ("upload under a file", lambda: dbx.files_upload(b"x", "/SDK/small.bin/inner.bin"),
         lambda e: reason(e) is not None and reason(e).is_conflict() and reason(e).get_conflict().is_file()),
        ("folder over a file", lambda: dbx.files_create_folder_v2("/SDK/small.bin"),
         lambda e: e.is_path() and e.get_path().is_conflict() and e.get_path().get_conflict().is_file()),
        ("listing a file", lambda: dbx.files_list_folder("/SDK/small.bin"), lambda e: e.is_path() and e.get_path().is_not_folder()),
        ("listing nothing", lambda: dbx.files_list_folder("/nowhere"), lambda e: e.is_path() and e.get_path().is_not_found()),
        ("links of nothing", lambda: dbx.sharing_list_shared_links(path="/nowhere"), lambda e: e.is_path() and e.get_path().is_not_found()),
        ("a link to nothing", lambda: dbx.sharing_create_shared_link_with_settings("/nowhere"),
         lambda e: e.is_path() and e.get_path().is_not_found()),
        ("a link with a password", lambda: dbx.sharing_create_shared_link_with_settings(
            "/SDK/small.bin", sharing.SharedLinkSettings(requested_visibility=sharing.RequestedVisibility.password, link_password="not-shown")),
         lambda e: e.is_settings_error() and e.get_settings_error().is_not_authorized()),
        ("append to an unknown session", lambda: dbx.files_upload_session_append_v2(b"x", files.UploadSessionCursor("nope", 0)),
         lambda e: e.is_not_found()),
        ("update of another revision", lambda: dbx.files_upload(b"new", "/SDK/small.bin", mode=files.WriteMode.update("0123456789abcdef")),
         lambda e: reason(e) is not None and reason(e).is_conflict()),
    ]
    for what, call, fits in cases:
        err = api_error(call)
        expect(err is not None and fits(err), f"{what}: {err}")
    closed = dbx.files_upload_session_start(b"abc", close=True)
    err = api_error(lambda: dbx.files_upload_session_append_v2(b"d", files.UploadSessionCursor(closed.session_id, 3)))
    expect(err is not None and err.is_closed(), f"append to a closed session: {err}")
    renamed = dbx.files_upload(b"other bytes", "/SDK/small.bin", autorename=True)
    expect(renamed.name == "small (1).bin", f"autorename: {renamed}")
    dbx.files_delete_v2(renamed.path_lower)


def main():
    dbx = dropbox.Dropbox(oauth2_refresh_token="sandbox-dropbox-refresh", app_key="sandbox-dropbox-key",
                          app_secret="sandbox-dropbox-secret", ca_certs=sys.argv[1])
    account = dbx.users_get_current_account()
    expect(account.account_id.startswith("dbid:"), f"account id {account.account_id}")
    dbx.files_create_folder_v2("/SDK")
    overlapping_write(dbx, sys.argv[1])

    small, big, batched = os.urandom(3000), os.urandom(3 * PIECE + 12345), os.urandom(PIECE + 7)
    meta = dbx.files_upload(small, "/SDK/small.bin", mode=files.WriteMode.add)
    expect((meta.name, meta.size, meta.content_hash) == ("small.bin", len(small), content_hash(small)), f"files_upload: {meta}")
    meta = session_upload(dbx, big, "/SDK/big.bin")
    expect((meta.name, meta.size, meta.content_hash) == ("big.bin", len(big), content_hash(big)), f"session finish: {meta}")

    start = dbx.files_upload_session_start(batched, close=True)
    cursor = files.UploadSessionCursor(session_id=start.session_id, offset=len(batched))
    open_one = dbx.files_upload_session_start(b"not closed")
    batch = dbx.files_upload_session_finish_batch_v2([
        files.UploadSessionFinishArg(cursor, files.CommitInfo(path="/SDK/batched.bin")),
        files.UploadSessionFinishArg(files.UploadSessionCursor(session_id=open_one.session_id, offset=10), files.CommitInfo(path="/SDK/open.bin")),
    ])
    entry, unclosed = batch.entries
    expect(entry.is_success() and entry.get_success().content_hash == content_hash(batched), f"finish_batch_v2: {batch}")
    expect(unclosed.is_failure() and unclosed.get_failure().is_lookup_failed() and unclosed.get_failure().get_lookup_failed().is_not_closed(),
           f"finish_batch_v2 of a session not closed: {unclosed}")
    # A concurrent session starts empty and open; its pieces come by append_v2.
    err = api_error(lambda: dbx.files_upload_session_start(small, session_type=files.UploadSessionType.concurrent))
    expect(err is not None and err.is_concurrent_session_data_not_allowed(), f"concurrent start with data: {err}")
    err = api_error(lambda: dbx.files_upload_session_start(b"", close=True, session_type=files.UploadSessionType.concurrent))
    expect(err is not None and err.is_concurrent_session_close_not_allowed(), f"concurrent start closed: {err}")

    # The session errors a resuming client meets: a wrong offset (append, finish), a damaged piece.
    start = dbx.files_upload_session_start(big[:PIECE])
    wrong = files.UploadSessionCursor(session_id=start.session_id, offset=5)
    err = api_error(lambda: dbx.files_upload_session_append_v2(big[:PIECE], wrong))
    expect(err is not None and err.is_incorrect_offset() and err.get_incorrect_offset().correct_offset == PIECE, f"append at 5: {err}")
    err = api_error(lambda: dbx.files_upload_session_finish(b"", wrong, files.CommitInfo(path="/SDK/never.bin")))
    expect(err is not None and err.is_lookup_failed() and err.get_lookup_failed().is_incorrect_offset(), f"finish at 5: {err}")
    right = files.UploadSessionCursor(session_id=start.session_id, offset=PIECE)
    err = api_error(lambda: dbx.files_upload_session_append_v2(big[PIECE:2 * PIECE], right, content_hash=content_hash(small)))
    expect(err is not None and err.is_content_hash_mismatch(), f"append with another piece's hash: {err}")
    err = api_error(lambda: dbx.files_upload(small, "/SDK/other.bin", content_hash=content_hash(big)))
    expect(err is not None and err.is_content_hash_mismatch(), f"upload with another file's hash: {err}")
    err = api_error(lambda: dbx.files_download("/SDK"))
    expect(err is not None and err.is_path() and err.get_path().is_not_file(), f"download of a folder: {err}")

    conflict = api_error(lambda: dbx.files_upload(os.urandom(10), "/SDK/small.bin", mode=files.WriteMode.add))
    expect(conflict is not None and conflict.is_path() and conflict.get_path().reason.is_conflict(), f"upload over a file: {conflict}")

    listing = dbx.files_list_folder("/sdk", limit=1)
    entries = list(listing.entries)
    while listing.has_more:
        listing = dbx.files_list_folder_continue(listing.cursor)
        entries += listing.entries
    sizes = {e.name: e.size for e in entries if isinstance(e, files.FileMetadata)}
    expect(sizes == {"small.bin": len(small), "big.bin": len(big), "batched.bin": len(batched)}, f"listing: {sizes}")
    everything = dbx.files_list_folder("", recursive=True)
    expect({e.path_display for e in everything.entries} >= {"/SDK", "/SDK/big.bin"} and not everything.has_more,
           f"recursive listing: {[e.path_display for e in everything.entries]}")
    folder = dbx.files_get_metadata("/sdk")
    expect(isinstance(folder, files.FolderMetadata) and folder.path_display == "/SDK", f"folder metadata: {folder}")
    hashes = {e.name: e.content_hash for e in entries if isinstance(e, files.FileMetadata)}
    expect(hashes["big.bin"] == content_hash(big), f"listed content_hash {hashes}")

    link = dbx.sharing_create_shared_link_with_settings("/SDK/big.bin")
    expect(link.url.startswith("https://") and link.name == "big.bin", f"shared link: {link}")
    again = api_error(lambda: dbx.sharing_create_shared_link_with_settings("/SDK/big.bin"))
    expect(again is not None and again.is_shared_link_already_exists(), f"second link: {again}")
    if again is not None and again.is_shared_link_already_exists():
        expect(again.get_shared_link_already_exists().get_metadata().url == link.url, f"the existing link: {again}")
    listed = dbx.sharing_list_shared_links(path="/SDK/big.bin")
    expect([x.url for x in listed.links] == [link.url], f"list_shared_links: {listed}")

    meta, response = dbx.files_download("/SDK/big.bin")
    expect(response.content == big and meta.content_hash == content_hash(big), f"download: {meta}")
    meta = dbx.files_get_metadata("/sdk/SMALL.bin")
    expect((meta.path_display, meta.size, meta.content_hash) == ("/SDK/small.bin", len(small), content_hash(small)),
           f"get_metadata: {meta}")

    route_errors(dbx)
    dbx.files_delete_v2("/SDK/small.bin")
    gone = api_error(lambda: dbx.files_get_metadata("/SDK/small.bin"))
    expect(gone is not None and gone.is_path() and gone.get_path().is_not_found(), f"after delete: {gone}")
    print(f"{len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
