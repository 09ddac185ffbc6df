"""The SparkSession the Spark engine runs in: where its configuration comes from, a master
that is down found in seconds, and the JVM's own output kept off stdout.

Configuration, from the lowest precedence to the highest (a key set by a higher source is
never changed by a lower one):

1. tieeval's defaults: ``local[*]``, no UI, no progress bars, 8 shuffle partitions, Arrow
   batches of 4096 rows (``--batch-rows`` sets them), Python workers reused; with a local
   master (``local``, ``local[N]``, ``local-cluster[...]``) or a master on a loopback
   address, Python workers running this interpreter and the driver bound to 127.0.0.1, so
   that it works offline;
   with any other master the driver's address is Spark's own choice (``SPARK_LOCAL_IP`` or
   the host's name), so that executors elsewhere can reach it;
2. ``spark-defaults.conf`` in ``SPARK_CONF_DIR`` (else ``SPARK_HOME/conf``), read by Spark
   itself; tieeval only reads which keys it sets;
3. the environment: ``PYSPARK_SUBMIT_ARGS`` (``--master``, ``--conf KEY=VALUE``, as
   pyspark reads them), then ``TIEEVAL_SPARK_MASTER`` for the master;
4. the command line: ``--spark-conf KEY=VALUE`` (repeatable; ``spark.master`` too).

Under ``spark-submit`` (or in a program that made its own session) the session it made is
used as it is; only ``--spark-conf`` keys (and ``--batch-rows``) are set on it, where Spark
allows a running session to change them.

Outside ``spark-submit`` tieeval launches the JVM itself, with its output (stdout and
stderr: log lines, Java's own warnings, the Python workers' stderr) written to an unnamed
temporary file, never onto this process's stdout or stderr: the last lines explain a failure
(:mod:`tieeval.engine.spark_errors`), and ``TIEEVAL_DEBUG=1`` (or a ``log4j2.properties``
of the user's in the configuration folder) passes them on to stderr.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import shlex
import shutil
import signal
import socket
import sys
import tempfile
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from tieeval.engine.spark_errors import JVM_OUTPUTS, mapped_errors
from tieeval.errors import ParameterError, TieevalError

__all__ = ["SparkUnavailable", "SparkSettings", "require", "session", "settings",
           "parse_conf", "read_defaults", "DEFAULT_BATCH_ROWS",
           "DEFAULT_SHUFFLE_PARTITIONS"]

DEFAULT_SHUFFLE_PARTITIONS = 8
DEFAULT_BATCH_ROWS = 4096
BATCH_KEY = "spark.sql.execution.arrow.maxRecordsPerBatch"
# seconds to wait for a master's port to answer before saying it is down (Spark itself
# retries for about 60 s, then asks nothing useful)
MASTER_PROBE_SECONDS = 5.0

# tieeval's defaults, used where no other source sets the key
_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": str(DEFAULT_SHUFFLE_PARTITIONS),
    BATCH_KEY: str(DEFAULT_BATCH_ROWS),
    "spark.python.worker.reuse": "true",
}
_LOOPBACK_DEFAULTS = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}

# the one Java warning every JVM of this Spark prints, before any logging starts
_JVM_NOISE = re.compile(r"^WARNING: Using incubator modules")

# Spark's log lines go to the captured output at level ERROR (a failure's reason is there)
_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""


class SparkUnavailable(TieevalError):
    """pyspark or Java is missing, or Spark cannot start (a master that is down): the Spark
    engine cannot run."""


def require() -> None:
    """Import pyspark, or explain in one line what is missing."""
    _quiet_pyspark_warnings()
    try:
        importlib.import_module("pyspark.sql")
    except ImportError:
        raise SparkUnavailable("the Spark engine needs pyspark: pip install 'tieeval[spark]'"
                               ) from None
    java_home = os.environ.get("JAVA_HOME")
    if not (shutil.which("java") or (java_home and os.path.exists(
            os.path.join(java_home, "bin", "java")))):
        raise SparkUnavailable("the Spark engine needs Java 17 or later: no java on PATH "
                               "and JAVA_HOME is not set")


def _quiet_pyspark_warnings() -> None:
    # pyspark warns, on import and per job, about pandas versions it has not certified;
    # tieeval uses no pandas. Under spark-submit the driver's stderr is merged into stdout,
    # where this line would land before the data.
    warnings.filterwarnings("ignore", message=".*PySpark does not yet fully support",
                            category=FutureWarning)


# ---------------------------------------------------------------------------------------
# the configuration

def parse_conf(items, what: str = "--spark-conf") -> dict[str, str]:
    """``KEY=VALUE`` strings as a dict (the last of a repeated key wins, as spark-submit's
    ``--conf``; a dict's items too); a malformed item is a :class:`ParameterError` naming
    it."""
    conf: dict[str, str] = {}
    for item in (items.items() if isinstance(items, dict) else items or ()):
        if isinstance(item, tuple):
            key, value = item
        else:
            key, sep, value = str(item).partition("=")
            if not sep:
                raise ParameterError(f"{what} {item!r}: expected KEY=VALUE, e.g. "
                                     "spark.sql.shuffle.partitions=200")
        key = key.strip()
        if not key.startswith("spark."):
            raise ParameterError(f"{what} {key}={value}: Spark's keys start with 'spark.' "
                                 "(see https://spark.apache.org/docs/latest/configuration.html)")
        conf[key] = value
    return conf


def conf_dir(environ=None) -> str | None:
    """The folder of ``spark-defaults.conf``: ``SPARK_CONF_DIR``, else ``SPARK_HOME/conf``
    (``SPARK_HOME`` defaults to the pyspark install, as pyspark finds it)."""
    environ = os.environ if environ is None else environ
    if environ.get("SPARK_CONF_DIR"):
        return environ["SPARK_CONF_DIR"]
    home = environ.get("SPARK_HOME")
    if not home:
        spec = importlib.util.find_spec("pyspark")
        if spec is None or spec.origin is None:
            return None
        home = os.path.dirname(spec.origin)
    return os.path.join(home, "conf")


def read_defaults(path: str) -> dict[str, str]:
    """The keys and values of a ``spark-defaults.conf`` (Java properties: ``key value``,
    ``key=value`` or ``key: value``; ``#`` and ``!`` start comments). A missing file is
    empty."""
    conf: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        return conf
    except OSError as exc:
        raise SparkUnavailable(f"{path}: cannot read Spark's defaults: "
                               f"{exc.strerror or exc}") from None
    for line in lines:
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        match = re.match(r"^(\S+?)\s*(?:[=:]\s*|\s+)(.*)$", line)
        if match:
            conf[match.group(1)] = match.group(2).strip()
        else:
            conf[line] = ""
    return conf


def _submit_args(text: str) -> tuple[str | None, dict[str, str]]:
    """``--master`` and the ``--conf`` pairs of ``PYSPARK_SUBMIT_ARGS``."""
    try:
        words = shlex.split(text)
    except ValueError:
        return None, {}
    master, conf = None, {}
    for i, word in enumerate(words):
        value = words[i + 1] if i + 1 < len(words) else ""
        if word == "--master":
            master = value
        elif word.startswith("--master="):
            master = word.split("=", 1)[1]
        elif word in ("--conf", "-c") and "=" in value:
            key, _, val = value.partition("=")
            conf[key] = val
    return master, conf


@dataclass(frozen=True)
class SparkSettings:
    """What a new session is started with: ``conf`` (passed to Spark, highest precedence
    only: keys a lower source sets are left to it), ``master`` and where it came from,
    ``given``: every key some source sets (so tieeval's defaults stay off them)."""

    master: str
    master_source: str
    conf: dict[str, str] = field(default_factory=dict)
    given: frozenset = frozenset()

    @property
    def loopback(self) -> bool:
        return is_loopback_master(self.master)


def is_loopback_master(master: str) -> bool:
    """A local master, or one whose every host is a loopback address."""
    if master.startswith("local"):
        return True
    hosts = master_hosts(master)
    return bool(hosts) and all(host in ("localhost", "::1") or host.startswith("127.")
                               for host, _ in hosts)


def master_hosts(master: str) -> list[tuple[str, int]]:
    """The (host, port) pairs a master URL names: ``spark://h1:7077,h2:7077`` (the port
    defaults to 7077), ``k8s://https://host:port`` (443); none for ``yarn`` or ``local``."""
    if master.startswith("spark://"):
        out: list[tuple[str, int]] = []
        for part in master[len("spark://"):].split(","):
            host, _, number = part.rpartition(":") if ":" in part else (part, "", "7077")
            try:
                out.append((host.strip("[]"), int(number or 7077)))
            except ValueError:
                continue
        return out
    if master.startswith("k8s://"):
        rest = master[len("k8s://"):]
        url = urlparse(rest if "://" in rest else "https://" + rest)
        if url.hostname:
            try:
                given = url.port
            except ValueError:
                given = None
            return [(url.hostname, given or (80 if url.scheme == "http" else 443))]
    return []


def settings(conf=(), environ=None) -> SparkSettings:
    """The configuration of a new session (see the module doc): ``conf`` from the command
    line (``KEY=VALUE`` items or a dict), ``environ`` the environment (this process's)."""
    environ = os.environ if environ is None else environ
    cli = parse_conf(conf)
    folder = conf_dir(environ)
    path = os.path.join(folder, "spark-defaults.conf") if folder else None
    defaults = read_defaults(path) if path else {}
    submit_master, submit_conf = _submit_args(environ.get("PYSPARK_SUBMIT_ARGS", ""))
    given = set(defaults) | set(submit_conf) | set(cli)
    # the master of the highest source that sets it
    master, source = next((m, s) for m, s in (
        (cli.get("spark.master"), "--spark-conf spark.master"),
        (environ.get("TIEEVAL_SPARK_MASTER") or None, "TIEEVAL_SPARK_MASTER"),
        (submit_master or None, "PYSPARK_SUBMIT_ARGS"),
        (submit_conf.get("spark.master"), "PYSPARK_SUBMIT_ARGS"),
        (defaults.get("spark.master"), str(path)),
        ("local[*]", "tieeval's default")) if m is not None)
    chosen = {key: value for key, value in _DEFAULTS.items() if key not in given}
    if is_loopback_master(master):
        chosen.update({k: v for k, v in _LOOPBACK_DEFAULTS.items() if k not in given})
    chosen.update(cli)
    chosen["spark.master"] = master
    return SparkSettings(master, source, chosen, frozenset(given | {"spark.master"}))


def probe_master(spark_settings: SparkSettings, timeout: float = MASTER_PROBE_SECONDS) -> None:
    """Refuse in seconds a master whose port does not answer (Spark would retry for a
    minute and then not name it); ``yarn`` and ``local`` masters are not probed."""
    hosts = master_hosts(spark_settings.master)
    if not hosts:
        return
    reasons = []
    for host, port in hosts:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except OSError as exc:
            reasons.append(getattr(exc, "strerror", None) or str(exc) or type(exc).__name__)
    raise SparkUnavailable(f"cannot reach the Spark master {spark_settings.master} "
                           f"({reasons[-1]}; the master is set by "
                           f"{spark_settings.master_source}): is it running?")


# ---------------------------------------------------------------------------------------
# the JVM's output

class JvmOutput:
    """Where the launched JVM's stdout and stderr go: an unnamed temporary file (a file,
    not a pipe: the JVM never blocks on it, however much it prints before tieeval could
    read a pipe, as Ivy does resolving ``spark.jars.packages``), whose last lines explain a
    failure. Spark's log is at level ERROR there, so it stays small."""

    def __init__(self, keep_bytes: int = 64 * 1024):
        self.file = tempfile.TemporaryFile(prefix="tieeval-spark-jvm-")
        self._keep = keep_bytes

    def tail(self, n: int = 400) -> list[str]:
        try:
            size = os.fstat(self.file.fileno()).st_size
            data = os.pread(self.file.fileno(), self._keep, max(0, size - self._keep))
        except (OSError, ValueError):
            return []
        lines = data.decode("utf-8", "replace").splitlines()
        return [line for line in lines if not _JVM_NOISE.match(line)][-n:]


def _launch(spark_settings: SparkSettings, app_name: str):
    """Start the JVM with its output captured, then the SparkContext on it."""
    import subprocess

    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    conf = dict(spark_settings.conf)
    folder = conf_dir()
    own_log4j = folder is not None and os.path.exists(os.path.join(folder, "log4j2.properties"))
    tmp = None
    if (not own_log4j and "spark.driver.extraJavaOptions" not in spark_settings.given
            and SparkContext._gateway is None):
        tmp = tempfile.mkdtemp(prefix="tieeval-spark-")
        config = os.path.join(tmp, "log4j2.properties")
        with open(config, "w", encoding="utf-8") as handle:
            handle.write(_LOG4J2)
        conf["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile=file:{config}"
    spark_conf = SparkConf(loadDefaults=False).setAppName(app_name)
    for key, value in conf.items():
        spark_conf.set(key, value)
    if SparkContext._gateway is not None:
        # this process's JVM outlives a stopped session: pyspark starts the next context on
        # it (a second JVM would be left unused), so only the context's settings apply
        return SparkContext(conf=spark_conf)
    try:
        streams: dict[str, Any]
        # TIEEVAL_DEBUG: the JVM's output as it comes, on stderr (never stdout)
        if os.environ.get("TIEEVAL_DEBUG") or own_log4j:
            streams = {"stdout": 2, "stderr": subprocess.STDOUT}
        else:
            output = JvmOutput()
            JVM_OUTPUTS.append(output)  # before the launch: a JVM that exits at once says why
            streams = {"stdout": output.file, "stderr": subprocess.STDOUT}
        gateway = launch_gateway(spark_conf, popen_kwargs=streams)
        return SparkContext(conf=spark_conf, gateway=gateway)
    finally:
        if tmp is not None:  # read by the JVM as it started
            shutil.rmtree(tmp, ignore_errors=True)


def session(app_name: str = "tieeval", conf=(), batch_rows: int | None = None):
    """The active SparkSession, or a new one configured as the module doc says (``conf``:
    the ``--spark-conf`` items, ``KEY=VALUE`` or a dict; ``batch_rows``: ``--batch-rows``)."""
    require()
    cli = parse_conf(conf)
    from pyspark.sql import SparkSession
    spark = SparkSession.getActiveSession()
    if spark is None and "PYSPARK_GATEWAY_PORT" in os.environ:
        # under spark-submit: the cluster's settings as given, and the command line's
        builder = SparkSession.builder.appName(app_name)
        for key, value in cli.items():
            builder = builder.config(key, value)
        with mapped_errors(master=os.environ.get("MASTER")):
            spark = builder.getOrCreate()
    elif spark is None:
        spark_settings = settings(cli)
        probe_master(spark_settings)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        if spark_settings.loopback:
            # the executors are on this machine: they run this interpreter; elsewhere they
            # run the cluster's Python (PYSPARK_PYTHON, spark.pyspark.python)
            if "spark.pyspark.python" not in spark_settings.given:
                os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        interrupt = signal.getsignal(signal.SIGINT)
        with mapped_errors(master=spark_settings.master, source=spark_settings.master_source):
            _launch(spark_settings, app_name)
            spark = SparkSession.builder.getOrCreate()  # on the context just started
        _keep_interrupt_handler(interrupt)
        cli = {}  # given at launch
    else:
        with mapped_errors():
            for key, value in cli.items():
                try:
                    spark.conf.set(key, value)
                except Exception as exc:  # a static key: only a new session takes it
                    text = str(exc).strip().splitlines()
                    raise ParameterError(
                        f"--spark-conf {key}={value}: the running Spark session cannot change "
                        f"it ({text[0] if text else type(exc).__name__}); give it to "
                        "spark-submit --conf instead") from None
    with mapped_errors():
        spark.sparkContext.setLogLevel("ERROR")
        if batch_rows is not None and BATCH_KEY not in cli:
            spark.conf.set(BATCH_KEY, str(int(batch_rows)))
    return spark


def _keep_interrupt_handler(previous) -> None:
    """Put tieeval's command-line Ctrl-C handler back over the one the SparkContext
    installs. Spark's handler cancels the jobs through the gateway from inside the signal,
    while the main thread waits on that same gateway: Py4J then logs two tracebacks before
    the interrupt ends the command. The command line's handler only raises
    KeyboardInterrupt; the JVM, and its jobs, end with this process. Any other handler (a
    program's, a notebook's) is left to Spark."""
    if getattr(previous, "__module__", "").startswith("tieeval.") and \
            threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, previous)
