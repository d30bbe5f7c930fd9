#!/usr/bin/python3
"""A librados client whose ops are known exactly, for tests/e2e/test_rados_client.cpp.

    rados_client.py CONF POOL DIR WRITES READS
    rados_client.py CONF POOL DIR IMAGE=N...

Connects (and opens the rbd images), writes DIR/ready and waits for DIR/go (the daemon's
probes are attached by then), or with EAGER=1 goes on at once, as a program that imports rados
and works right away; then makes WRITES 4 KiB writes to objects client-N, READS 4 KiB
reads of them and one read of an object that does not exist (one not_found error), or N 4 KiB
writes to each IMAGE (4 KiB apart: one data object op each); writes DIR/done and waits for
DIR/exit (so that the process lives while the test scrapes). Object names carry the pid, so
that clients run at once do not share objects.
"""
import os
import sys
import time

# IMPORT_DELAY=S: rados is imported S seconds after exec, past the daemon's looks at a fresh
# process, so that it is found only at its next scan.
if os.environ.get("IMPORT_DELAY"):
    time.sleep(float(os.environ["IMPORT_DELAY"]))
import rados  # noqa: E402

# LATE_RBD=1: librbd is loaded only after DIR/go (as qemu loads its rbd driver), then the
# client writes DIR/loaded and waits for DIR/go2 before its image writes.
LATE = os.environ.get("LATE_RBD") == "1"
EAGER = os.environ.get("EAGER") == "1"
if not LATE:
    import rbd  # loaded with librados, before the daemon's first look at the process


def wait_for(path, seconds=120):
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            sys.exit(f"rados_client.py: {path} did not appear in {seconds} s")
        time.sleep(0.05)


def object_ops(ioctx, writes, reads):
    data = b"c" * 4096
    name = f"client-{os.getpid()}"
    for i in range(writes):
        ioctx.write(f"{name}-{i}", data, 0)
    for i in range(reads):
        got = ioctx.read(f"{name}-{i % writes}", 4096, 0)
        assert len(got) == 4096
    try:
        ioctx.read(f"{name}-missing", 4096, 0)
        sys.exit("rados_client.py: reading a missing object did not fail")
    except rados.ObjectNotFound:
        pass


def main():
    conf, pool, where = sys.argv[1:4]
    cluster = rados.Rados(conffile=conf)
    cluster.connect()
    ioctx = cluster.open_ioctx(pool)
    images = []
    names = [arg.split("=") for arg in sys.argv[4:] if "=" in arg]
    if names and not LATE:
        images = [(rbd.Image(ioctx, name), int(count)) for name, count in names]
    open(os.path.join(where, "ready"), "w").close()
    if not EAGER:
        wait_for(os.path.join(where, "go"))
    if names and LATE:
        import rbd as late_rbd
        images = [(late_rbd.Image(ioctx, name), int(count)) for name, count in names]
        open(os.path.join(where, "loaded"), "w").close()
        wait_for(os.path.join(where, "go2"))
    if images:
        for image, count in images:
            for i in range(count):
                image.write(b"i" * 4096, i * 4096)
    else:
        object_ops(ioctx, int(sys.argv[4]), int(sys.argv[5]))
    open(os.path.join(where, "done"), "w").close()
    wait_for(os.path.join(where, "exit"))
    for image, _ in images:
        image.close()
    ioctx.close()
    cluster.shutdown()


if __name__ == "__main__":
    main()
