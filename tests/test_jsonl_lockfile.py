"""The JSONL append lock held open between appends still excludes every other holder."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from sessiontree.backends.jsonl.lockfile import LogLock
from sessiontree.errors import StorageError

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="flock path is POSIX")


def test_a_held_lock_excludes_another_holder_of_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl.lock"
    a, b = LogLock(path, 5), LogLock(path, 0.05)
    with a.held(), pytest.raises(StorageError, match="timed out"), b.held():
        pass
    with b.held():  # released after the block
        pass
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_the_descriptor_stays_open_between_uses(tmp_path: Path) -> None:
    lock = LogLock(tmp_path / "s.lock", 5)
    with lock.held():
        first = lock._fd
    with lock.held():
        assert lock._fd == first
    lock.close()
    assert lock._fd is None


def test_a_replaced_lock_file_is_locked_anew(tmp_path: Path) -> None:
    path = tmp_path / "s.lock"
    old = LogLock(path, 0.05)
    with old.held():
        pass
    path.unlink()  # e.g. the session was deleted and written again under the same id
    new = LogLock(path, 5)
    # the old holder must not lock its stale descriptor while the new file is held
    with new.held(), pytest.raises(StorageError, match="timed out"), old.held():
        pass


def test_a_lock_file_renamed_over_is_locked_anew(tmp_path: Path) -> None:
    path = tmp_path / "s.lock"
    old = LogLock(path, 0.05)
    with old.held():
        pass
    (tmp_path / "new").write_bytes(b"")
    os.replace(tmp_path / "new", path)
    new = LogLock(path, 5)
    with new.held(), pytest.raises(StorageError, match="timed out"), old.held():
        pass


def test_a_lock_file_with_a_second_name_is_checked_by_its_name(tmp_path: Path) -> None:
    path = tmp_path / "s.lock"
    old = LogLock(path, 0.05)
    with old.held():
        pass
    os.link(path, tmp_path / "other")
    path.unlink()  # the file held open still has a name, but not the lock's
    new = LogLock(path, 5)
    with new.held(), pytest.raises(StorageError, match="timed out"), old.held():
        pass
    with old.held():  # locks the file there now
        assert os.fstat(old._fd or -1).st_ino == path.stat().st_ino


def test_acquire_and_release_pair_like_held(tmp_path: Path) -> None:
    path = tmp_path / "s.lock"
    a, b = LogLock(path, 5), LogLock(path, 0.05)
    a.acquire()
    with pytest.raises(StorageError, match="timed out"):
        b.acquire()
    a.release()
    b.acquire()  # a failed acquire left nothing held
    b.release()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_share_the_parents_lock(tmp_path: Path) -> None:
    path = tmp_path / "s.lock"
    lock = LogLock(path, 0.05)
    with lock.held():
        pid = os.fork()
        if pid == 0:  # child: the inherited descriptor must not count as holding the lock
            code = 1
            try:
                with lock.held():
                    code = 2
            except StorageError:
                code = 0
            os._exit(code)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
