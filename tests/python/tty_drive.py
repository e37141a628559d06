"""Runs a command on a pseudo-terminal and types into it as a person would.

    python tty_drive.py '<steps as JSON>' <command> <args...>

Each step is [text to wait for, line to type]: the driver reads the
terminal until the text appears (60 s at most, else it fails saying what
it saw), then types the line and Enter. After the last step it reads
until the command exits, prints everything the terminal showed, and
exits with the command's status. Only the standard library: pty, os.
"""

import json
import os
import pty
import select
import sys
import time


def main() -> None:
    steps = json.loads(sys.argv[1])
    command = sys.argv[2:]
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(command[0], command)
    seen = b""

    def read(timeout: float) -> bool:
        nonlocal seen
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            return False
        if not chunk:
            return False
        seen += chunk
        return True

    position = 0
    for wanted, typed in steps:
        deadline = time.time() + 60
        while True:
            found = seen.find(wanted.encode(), position)
            if found >= 0:
                position = found + len(wanted)
                break
            if time.time() > deadline or not read(0.2):
                sys.stdout.write(seen.decode(errors="replace"))
                sys.exit(f"\ntty_drive: never saw {wanted!r}")
        os.write(fd, typed.encode() + b"\r")
    deadline = time.time() + 60
    while time.time() < deadline and read(0.2):
        finished, status = os.waitpid(pid, os.WNOHANG)
        if finished:
            while read(0.1):
                pass
            sys.stdout.write(seen.decode(errors="replace"))
            sys.exit(os.waitstatus_to_exitcode(status))
    _, status = os.waitpid(pid, 0)
    sys.stdout.write(seen.decode(errors="replace"))
    sys.exit(os.waitstatus_to_exitcode(status))


main()
