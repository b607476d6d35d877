#!/usr/bin/env python3
"""Hold N half-sent requests on `gorag serve`'s admin port and show what they cost it.

    python3 scripts/admin-flood.py target/debug/gorag 1000

The service is started against an unreachable broker (127.0.0.1:1), so it waits for it with the
admin port up; the connections go to 127.0.0.1 only, the count is bounded, and the service is
stopped at the end. Prints the server's open descriptors before, while the requests are held,
and after the header-read timeout, and how long a fresh /healthz took meanwhile
(docs/guide/bounds.md, "The admin server"). Raise `ulimit -n` above N first.
"""
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

PORT = 19464


def main() -> None:
    binary, count = sys.argv[1], int(sys.argv[2])
    state = tempfile.mkdtemp(prefix="gorag-flood-")
    env = dict(
        os.environ,
        GORAG__ADMIN__LISTEN=f"127.0.0.1:{PORT}",
        GORAG__KAFKA__BROKERS="127.0.0.1:1",
        GORAG__KAFKA__STARTUP_WAIT_SECS="600",
        GORAG__STATE__DIR=state,
        GORAG__ENGINE__EMBEDDING_MODEL="none",
        GORAG_LOG="error",
    )
    service = subprocess.Popen([binary, "serve"], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    descriptors = lambda: len(os.listdir(f"/proc/{service.pid}/fd"))
    held = []
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{PORT}/healthz", timeout=1).read()
                break
            except OSError:
                time.sleep(0.2)
        before = descriptors()
        for _ in range(count):
            stream = socket.socket()
            stream.setblocking(False)
            stream.connect_ex(("127.0.0.1", PORT))
            held.append(stream)
        time.sleep(0.5)
        for stream in held:
            try:
                stream.send(b"GET /healthz HTTP/1.1\r\nHost: gorag\r\n")
            except OSError:
                pass
        time.sleep(1)
        holding = descriptors()
        started = time.time()
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{PORT}/healthz", timeout=30).read()
            answer = f"answered in {time.time() - started:.3f} s"
        except OSError as error:
            answer = f"not answered after {time.time() - started:.1f} s ({error})"
        time.sleep(15)
        after = descriptors()
        print(f"{count} half-sent requests: the service had {before} descriptors open before, "
              f"{holding} while they were held, {after} 16 s later; a fresh /healthz {answer}")
    finally:
        service.terminate()
        service.wait()
        for stream in held:
            stream.close()


if __name__ == "__main__":
    main()
