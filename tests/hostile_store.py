#!/usr/bin/python3
"""A store server for the remote tests that misbehaves on command. It
speaks the store protocol (docs/remotes.md) over standard input and
output, as `git zipnn serve-store` does at the far end of ssh, serving
the folder it is given honestly except where MODE says:

  honest    every request answered as the real server would (no checks)
  mute      never greets; waits for the client to go
  stall     greets, then answers no get
  huge      answers get with "ok 1125899906842623" and streams zeros
  extra     answers get with "ok 10", ten bytes, and more after them
  short     answers get with the object's size, half the object, and ends
  drop      ends the connection when asked for an object
  longline  answers get with a line that never ends

Usage (as remote.<name>.zipnnserve):  hostile_store.py MODE serve-store [--repository] PATH
"""
import os
import sys

MODE = sys.argv[1]
ROOT = os.path.expanduser(sys.argv[-1])
stdin = sys.stdin.buffer
stdout = sys.stdout.buffer


def say(data):
    stdout.write(data)
    stdout.flush()


def wait_for_the_client_to_go():
    while stdin.read(65536):
        pass
    sys.exit(0)


def path_of(hex_id):
    return os.path.join(ROOT, hex_id[0:2], hex_id[2:4], hex_id)


def get(hex_id):
    path = path_of(hex_id)
    if MODE == "stall":
        wait_for_the_client_to_go()
    if MODE == "drop":
        sys.exit(0)
    if MODE == "huge":
        say(b"ok 1125899906842623\n")
        zeros = bytes(1 << 16)
        while True:
            say(zeros)
    if MODE == "extra":
        say(b"ok 10\n" + b"0123456789" + b"more than it said")
        wait_for_the_client_to_go()
    if MODE == "longline":
        say(b"o" * 200000)
        wait_for_the_client_to_go()
    if not os.path.isfile(path):
        say(b"missing\n")
        return
    with open(path, "rb") as f:
        data = f.read()
    if MODE == "short":
        say(b"ok %d\n" % len(data) + data[: len(data) // 2])
        sys.exit(0)
    say(b"ok %d\n" % len(data) + data)


def put(hex_id, size):
    data = stdin.read(size)
    path = path_of(hex_id)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp-hostile", "wb") as f:
        f.write(data)
    os.rename(path + ".tmp-hostile", path)
    say(b"ok\n")


def main():
    if MODE == "mute":
        wait_for_the_client_to_go()
    say(b"git-zipnn-store 1\n")
    while True:
        line = stdin.readline()
        if not line:
            return
        words = line.decode().split()
        if words[0] == "has":
            ids = [stdin.readline().decode().strip() for _ in range(int(words[1]))]
            say(b"ok " + "".join("1" if os.path.isfile(path_of(i)) else "0" for i in ids).encode() + b"\n")
        elif words[0] == "get":
            get(words[1])
        elif words[0] == "put":
            put(words[1], int(words[2]))
        else:
            return


try:
    main()
except BrokenPipeError:
    pass
