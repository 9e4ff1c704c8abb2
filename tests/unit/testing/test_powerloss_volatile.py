"""The power-loss file system's rules without FUSE: VolatileFile over a plain backing file."""

from __future__ import annotations

from pathlib import Path

from orbitmq.testing.powerloss.volatile import PAGE, VolatileFile


def backing(tmp_path: Path, data: bytes = b"") -> Path:
    path = tmp_path / "f"
    path.write_bytes(data)
    return path


def test_writes_stay_in_memory_until_sync(tmp_path: Path) -> None:
    path = backing(tmp_path, b"durable")
    vf = VolatileFile(str(path))
    vf.write(3, b"XYZ" * 3000)  # spans pages, extends the file
    assert vf.read(0, 10) == b"durXYZXYZX"
    assert vf.size == 3 + 9000
    assert path.read_bytes() == b"durable"  # nothing reached the platter
    vf.sync()
    assert path.read_bytes() == b"dur" + b"XYZ" * 3000
    assert vf.unsynced_pages == 0
    vf.close()


def test_reads_mix_synced_and_unsynced_pages(tmp_path: Path) -> None:
    path = backing(tmp_path, bytes(range(256)) * 64)  # 4 pages
    vf = VolatileFile(str(path))
    vf.write(PAGE + 10, b"\xff\xff")
    data = vf.read(0, 4 * PAGE)
    assert data[: PAGE + 10] == (bytes(range(256)) * 64)[: PAGE + 10]
    assert data[PAGE + 10 : PAGE + 12] == b"\xff\xff"
    assert data[PAGE + 12 :] == (bytes(range(256)) * 64)[PAGE + 12 :]
    assert vf.read(4 * PAGE, 100) == b""  # past the end
    vf.close()


def test_truncate_is_durable_at_once_and_drops_pages_beyond(tmp_path: Path) -> None:
    path = backing(tmp_path)
    vf = VolatileFile(str(path))
    vf.truncate(3 * PAGE)
    assert path.stat().st_size == 3 * PAGE  # metadata: on the platter already
    vf.write(2 * PAGE, b"tail")
    vf.truncate(2 * PAGE + 2)
    assert vf.read(2 * PAGE, 10) == b"ta"
    vf.truncate(3 * PAGE)  # re-extended: zeros, not the old bytes
    assert vf.read(2 * PAGE, 4) == b"ta\0\0"
    vf.sync()
    assert path.read_bytes()[2 * PAGE : 2 * PAGE + 4] == b"ta\0\0"
    vf.close()
