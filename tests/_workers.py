"""Killing a Dask worker from a test, to check what a fit does when one dies."""
import os
import signal


def _die():
    os.kill(os.getpid(), signal.SIGKILL)


def kill_holder(client, future):
    """Kill (SIGKILL) the worker that holds ``future``."""
    holder = client.who_has([future])[future.key][0]
    try:
        client.run(_die, workers=[holder])
    except Exception:          # the worker dies before it can answer
        pass
