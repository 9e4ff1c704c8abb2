"""An installed Apache RocketMQ 4.9.x as a bench peer: find it, start its namesrv and broker on 127.0.0.1.

Used only when the user points at an installation (`--rocketmq-home DIR` or ORBITMQ_BENCH_ROCKETMQ_HOME);
nothing in the repository builds or ships it. Servers keep their store and logs in the bench's work
dir and are stopped by PID.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from orbitmq.bench.driver import DriverUnavailable, ServerHandle, free_port, wait_for_port

ENV_HOME = "ORBITMQ_BENCH_ROCKETMQ_HOME"
NAMESRV_MAIN = "org.apache.rocketmq.namesrv.NamesrvStartup"
BROKER_MAIN = "org.apache.rocketmq.broker.BrokerStartup"
PRODUCER_MAIN = "org.apache.rocketmq.example.benchmark.Producer"
REQUIRED_CLASSES = (NAMESRV_MAIN, BROKER_MAIN, PRODUCER_MAIN)
REQUIRED_CONF = ("logback_namesrv.xml", "logback_broker.xml")
# RocketMQ 4.x reaches into NIO internals (direct-buffer cleaning, mmap); Java 9+ needs these opened.
# They go in JDK_JAVA_OPTIONS, which only Java 9+ launchers read, so a Java 8 runtime works unchanged.
JAVA9_OPENS = (
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
)
SERVER_HEAP = ("-Xms512m", "-Xmx512m", "-Xmn256m")


@dataclass(frozen=True, slots=True)
class RocketMQInstall:
    home: Path
    classpath: tuple[str, ...]
    java: str

    def java_env(self, user_home: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "JAVA_TOOL_OPTIONS"}
        env["ROCKETMQ_HOME"] = str(self.home)
        env["JDK_JAVA_OPTIONS"] = " ".join(JAVA9_OPENS)
        env["HOME"] = str(user_home)
        return env

    def java_command(self, main: str, jvm: Sequence[str], user_home: Path, args: Sequence[str]) -> list[str]:
        return [
            self.java,
            *jvm,
            f"-Duser.home={user_home}",
            f"-Drocketmq.home.dir={self.home}",
            "-cp",
            os.pathsep.join(self.classpath),
            main,
            *args,
        ]


def configured_home(flag: Path | None, environ: Mapping[str, str] = os.environ) -> Path | None:
    """--rocketmq-home, else ORBITMQ_BENCH_ROCKETMQ_HOME, else None (the peer is skipped)."""
    if flag is not None:
        return flag
    value = environ.get(ENV_HOME, "").strip()
    return Path(value) if value else None


def class_entry(name: str) -> str:
    return name.replace(".", "/") + ".class"


def classpath_of(home: Path) -> list[str]:
    """DIR/classes (if present) then DIR/lib/*.jar in name order."""
    entries: list[str] = []
    if (home / "classes").is_dir():
        entries.append(str(home / "classes"))
    lib = home / "lib"
    if lib.is_dir():
        entries += sorted(str(p) for p in lib.glob("*.jar"))
    return entries


def missing_classes(classpath: Sequence[str], names: Sequence[str]) -> list[str]:
    """The class names in `names` that no classpath entry holds."""
    wanted = {class_entry(n): n for n in names}
    for entry in classpath:
        path = Path(entry)
        if path.is_dir():
            found = [e for e in wanted if (path / e).is_file()]
        else:
            try:
                with zipfile.ZipFile(path) as jar:
                    members = set(jar.namelist())
            except (OSError, zipfile.BadZipFile):
                continue
            found = [e for e in wanted if e in members]
        for e in found:
            del wanted[e]
        if not wanted:
            break
    return sorted(wanted.values())


def find_java(environ: Mapping[str, str] = os.environ) -> str | None:
    java_home = environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    return shutil.which("java")


def find_install(home: Path) -> RocketMQInstall:
    """The installation at `home`, or DriverUnavailable saying in one line what is missing.

    `home` is laid out like Apache's binary distribution:

      DIR/lib/*.jar      every jar: rocketmq-namesrv, -broker, -client, -example (the benchmark Producer)
                         and their dependencies (netty, fastjson, logback, ...)
      DIR/classes/       optional: a directory of compiled classes, put before the jars on the classpath
      DIR/conf/          logback_namesrv.xml and logback_broker.xml (NamesrvStartup/BrokerStartup read
                         ROCKETMQ_HOME/conf/ for their logging set-up)

    The bench runs `java` itself (JAVA_HOME/bin/java, else the one on PATH) with a small heap rather than
    bin/mqnamesrv and bin/mqbroker, whose default heaps (4-8 GiB) do not fit a small box.
    """
    if not home.is_dir():
        raise DriverUnavailable(f"Apache RocketMQ home {home} is not a directory")
    classpath = classpath_of(home)
    if not classpath:
        raise DriverUnavailable(f"Apache RocketMQ home {home} has no lib/*.jar (nor classes/)")
    missing = missing_classes(classpath, REQUIRED_CLASSES)
    if missing:
        raise DriverUnavailable(f"Apache RocketMQ home {home} lacks {', '.join(missing)}")
    absent = [c for c in REQUIRED_CONF if not (home / "conf" / c).is_file()]
    if absent:
        raise DriverUnavailable(f"Apache RocketMQ home {home} lacks conf/{', conf/'.join(absent)}")
    java = find_java()
    if java is None:
        raise DriverUnavailable("no java (set JAVA_HOME or put java on PATH)")
    return RocketMQInstall(home, tuple(classpath), java)


def properties_text(props: Mapping[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in props.items())


def broker_properties(
    namesrv: str, port: int, store: Path, flush_disk_type: str, name: str = "bench-a"
) -> dict[str, str]:
    """broker.conf for a single master on 127.0.0.1 with its store in `store`."""
    return {
        "brokerClusterName": "DefaultCluster",
        "brokerName": name,
        "brokerId": "0",
        "brokerIP1": "127.0.0.1",
        "listenPort": str(port),
        "namesrvAddr": namesrv,
        "storePathRootDir": str(store),
        "storePathCommitLog": str(store / "commitlog"),
        "brokerRole": "ASYNC_MASTER",
        "flushDiskType": flush_disk_type,
        "autoCreateTopicEnable": "true",
    }


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def broker_port(attempts: int = 20) -> int:
    """A listenPort whose siblings are free too: the broker also binds listenPort-2 (its "VIP" channel)
    and listenPort+1 (HA). RocketMQ 4.x binds the wildcard address, so that is what is checked."""
    for _ in range(attempts):
        port = free_port()
        if port > 1026 and all(_bindable(p) for p in (port - 2, port + 1)):
            return port
    raise DriverUnavailable("no free port triple for the Apache RocketMQ broker")


def _stop(proc: subprocess.Popen[bytes], timeout: float = 15.0) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)  # both run their shutdown hooks (flush, unregister) on SIGTERM
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout)


def _spawn(command: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=log.parent)


def start_apache(
    install: RocketMQInstall, workdir: Path, flush_disk_type: str, timeout: float = 60.0
) -> ServerHandle:
    """Start NamesrvStartup and BrokerStartup; the handle's address is the nameserver's, its pids are
    the broker's then the nameserver's. The broker's registration is awaited by the caller."""
    workdir.mkdir(parents=True, exist_ok=True)
    user_home = workdir / "home"
    user_home.mkdir(exist_ok=True)
    env = install.java_env(user_home)
    ns_port = free_port()
    (workdir / "namesrv.conf").write_text(properties_text({"listenPort": str(ns_port)}))
    namesrv = _spawn(
        install.java_command(
            NAMESRV_MAIN, ("-Xms256m", "-Xmx256m"), user_home, ["-c", str(workdir / "namesrv.conf")]
        ),
        workdir / "namesrv.out",
        env,
    )
    broker: subprocess.Popen[bytes] | None = None
    try:
        wait_for_port("127.0.0.1", ns_port, timeout, namesrv)
        address = f"127.0.0.1:{ns_port}"
        port = broker_port()
        props = broker_properties(address, port, workdir / "store", flush_disk_type)
        (workdir / "broker.conf").write_text(properties_text(props))
        broker = _spawn(
            install.java_command(BROKER_MAIN, SERVER_HEAP, user_home, ["-c", str(workdir / "broker.conf")]),
            workdir / "broker.out",
            env,
        )
        wait_for_port("127.0.0.1", port, timeout, broker)
    except BaseException as exc:
        if broker is not None:
            _stop(broker)
        _stop(namesrv)
        tail = ""
        for name in ("broker.out", "namesrv.out"):
            path = workdir / name
            if path.is_file():
                tail = path.read_text(errors="replace").strip()[-300:] or tail
        if isinstance(exc, DriverUnavailable):
            raise DriverUnavailable(f"Apache RocketMQ did not start: {exc}; {tail}") from None
        raise
    started = broker

    def stop() -> None:
        _stop(started)
        _stop(namesrv)

    def kill() -> None:
        for proc in (started, namesrv):
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    return ServerHandle("apache-rmq", address, broker, workdir, [namesrv.pid], stopper=stop, killer=kill)
