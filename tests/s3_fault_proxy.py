#!/usr/bin/python3
"""An HTTP proxy for the S3 tests: passes every request to the server
behind it, except requests whose path holds KEY, the first TIMES times
(-1: always), which it answers as MODE says:

  throttle     (the default) an upload gets "503 SlowDown", what S3 says
               when it throttles
  forge FILE   a download gets FILE's bytes in place of the object's
  huge         a download is said to be 1125899906842623 bytes and is
               streamed as zeros
  endless      a download has no length and streams zeros until the
               client goes
  stall        a download gets no answer
  short        a download is said to be the object's size and ends at
               half of it
  cut          a download is the server's answer, headers and all, cut
               at half its body (a network that dropped)

Usage: s3_fault_proxy.py UPSTREAM_PORT KEY TIMES [MODE [FILE]]
Prints "proxy listening on 127.0.0.1:PORT" once it takes connections,
then "METHOD PATH" for each request ("METHOD PATH RANGE" for one that
asks for a range).
"""
import http.client
import http.server
import sys
import threading
import time

UPSTREAM = int(sys.argv[1])
KEY = sys.argv[2]
failures_left = int(sys.argv[3])
MODE = sys.argv[4] if len(sys.argv) > 4 else "throttle"
FILE = sys.argv[5] if len(sys.argv) > 5 else None
lock = threading.Lock()


def pass_head(handler, answer, length):
    """Sends the server's status and headers on, with the body's length."""
    handler.send_response(answer.status)
    for name, value in answer.getheaders():
        if name.lower() not in ("content-length", "transfer-encoding", "connection", "date", "server"):
            handler.send_header(name, value)
    handler.send_header("Content-Length", str(length))
    handler.end_headers()


def lie(handler, upstream_body, upstream=None):
    """Answers a download as MODE says (`upstream`: the server's answer)."""
    if MODE == "cut":
        pass_head(handler, upstream, len(upstream_body))
        handler.wfile.write(upstream_body[: len(upstream_body) // 2])
        handler.wfile.flush()
        handler.close_connection = True
        return
    if MODE == "stall":
        time.sleep(3600)
    handler.send_response(200)
    if MODE == "forge":
        with open(FILE, "rb") as f:
            body = f.read()
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
        return
    if MODE == "short":
        handler.send_header("Content-Length", str(len(upstream_body)))
        handler.end_headers()
        handler.wfile.write(upstream_body[: len(upstream_body) // 2])
        handler.wfile.flush()
        handler.close_connection = True
        return
    if MODE == "huge":
        handler.send_header("Content-Length", "1125899906842623")
    else:  # endless: no length, the end of the connection ends the body
        handler.send_header("Connection", "close")
        handler.close_connection = True
    handler.end_headers()
    zeros = bytes(1 << 16)
    try:
        while True:
            handler.wfile.write(zeros)
    except OSError:
        pass


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def relay(self):
        global failures_left
        asked = self.headers.get("Range")
        print(self.command, self.path, *([asked] if asked else []), flush=True)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        with lock:
            method = "PUT" if MODE == "throttle" else "GET"
            fail = self.command == method and KEY in self.path and failures_left != 0
            if fail and failures_left > 0:
                failures_left -= 1
        if fail and MODE != "throttle":
            upstream = http.client.HTTPConnection("127.0.0.1", UPSTREAM)
            upstream.request(self.command, self.path, body=body, headers=dict(self.headers))
            answer = upstream.getresponse()
            data = answer.read()
            upstream.close()
            lie(self, data, answer)
            return
        if fail:
            reply = b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
            self.send_response(503)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)
            return
        upstream = http.client.HTTPConnection("127.0.0.1", UPSTREAM)
        upstream.request(self.command, self.path, body=body, headers=dict(self.headers))
        answer = upstream.getresponse()
        data = answer.read()
        pass_head(self, answer, len(data))
        if self.command != "HEAD":
            self.wfile.write(data)
        upstream.close()

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = relay


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("proxy listening on 127.0.0.1:%d" % server.server_address[1], flush=True)
server.serve_forever()
