"""Whether a process on this host has exited. The core's sandbox reaper and the service
layer's claims and sweeper both ask it (the service layer may not reach the sandbox
backends, so the answer lives here, below both)."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs. A zombie (exited, not yet reaped: ``State: Z``, or ``X``
    while it is being reaped) has exited: an orphan's zombie stays until init reaps it,
    on some hosts seconds later, and a worker killed that way is gone at once."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, under another user
        pass
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("State:"):
                    return line.split()[1:2] not in (["Z"], ["X"])
    except (FileNotFoundError, ProcessLookupError):
        return False
    except OSError:  # no /proc here: kill's answer stands
        pass
    return True
