"""What the Python suites here share: one line per check and the closing
"N passed, M failed" the Rust drivers look for, `qp admin` on a database
file, and `qp serve` on a loopback port of its own.
"""

import contextlib
import json
import os
import subprocess
import threading

QP = os.environ.get("QP", "qp")
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f": {detail}"), flush=True)


def summary():
    """Prints the closing line; the exit code (1 on any failure)."""
    passed = sum(results)
    failed = len(results) - passed
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def admin(db, *args):
    out = subprocess.run([QP, "admin", "--db", db, *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout) if out.stdout.strip().startswith(("{", "[")) else out.stdout


@contextlib.contextmanager
def serve(db, *args):
    """`qp serve` on 127.0.0.1:0 over `db`; yields its base URL, kills it after."""
    proc = subprocess.Popen([QP, "serve", "--listen", "127.0.0.1:0", "--db", db, *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        base = None
        for line in proc.stderr:
            if "listening on " in line:
                base = line.split("listening on ")[1].strip()
                break
        if base is None:
            raise RuntimeError("qp serve exited before listening")
        # Keep reading its log so it never blocks on a full pipe.
        threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
        yield base
    finally:
        proc.kill()
        proc.wait()
