#!/usr/bin/python3
"""ssh for the remote tests, through a link that counts and may drop.

Run as GIT_SSH_COMMAND="dropping_link.py ssh -F <config>": it runs the
command after it (ssh and its arguments) and relays both ways between it
and its own caller, appending "<n> bytes" for each connection to the file
$OUT_COUNT (from the caller) and $IN_COUNT (to the caller). With CUT set,
a connection drops once CUT bytes went one way, as a link that fails: the
caller sees its connection end there; every byte relayed before reaches
the far end (the far end sees its input end after them), so that a test
knows exactly what arrived. With RATE set (bytes a second), each way of
each connection moves at most that fast, as a real link holds each
connection to a rate (benchmarks); the count files are then optional.
"""
import os
import signal
import subprocess
import sys
import threading
import time

limit = int(os.environ.get("CUT", "0")) or None
rate = float(os.environ.get("RATE", "0")) or None
far = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
counts = {"OUT_COUNT": 0, "IN_COUNT": 0}
lock = threading.Lock()
dropped = threading.Event()
recorded = []
way = []  # the way the link dropped


def record():
    """Appends the counts, once (at the end, or when stopped)."""
    with lock:
        if recorded:
            return
        recorded.append(True)
        for name, n in counts.items():
            if name not in os.environ:
                continue
            with open(os.environ[name], "a") as f:
                f.write("%d bytes\n" % n)


def stopped(signum, frame):
    record()
    far.kill()
    os._exit(1)


signal.signal(signal.SIGTERM, stopped)


def close(fd):
    try:
        os.close(fd)
    except OSError:
        pass


def relay(src, dst, name):
    """Copies src to dst until src ends, dst fails, or the limit is reached."""
    n = 0
    began = time.monotonic()
    while not dropped.is_set():
        if rate is not None:  # ahead of the rate: wait until it catches up
            ahead = n / rate - (time.monotonic() - began)
            if ahead > 0:
                time.sleep(ahead)
        chunk = os.read(src, 65536)
        if not chunk:
            break
        if limit is not None:
            chunk = chunk[: limit - n]
        try:
            view = memoryview(chunk)
            while view:
                k = os.write(dst, view)
                view = view[k:]
                n += k
        except BrokenPipeError:
            break
        with lock:
            counts[name] = n
        if limit is not None and n >= limit:
            with lock:
                way.append(name)
            dropped.set()
            break
    with lock:
        counts[name] = n
    close(dst)


out = threading.Thread(target=relay, args=(0, far.stdin.fileno(), "OUT_COUNT"), daemon=True)
back = threading.Thread(target=relay, args=(far.stdout.fileno(), 1, "IN_COUNT"), daemon=True)
out.start()
back.start()
while back.is_alive() and not dropped.wait(0.05):
    pass
if dropped.is_set():
    close(1)  # the caller's connection ends here
    if way == ["OUT_COUNT"]:
        close(far.stdin.fileno())  # the far end takes what came, then sees its input end
        try:
            far.wait(timeout=10)
        except subprocess.TimeoutExpired:
            far.kill()
    else:
        far.kill()
far.wait()
record()
os._exit(1 if dropped.is_set() else far.returncode)
