"""Starting servers the way a newcomer does: a second instance, a store in use, a store path that is a
file, a crash then a restart. Real `orbitmq serve` / `orbitmq broker` processes; every failure must be
one line on stderr naming what to fix, with exit code 1 (2 for bad arguments), no traceback."""

from __future__ import annotations

import random
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from orbitmq.serve import derived_broker_port
from orbitmq.testing import start_process, start_serve

HOST = "127.0.0.1"


def run_cli(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orbitmq", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


def assert_one_line_error(done: subprocess.CompletedProcess[str], code: int, *fragments: str) -> str:
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("orbitmq ")]
    assert len(lines) == 1, done.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def free_namesrv_port_with_free_derived_ports() -> tuple[int, int]:
    rng = random.Random()
    for _ in range(500):
        port = rng.randint(9100, 15000)
        broker = derived_broker_port(port)
        if is_free(port) and is_free(broker) and is_free(broker + 1):
            return port, broker
    raise RuntimeError("no free port triple found")


def test_derived_broker_port_rule() -> None:
    assert derived_broker_port(9876) == 10911
    assert derived_broker_port(9877) == 10921
    assert derived_broker_port(15338) == 65531  # the last nameserver port the rule serves
    assert derived_broker_port(0) == 0
    for outside in (15339, 20000, 41793, 65535, 8000, 1):  # past 65534, or below 1024: a free port
        assert derived_broker_port(outside) == 0


def free_port_above(low: int) -> int:
    rng = random.Random()
    for _ in range(500):
        port = rng.randint(low, 65000)
        if is_free(port):
            return port
    raise RuntimeError(f"no free port above {low}")


def serve_on(port: int, tmp_path: Path) -> tuple[int, str]:
    """Run `orbitmq serve --port PORT` until it listens, stop it: the broker port and stderr."""
    server = start_process(
        "serve",
        ["--port", str(port), "--store", str(tmp_path / "store")],
        tmp_path,
        name="serve",
        expect=("namesrv", "broker"),
        primary="namesrv",
    )
    try:
        assert server.namesrv_addr == f"{HOST}:{port}"
        broker_port = int(server.broker_addr.rpartition(":")[2])
    finally:
        assert server.stop() == 0
    return broker_port, server.stderr_path.read_text()


def test_any_nameserver_port_works_and_says_which_broker_port_it_took(tmp_path: Path) -> None:
    port = free_port_above(15339)
    broker_port, err = serve_on(port, tmp_path)
    assert 0 < broker_port < 65536 and broker_port != port
    assert f"the broker takes a free port: --port {port} gives {10911 + 10 * (port - 9876)}" in err
    assert "--broker-port" in err


def test_port_out_of_range_is_refused_by_the_flag(tmp_path: Path) -> None:
    done = run_cli("serve", "--port", "70000", "--store", str(tmp_path / "s"), cwd=tmp_path)
    assert done.returncode == 2 and "70000 is not a port (0-65535" in done.stderr, done.stderr


def test_second_instance_on_another_port_moves_its_broker(tmp_path: Path) -> None:
    port, broker = free_namesrv_port_with_free_derived_ports()
    broker_port, err = serve_on(port, tmp_path)
    assert broker_port == broker
    assert f"broker port {broker} follows --port {port}" in err and "--broker-port" in err


def test_busy_ports_name_the_flag(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind((HOST, 0))
        busy.listen()
        taken = busy.getsockname()[1]
        done = run_cli(
            "serve", "--port", "0", "--broker-port", str(taken), "--store", str(tmp_path / "s2"), cwd=tmp_path
        )
    assert_one_line_error(done, 1, f"broker port {taken} is already in use", "--broker-port")
    with socket.socket() as busy:
        busy.bind((HOST, 0))
        busy.listen()
        taken = busy.getsockname()[1]
        for command in (["serve", "--broker-port", "0", "--store", str(tmp_path / "s3")], ["namesrv"]):
            done = run_cli(*command, "--port", str(taken), cwd=tmp_path)
            assert_one_line_error(done, 1, f"nameserver port {taken} is already in use", "--port")


def test_store_in_use_names_the_store_and_the_holder(tmp_path: Path) -> None:
    store = tmp_path / "store"
    first = start_serve(tmp_path / "first", storePathRootDir=store)
    try:
        for verb in ("serve", "broker"):
            done = run_cli(verb, "--port", "0", "--store", str(store), cwd=tmp_path)
            assert_one_line_error(done, 1, f"store directory {store} is in use by process {first.pid}")
    finally:
        assert first.stop() == 0
    # positive control: once the first one stopped, the same command starts
    second = start_process(
        "serve",
        ["--port", "0", "--store", str(store)],
        tmp_path,
        name="second",
        expect=("broker",),
        primary="broker",
    )
    assert second.stop() == 0


def test_store_path_that_is_a_file_or_cannot_be_created(tmp_path: Path) -> None:
    a_file = tmp_path / "not-a-dir"
    a_file.write_text("x")
    done = run_cli("serve", "--port", "0", "--store", str(a_file), cwd=tmp_path)
    assert_one_line_error(done, 1, f"store directory {a_file} is a file")
    done = run_cli("broker", "--port", "0", "--store", str(a_file / "below"), cwd=tmp_path)
    assert_one_line_error(done, 1, f"store directory {a_file / 'below'} cannot be created")


def test_startup_says_how_recovery_went_and_stop_is_logged(tmp_path: Path) -> None:
    store = tmp_path / "store"
    first = start_serve(tmp_path / "a", storePathRootDir=store)
    _send_one(first.address)  # something to recover
    assert first.stop() == 0
    err = first.stderr_path.read_text()
    assert f"store {store} created: a new, empty commit log" in err and "recovered" not in err
    assert f"store {store} stopped cleanly" in err

    crashed = start_serve(tmp_path / "b", storePathRootDir=store)
    err = crashed.stderr_path.read_text()
    crashed.kill()
    assert f"store {store} recovered in" in err and "after a normal stop" in err
    again = start_serve(tmp_path / "c", storePathRootDir=store)
    assert again.stop() == 0
    err = again.stderr_path.read_text()
    assert "WARNING" in err and f"store {store} recovered in" in err and "after a crash" in err


@pytest.mark.parametrize("verb", ["serve", "broker", "namesrv"])
def test_bad_config_value_is_one_line_and_a_nonzero_exit(verb: str, tmp_path: Path) -> None:
    conf = tmp_path / "bad.conf"
    if verb == "namesrv":
        conf.write_text("# namesrv\nlistenPort = 98_76\n")
        expected = "listenPort='98_76': expected an integer"
    else:
        conf.write_text(f"storePathRootDir={tmp_path / 'store'}\nflushDiskType=SYNCFLUSH\n")
        expected = "flushDiskType='SYNCFLUSH': not one of ASYNC_FLUSH, SYNC_FLUSH"
    done = run_cli(verb, "-c", str(conf), "--port", "0", cwd=tmp_path)
    assert_one_line_error(done, 2, expected)


def test_unknown_key_is_a_warning_and_the_server_starts(tmp_path: Path) -> None:
    server = start_serve(tmp_path, brokerRolee="SLAVE")
    assert server.stop() == 0
    err = server.stderr_path.read_text()
    assert "unknown key brokerRolee (did you mean brokerRole?), ignored" in err


def _send_one(namesrv: str) -> None:
    from orbitmq import Message, Producer

    producer = Producer("start-errors", namesrv)
    producer.start()
    try:
        producer.send(Message.create("recovery-topic", "one"))
    finally:
        producer.shutdown()
