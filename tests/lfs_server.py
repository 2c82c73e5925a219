#!/usr/bin/python3
"""A Git LFS server of the tests' own, as a hosting site runs one beside
its git repositories (Debian packages none). One HTTP port serves both:

  <repo>.git/info/lfs/objects/batch   the batch API (basic transfers)
  <repo>.git/info/lfs/objects/<oid>   PUT an object (its SHA-256 is
                                      checked against the oid), GET one
                                      (whole, or a byte range)
  <repo>.git/info/lfs/verify          the verify call after an upload
  <repo>.git/info/lfs/chunk/<oid>/<n> PUT a chunk of an upload in chunks
  <repo>.git/info/lfs/complete/<oid>  POST the list of its chunks
  anything else                       git's smart HTTP, by running
                                      `git http-backend` (clone, fetch,
                                      push of the repositories in ROOT)

Every request must carry HTTP basic credentials equal to USER:PASSWORD;
one without them, or with others, gets 401 and a Basic challenge, which
makes git and git-lfs ask their credential helpers. The batch answer
hands the caller's own Authorization header on in each action, as a
host's signed URLs would carry their own.

Objects live in ROOT/<repo>.git/lfs-objects/<oid[0:2]>/<oid[2:4]>/<oid>,
each written under a temporary name and renamed once its hash is right.
Nothing is ever deleted: the LFS API has no call for it.

MODE (optional) makes the server misbehave for the tests of what a
client does with a host that cannot be trusted:

  honest      (the default) as described above
  forge       a download of any object gets other bytes of the same size
  short       a download is said to be the object's size and ends at half
  error500    every batch request gets 500
  stall       a download gets headers and then no byte
  cut         a download from the first byte is cut at half, as a
              network that drops; one of a later range is served
  noranges    a download asked for a byte range gets the whole object
  lateranges  so does every one from the fifth on (a node behind a
              balancer that ignores Range)
  filelinks   the links it hands out are not http: an upload goes to
              file://ROOT/../victim, a download comes from file:///dev/zero
  drip        a batch answer comes a byte every half second, without end
              (its JSON, then spaces), without a Content-Length
  dripobject  so does a download of an object
  flood       a batch answer is spaces as fast as they go, without end
  redirect    a download is answered 302 to file:///dev/zero
  signed      each download link carries a presigned query
              (?X-Amz-Signature=SECRETSIG...) and is cut at half (short)
  flaky       every other batch request gets 503 (a busy node), the
              next one an answer

The mode may change while the server runs: a file ROOT/../mode, when it
exists, holds the mode each request is answered in.

Two more files set what a host may set, read at each request:

  ROOT/../max_size         the most bytes one object may have, as GitHub
                           has one: a batch upload of a larger object gets
                           the object's error 422 "Size must be less than
                           or equal to N", and a PUT of one 413.
  ROOT/../rate             the most bytes a second an upload or download
                           of an object's bytes goes at, on each
                           connection, as a real link holds it (the
                           benchmarks' 25 or 100 MB/s)
  ROOT/../refuse           oids, one a line: an upload (PUT) of one is
                           answered 500, as a server with a full disk
                           answers, its bytes read first
  ROOT/../multipart_chunk  C: an upload of more than C bytes, by a client
                           that offers the "multipart" adapter, goes in
                           chunks of C, as the Hugging Face Hub has it: the
                           upload action's header holds "chunk_size" and a
                           link for each chunk under its number ("00001"),
                           each link carries a token of its own in place of
                           credentials and answers with an ETag, and the
                           action's href takes {"oid", "parts": [{
                           "partNumber", "etag"}]} once all are up, which
                           makes the chunks the object (its SHA-256
                           checked).

Usage: lfs_server.py ROOT USER:PASSWORD [MODE]
Prints "lfs server listening on 127.0.0.1:PORT" once it takes
connections, then "METHOD PATH STATUS" for each request it answered,
"range OID FROM END" for each download of a byte range [FROM, END),
"sent N" after each download that sent N bytes of an object, and
"received N" after each upload of an object's bytes (N those that came,
all or not).
"""
import base64
import hashlib
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time

ROOT = os.path.abspath(sys.argv[1])
CREDENTIALS = "Basic " + base64.b64encode(sys.argv[2].encode()).decode()
USER = sys.argv[2].split(":", 1)[0]
MODE = sys.argv[3] if len(sys.argv) > 3 else "honest"
LFS_TYPE = "application/vnd.git-lfs+json"
OID = re.compile(r"^[0-9a-f]{64}$")
# /<repo>.git/info/lfs/<rest>, the repository named as a path under ROOT.
LFS_PATH = re.compile(r"^/(?P<repo>[A-Za-z0-9._/-]+?\.git)/info/lfs/(?P<rest>[^?]*)(?:\?.*)?$")
log_lock = threading.Lock()
ranges_asked = 0  # range requests so far (lateranges)
batches_asked = 0  # batch requests so far (flaky)
SIGNED_QUERY = "?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=SECRETCRED&X-Amz-Signature=SECRETSIG"


def mode():
    """The mode of this request: ROOT/../mode when it exists, else MODE."""
    try:
        with open(os.path.join(ROOT, "..", "mode")) as f:
            return f.read().strip() or MODE
    except OSError:
        return MODE


def setting(name):
    """The number in ROOT/../<name>, or None."""
    try:
        with open(os.path.join(ROOT, "..", name)) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def refused_oids():
    """The oids in ROOT/../refuse, one a line: uploads of them fail."""
    try:
        with open(os.path.join(ROOT, "..", "refuse")) as f:
            return set(f.read().split())
    except OSError:
        return set()


chunk_tokens = {}  # (repo, oid) -> the token of its upload in chunks


def chunk_dir(repo, oid):
    return os.path.join(ROOT, repo, "lfs-chunks", oid)


def object_path(repo, oid):
    return os.path.join(ROOT, repo, "lfs-objects", oid[0:2], oid[2:4], oid)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def log_answer(self, status):
        with log_lock:
            print(self.command, self.path, status, flush=True)

    # ---- plumbing -------------------------------------------------------

    def pace(self, started, moved):
        """Waits until `moved` bytes since `started` keep to the rate."""
        rate = setting("rate")
        if rate:
            ahead = started + moved / rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)

    def object_body(self):
        """An object's bytes, read at the rate a connection is held to;
        logged as "received N", N the bytes that came (all of them or not)."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = self.body()
        else:
            length, parts, got, started = int(self.headers.get("Content-Length") or 0), [], 0, time.monotonic()
            try:
                while got < length:
                    parts.append(self.rfile.read(min(length - got, 1 << 18)))
                    if not parts[-1]:
                        break
                    got += len(parts[-1])
                    self.pace(started, got)
            finally:
                with log_lock:
                    print("received", got, flush=True)
            return b"".join(parts)
        with log_lock:
            print("received", len(data), flush=True)
        return data

    def body(self):
        """The request body, de-chunked when git sends it in chunks."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def answer(self, status, body=b"", content_type="text/plain", headers=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.log_answer(status)

    def answer_json(self, status, value):
        self.answer(status, json.dumps(value).encode(), LFS_TYPE)

    def answer_without_end(self, status, first, pause):
        """`first`, then spaces, a byte each `pause` seconds (a chunk each),
        until the client hangs up."""
        self.send_response(status)
        self.send_header("Content-Type", LFS_TYPE)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.log_answer("without-end")
        data = first
        while True:
            for i in range(0, len(data), 1 if pause else len(data)):
                piece = data[i:i + 1] if pause else data
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
                if pause:
                    time.sleep(pause)
            data = b" " if pause else b" " * 65536

    def authorized(self):
        if self.headers.get("Authorization") == CREDENTIALS:
            return True
        self.body()  # read it, so the connection stays usable
        challenge = 'Basic realm="git-zipnn test server"'
        self.answer(401, b"credentials needed\n", headers=[("WWW-Authenticate", challenge),
                                                            ("LFS-Authenticate", challenge)])
        return False

    def base_url(self):
        return "http://" + self.headers.get("Host", "127.0.0.1")

    # ---- the LFS API ----------------------------------------------------

    def batch(self, repo):
        try:
            request = json.loads(self.body())
            operation = request["operation"]
            objects = request["objects"]
        except (ValueError, KeyError, TypeError):
            return self.answer_json(422, {"message": "not a batch request"})
        if operation not in ("upload", "download"):
            return self.answer_json(422, {"message": "unknown operation " + str(operation)})
        m = mode()
        if m == "error500":
            return self.answer_json(500, {"message": "the server is having a bad day"})
        if m == "flaky":
            with log_lock:
                global batches_asked
                batches_asked += 1
                busy = batches_asked % 2 == 1
            if busy:
                return self.answer_json(503, {"message": "busy, try again"})
        transfers = request.get("transfers") or ["basic"]
        if "basic" not in transfers:
            return self.answer_json(422, {"message": "only the basic transfer adapter is served"})
        auth = {"Authorization": self.headers["Authorization"]}
        max_size, chunk = setting("max_size"), setting("multipart_chunk")
        chunked = False
        answers = []
        for o in objects:
            oid, size = o.get("oid"), o.get("size")
            entry = {"oid": oid, "size": size}
            if not isinstance(oid, str) or not OID.match(oid) or not isinstance(size, int) or size < 0:
                entry["error"] = {"code": 422, "message": "not a valid oid and size"}
                answers.append(entry)
                continue
            href = "%s/%s/info/lfs/objects/%s" % (self.base_url(), repo, oid)
            verify = "%s/%s/info/lfs/verify" % (self.base_url(), repo)
            if m == "filelinks":
                href = "file:///dev/zero" if operation == "download" else \
                    "file://" + os.path.abspath(os.path.join(ROOT, "..", "victim"))
                verify = "file://" + os.path.abspath(os.path.join(ROOT, "..", "victim"))
            if m == "signed":
                href += SIGNED_QUERY
            path = object_path(repo, oid)
            held = os.path.isfile(path)
            if operation == "download":
                if not held:
                    entry["error"] = {"code": 404, "message": "object does not exist"}
                elif os.path.getsize(path) != size:
                    entry["error"] = {"code": 422, "message": "object has another size"}
                else:
                    entry["authenticated"] = True
                    entry["actions"] = {"download": {"href": href, "header": auth, "expires_in": 3600}}
            elif max_size is not None and size > max_size:
                entry["error"] = {"code": 422, "message": "Size must be less than or equal to %d" % max_size}
            elif not held and chunk and "multipart" in transfers and size > chunk:
                token = os.urandom(8).hex()
                with log_lock:
                    chunk_tokens[(repo, oid)] = token
                header = {"chunk_size": str(chunk)}
                for n in range(1, (size + chunk - 1) // chunk + 1):
                    header["%05d" % n] = "%s/%s/info/lfs/chunk/%s/%d?token=%s" % (
                        self.base_url(), repo, oid, n, token)
                entry["authenticated"] = True
                entry["actions"] = {
                    "upload": {"href": "%s/%s/info/lfs/complete/%s" % (self.base_url(), repo, oid),
                               "header": header, "expires_in": 3600},
                    "verify": {"href": verify, "header": auth},
                }
                chunked = True
            elif not held:  # an upload of what the server holds needs no action
                entry["authenticated"] = True
                entry["actions"] = {
                    "upload": {"href": href, "header": auth, "expires_in": 3600},
                    "verify": {"href": verify, "header": auth},
                }
            answers.append(entry)
        reply = {"transfer": "multipart" if chunked else "basic", "objects": answers, "hash_algo": "sha256"}
        if m in ("drip", "flood"):
            return self.answer_without_end(200, json.dumps(reply).encode(), 0.5 if m == "drip" else 0)
        self.answer_json(200, reply)

    def upload(self, repo, oid):
        data = self.object_body()
        max_size = setting("max_size")
        if max_size is not None and len(data) > max_size:
            return self.answer_json(413, {"message": "object too large"})
        if hashlib.sha256(data).hexdigest() != oid:
            return self.answer_json(422, {"message": "the bytes sent do not hash to " + oid})
        self.keep(repo, oid, data)
        self.answer(200)

    def keep(self, repo, oid, data):
        path = object_path(repo, oid)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        temp = "%s.tmp-%d-%d" % (path, os.getpid(), threading.get_ident())
        with open(temp, "wb") as f:
            f.write(data)
        os.rename(temp, path)

    def chunk(self, repo, oid, number, token):
        """A chunk of an upload in chunks, admitted by its link's token."""
        data = self.object_body()
        with log_lock:
            known = chunk_tokens.get((repo, oid))
        if known is None or token != known:
            return self.answer_json(403, {"message": "not a link this server gave"})
        os.makedirs(chunk_dir(repo, oid), exist_ok=True)
        with open(os.path.join(chunk_dir(repo, oid), str(number)), "wb") as f:
            f.write(data)
        self.answer(200, headers=[("ETag", '"%s"' % hashlib.md5(data).hexdigest())])

    def complete(self, repo, oid):
        try:
            parts = json.loads(self.body())["parts"]
            numbers = [p["partNumber"] for p in parts]
            etags = [p["etag"] for p in parts]
        except (ValueError, KeyError, TypeError):
            return self.answer_json(422, {"message": "not a completion request"})
        if numbers != list(range(1, len(parts) + 1)):
            return self.answer_json(422, {"message": "the parts are not numbered 1 to N"})
        data = b""
        for n, etag in zip(numbers, etags):
            try:
                with open(os.path.join(chunk_dir(repo, oid), str(n)), "rb") as f:
                    chunk = f.read()
            except OSError:
                return self.answer_json(422, {"message": "part %d was not uploaded" % n})
            if etag != '"%s"' % hashlib.md5(chunk).hexdigest():
                return self.answer_json(422, {"message": "part %d has another ETag" % n})
            data += chunk
        if hashlib.sha256(data).hexdigest() != oid:
            return self.answer_json(422, {"message": "the parts do not hash to " + oid})
        self.keep(repo, oid, data)
        self.answer_json(200, {"oid": oid})

    def verify(self, repo):
        try:
            o = json.loads(self.body())
            oid, size = o["oid"], o["size"]
        except (ValueError, KeyError, TypeError):
            return self.answer_json(422, {"message": "not a verify request"})
        path = object_path(repo, oid) if isinstance(oid, str) and OID.match(oid) else None
        if path is None or not os.path.isfile(path) or os.path.getsize(path) != size:
            return self.answer_json(404, {"message": "object not stored"})
        self.answer(200)

    def download(self, repo, oid):
        m = mode()
        path = object_path(repo, oid)
        if not os.path.isfile(path):
            return self.answer_json(404, {"message": "object does not exist"})
        size = os.path.getsize(path)
        start, end, status = 0, size, 200
        wanted = re.match(r"^bytes=(\d+)-(\d*)$", self.headers.get("Range", ""))
        headers = [("Accept-Ranges", "none" if m == "noranges" else "bytes")]
        if wanted and m == "lateranges":
            with log_lock:
                global ranges_asked
                ranges_asked += 1
                ignored = ranges_asked >= 5
        else:
            ignored = m == "noranges"
        if wanted and not ignored:
            start = int(wanted.group(1))
            end = min(size, int(wanted.group(2)) + 1) if wanted.group(2) else size
            if start >= size or start >= end:
                return self.answer(416, headers=[("Content-Range", "bytes */%d" % size)])
            status = 206
            headers.append(("Content-Range", "bytes %d-%d/%d" % (start, end - 1, size)))
            with log_lock:
                print("range %s %d %d" % (oid, start, end), flush=True)
        with open(path, "rb") as f:  # only the part asked for
            f.seek(start)
            part = f.read(end - start)
        if m == "redirect":
            return self.answer(302, b"moved\n", headers=[("Location", "file:///dev/zero")])
        if m == "dripobject":
            return self.answer_without_end(status, part, 0.5)
        if m == "forge":
            part = bytes((b ^ 0x5A) for b in part)
        if m == "stall":
            self.send_response(status)
            self.send_header("Content-Length", str(len(part)))
            self.end_headers()
            self.wfile.flush()
            self.log_answer("stall")
            time.sleep(3600)
            return
        if m in ("short", "signed") or (m == "cut" and start == 0):
            self.send_response(status)
            self.send_header("Content-Length", str(len(part)))
            self.end_headers()
            self.wfile.write(part[: len(part) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.log_answer(m)
            return
        if setting("rate") and self.command != "HEAD":
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(part)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            started = time.monotonic()
            for at in range(0, len(part), 1 << 18):
                self.wfile.write(part[at:at + (1 << 18)])
                self.pace(started, min(len(part), at + (1 << 18)))
            self.log_answer(status)
        else:
            self.answer(status, part, "application/octet-stream", headers)
        if self.command != "HEAD":
            with log_lock:
                print("sent", len(part), flush=True)

    def lfs(self, repo, rest):
        if ".." in repo.split("/") or not os.path.isdir(os.path.join(ROOT, repo)):
            self.body()
            return self.answer_json(404, {"message": "no repository " + repo})
        if rest == "objects/batch" and self.command == "POST":
            return self.batch(repo)
        if rest == "verify" and self.command == "POST":
            return self.verify(repo)
        if self.command == "POST" and re.match(r"^complete/[0-9a-f]{64}$", rest):
            return self.complete(repo, rest.split("/")[1])
        named = re.match(r"^objects/([0-9a-f]{64})$", rest)
        if named and self.command == "PUT":
            if named.group(1) in refused_oids():
                self.object_body()
                return self.answer_json(500, {"message": "the disk is full"})
            return self.upload(repo, named.group(1))
        if named and self.command in ("GET", "HEAD"):
            return self.download(repo, named.group(1))
        self.body()
        self.answer_json(404, {"message": "no such LFS call"})

    # ---- git's smart HTTP -----------------------------------------------

    def git(self):
        path, _, query = self.path.partition("?")
        env = dict(os.environ)
        env.update({
            "GIT_PROJECT_ROOT": ROOT,
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "REMOTE_USER": USER,  # an authenticated user may push
            "REMOTE_ADDR": self.client_address[0],
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
        })
        data = self.body()
        env["CONTENT_LENGTH"] = str(len(data))
        run = subprocess.run(["git", "http-backend"], input=data, env=env, capture_output=True)
        head, _, out = run.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, out = run.stdout.partition(b"\n\n")
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        content_type = dict((n.lower(), v) for n, v in headers).get("content-type", "text/plain")
        headers = [(n, v) for n, v in headers if n.lower() not in ("content-type", "content-length")]
        self.answer(status, out, content_type, headers)

    def route(self):
        lfs = LFS_PATH.match(self.path)
        chunk = lfs and re.match(r"^chunk/([0-9a-f]{64})/(\d+)$", lfs.group("rest"))
        if chunk and self.command == "PUT":  # its link's token admits it, as a presigned URL
            token = re.search(r"[?&]token=([0-9a-f]+)", self.path)
            return self.chunk(lfs.group("repo"), chunk.group(1), int(chunk.group(2)), token and token.group(1))
        if not self.authorized():
            return
        if lfs:
            return self.lfs(lfs.group("repo"), lfs.group("rest"))
        return self.git()

    do_GET = do_POST = do_PUT = do_HEAD = route


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    # Python's default backlog of 5 drops the SYN of a client that opens
    # more connections at once (eight transfers and a batch request), which
    # then waits a second to try again; a host's backlog is far larger.
    request_queue_size = 128

    def handle_error(self, request, client_address):
        # A client that hangs up on a kept-alive connection is no fault.
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


def main():
    server = Server(("127.0.0.1", 0), Handler)
    print("lfs server listening on 127.0.0.1:%d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
