#!/usr/bin/python3
"""An HTTP proxy for the S3 tests: passes every request to the server
behind it, except uploads whose path holds KEY, which it answers with
"503 SlowDown" (what S3 says when it throttles) the first TIMES times.

Usage: s3_fault_proxy.py UPSTREAM_PORT KEY TIMES  (TIMES -1: always)
Prints "proxy listening on 127.0.0.1:PORT" once it takes connections,
then "METHOD PATH" for each request.
"""
import http.client
import http.server
import sys
import threading

UPSTREAM = int(sys.argv[1])
KEY = sys.argv[2]
failures_left = int(sys.argv[3])
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def relay(self):
        global failures_left
        print(self.command, self.path, flush=True)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        with lock:
            fail = self.command == "PUT" and KEY in self.path and failures_left != 0
            if fail and failures_left > 0:
                failures_left -= 1
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
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in ("content-length", "transfer-encoding", "connection", "date", "server"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        upstream.close()

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = relay


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("proxy listening on 127.0.0.1:%d" % server.server_address[1], flush=True)
server.serve_forever()
