"""A link made dirty while its resynchronisation thread is finishing still flushes as soon
as Redis answers (review of issue 25, items 4/5): the thread must not miss that wake-up."""

from __future__ import annotations

import threading

from esmapper.distributed import RedisLink
from esmapper.testing import RedisServer


def test_a_flush_needed_while_the_resync_thread_ends_is_still_made(
    redis_server: RedisServer,
) -> None:
    link = RedisLink(redis_server.url, namespace="wakeup", retry_min=0.01, retry_max=0.05)
    try:
        assert link.ready()  # synchronised once
        real_ready = link.ready
        finishing = threading.Event()

        def ready_then_dirty() -> bool:
            result = real_ready()
            if result and not finishing.is_set():
                finishing.set()
                # another thread finds a removal failed (or a lapse) right as the resync
                # thread returns from its successful ready(): the link is dirty again
                link.removal_failed()
            return result

        link.ready = ready_then_dirty  # type: ignore[method-assign]
        link.removal_failed()  # dirty: the resync thread starts
        assert finishing.wait(10)
        link.ready = real_ready  # type: ignore[method-assign]
        # no read in this process: only the resync thread can flush the namespace
        synced = threading.Event()

        def poll() -> None:
            while not synced.is_set():
                if link._synced:
                    synced.set()
                    return
                if link._stop.wait(0.01):
                    return

        watcher = threading.Thread(target=poll, daemon=True)
        watcher.start()
        assert synced.wait(10), "the link stayed dirty: nothing flushed it"
    finally:
        link.close()
