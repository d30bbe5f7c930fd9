"""What the Prometheus-in-the-loop scripts of this folder share: free ports, HTTP GETs and
bounded waits."""
import socket
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def wait_until(what, pred, timeout, period=0.5):
    """Polls PRED until it is true; connection errors count as not yet. Fails the test after
    TIMEOUT seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if pred():
                return True
        except OSError:
            pass
        time.sleep(period)
    raise SystemExit(f"FAILED: {what} within {timeout} s")
