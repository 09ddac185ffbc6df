"""Spark's failures as one line each: the one place Py4J and Spark exceptions are mapped.

A Spark job fails with a Java exception wrapped by Py4J (``Py4JJavaError``), one pyspark
converts (``AnalysisException``, ``PythonException``, ...), or a dead gateway
(``Py4JNetworkError``); its text is 70 to 190 lines of Java trace, and the useful part is
one ``Caused by:`` line among them. :func:`describe` turns such an exception into one
sentence naming the file, the URL or the limit, and :func:`mapped_errors` raises it as a
:class:`SparkFailure` (an input error: exit 2 on the command line). ``TIEEVAL_DEBUG=1`` keeps
Spark's own exception and trace.

Nothing here imports pyspark: exceptions are recognised by their module and their text, so
this module loads without it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

from tieeval.errors import TieevalError

__all__ = ["SparkFailure", "describe", "is_spark_exception", "mapped_errors", "jvm_output",
           "JVM_OUTPUTS"]

# the launched JVM's output readers (tieeval.engine.spark_session.JvmOutput), newest last:
# the last lines a JVM printed explain a failure its exception does not (a master that
# never answered)
JVM_OUTPUTS: list = []


def jvm_output() -> list[str]:
    """The last lines the launched JVM printed (none under spark-submit)."""
    return JVM_OUTPUTS[-1].tail() if JVM_OUTPUTS else []


class SparkFailure(TieevalError):
    """Spark could not do what was asked (a file it cannot read, a cluster it cannot
    reach, a limit reached); the message says which, in one line."""


_CONNECTORS = {  # scheme: (connector, the package that provides it)
    "s3a": ("S3 (hadoop-aws)", "org.apache.hadoop:hadoop-aws:{hadoop}"),
    **dict.fromkeys(("s3", "s3n"), ("S3 (hadoop-aws, as s3a://)",
                                    "org.apache.hadoop:hadoop-aws:{hadoop}")),
    "gs": ("Google Cloud Storage (gcs-connector)",
           "com.google.cloud.bigdataoss:gcs-connector:VERSION (and spark.hadoop.fs.gs.impl="
           "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem)"),
    **dict.fromkeys(("abfs", "abfss", "wasb", "wasbs"),
                    ("Azure (hadoop-azure)", "org.apache.hadoop:hadoop-azure:{hadoop}")),
}
_CONNECTOR_CLASSES = {"org.apache.hadoop.fs.s3a": "s3a", "org.apache.hadoop.fs.gs": "gs",
                      "com.google.cloud.hadoop.fs.gcs": "gs",
                      "org.apache.hadoop.fs.azurebfs": "abfs"}

_CAUSE = re.compile(r"^(?:Caused by: |: )?((?:[a-z]\w*\.)+[A-Z][\w$]*(?:Exception|Error)"
                    r"|[A-Z]\w*(?:Exception|Error))(?:: (.*))?$")
_FILE = r"((?:file|hdfs|s3a?|s3n|gs|abfss?|wasbs?|viewfs|dbfs|webhdfs):/[^\s,;'\"]+|/[^\s,;'\"]+)"
_MAX_REASON = 240
# the JVM's closing words after the line that says what was wrong
_GENERIC_JVM_EXIT = re.compile(r"Could not create the Java Virtual Machine|A fatal exception "
                               r"has occurred|^\s*at |^\s*\.\.\. \d+ more")


def is_spark_exception(exc: BaseException) -> bool:
    """Whether ``exc`` comes from Py4J or pyspark (not from tieeval's own code)."""
    module = type(exc).__module__ or ""
    return module.startswith(("py4j", "pyspark"))


def _text(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # the JVM is gone: its exception cannot be printed
        text = ""
    return f"{type(exc).__name__}: {text}"


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_REASON else text[:_MAX_REASON - 3] + "..."


def _root(text: str) -> str:
    """The innermost cause, as ``Class: message`` on one line: the last such line of a
    Java or Python trace (but a Py4JJavaError or SparkException without a message)."""
    matches = [_CAUSE.match(line.strip()) for line in text.splitlines()]
    causes = [(m.group(1).rsplit(".", 1)[-1], (m.group(2) or "").strip()) for m in matches if m]
    causes = [c for c in causes if c[0] not in ("Py4JJavaError", "SparkException") or c[1]]
    if not causes:
        first = next((line for line in text.splitlines() if line.strip()), "")
        return _short(first)
    name, message = causes[-1]
    return _short(f"{name}: {message}" if message else name)


def _hadoop_version() -> str:
    """The Hadoop version of the running Spark (a connector must match it), if known."""
    try:
        from pyspark import SparkContext
        jvm = SparkContext._jvm
        if jvm is not None:
            return str(jvm.org.apache.hadoop.util.VersionInfo.getVersion())
    except Exception:
        pass
    return "<Spark's Hadoop version>"


def _file_in(text: str, *patterns: str) -> str | None:
    for pattern in patterns:
        match = re.search(pattern.replace("FILE", _FILE), text)
        if match:
            return match.group(1).rstrip(".")
    return None


def describe(exc: BaseException, path: str | None = None, master: str | None = None,
             source: str | None = None, log: list[str] | tuple = ()) -> str | None:
    """One line for a Spark failure, or None when ``exc`` is none of Spark's.

    ``path``: the input being read; ``master`` and ``source``: the master URL and what set
    it; ``log``: the JVM's last output lines (a master that never answered says so only
    there)."""
    if isinstance(exc, TieevalError):
        return None
    if not is_spark_exception(exc) and not isinstance(exc, (ConnectionError, EOFError)):
        return None
    text = _text(exc)
    joined = text + "\n" + "\n".join(log)
    where = f"{path}: " if path else ""

    # a file system Spark has no connector for
    scheme = None
    if match := re.search(r'No FileSystem for scheme "?(\w+)"?', text):
        scheme = match.group(1)
    elif match := re.search(r"ClassNotFoundException: Class (\S+FileSystem) not found", text):
        given = re.match(r"^(\w+)://", path or "")
        scheme = given.group(1).lower() if given else next(
            (value for name, value in _CONNECTOR_CLASSES.items()
             if match.group(1).startswith(name)), "this")
    if scheme is not None:
        connector, package = _CONNECTORS.get(scheme, (f"{scheme}://", None))
        hint = (f"--spark-conf spark.jars.packages="
                f"{package.format(hadoop=_hadoop_version())}" if package else
                "add the connector's jar (spark.jars.packages)")
        return (f"{where}this Spark cannot read {scheme}:// paths: the {connector} "
                f"connector is not installed; add it, e.g. {hint} (see docs/scale.md)")

    # a master that never answered
    if "All masters are unresponsive" in joined or "Failed to connect to master" in joined:
        shown = master or "(spark.master)"
        set_by = f"; the master is set by {source}" if source else ""
        return f"cannot reach the Spark master {shown} (all masters are unresponsive{set_by})"

    # a name node, an object store or another host that cannot be reached
    match = re.search(r"Call From \S+ to (\S+?) failed on (?:connection exception|socket "
                      r"timeout exception)[^;]*?(Connection refused|timed out|No route to "
                      r"host|Network is unreachable)?[;\n]", text)
    if match:
        reason = match.group(2) or "connection failed"
        return f"{where}cannot reach {match.group(1)} ({reason})"
    match = re.search(r"UnknownHostException: ([^\s:]+)", text)
    if match:
        return f"{where}unknown host {match.group(1)} (the name does not resolve)"

    # memory
    match = re.search(r"OutOfMemoryError: ([^\n]+)", text)
    if match:
        return (f"{where}Spark's JVM ran out of memory ({_short(match.group(1))}): raise "
                "spark.driver.memory or spark.executor.memory (--spark-conf KEY=VALUE), or "
                "lower --batch-rows")
    if re.search(r"Container killed by YARN for exceeding|exceeding memory limits|OOMKilled|"
                 r"exit (?:code|status):? 137", text, re.IGNORECASE):
        return (f"{where}a Spark executor was killed for using more memory than its container "
                "allows (the Python workers' memory counts too): raise "
                "spark.executor.memoryOverhead or spark.executor.pyspark.memory "
                "(--spark-conf KEY=VALUE), or lower --batch-rows")
    if re.search(r"^\s*MemoryError\b", text, re.MULTILINE):
        return (f"{where}a Spark Python worker ran out of memory: raise "
                "spark.executor.pyspark.memory or spark.executor.memoryOverhead "
                "(--spark-conf KEY=VALUE), or lower --batch-rows")

    # a file that went away, or that Spark cannot read
    if re.search(r"PATH_NOT_FOUND|Path does not exist", text):
        name = _file_in(text, r"Path does not exist: FILE") or path or "the input"
        return f"{name}: no such file or folder"
    if re.search(r"FILE_NOT_EXIST|FileNotFoundException|File does not exist", text):
        name = _file_in(text, r"reading file FILE", r"File FILE does not exist",
                        r"FileNotFoundException: (?:File )?FILE") or path or "a file"
        return (f"{name}: the file does not exist (was it deleted or moved while Spark read "
                "it?)")
    if re.search(r"FAILED_READ_FILE|CANNOT_READ_FILE_FOOTER|Encountered error while reading "
                 r"file|ParquetDecodingException|is not a Parquet file|Could not read footer|"
                 r"CORRUPTED|Malformed|checksum", text, re.IGNORECASE):
        name = _file_in(text, r"reading file FILE", r"in file FILE",
                        r"Could not read footer for file[^:]*: FILE", r"FILE is not a Parquet",
                        r"file FILE") or path or "the input"
        return f"{name}: Spark could not read the file ({_root(text)})"

    # the JVM itself
    if ("JAVA_GATEWAY_EXITED" in text or "Py4JNetworkError" in text
            or "Answer from Java side is empty" in text
            or isinstance(exc, (ConnectionError, EOFError))):
        last = next((line for line in reversed(log) if line.strip()
                     and not _GENERIC_JVM_EXIT.search(line)), None)
        return ("Spark's JVM stopped" + (f" ({_short(last)})" if last else "")
                + "; is Java 17 or later installed, and is the configuration valid?")
    return f"{where}Spark failed ({_root(text)}); rerun with TIEEVAL_DEBUG=1 for Spark's trace"


@contextmanager
def mapped_errors(path: str | None = None, master: str | None = None,
                  source: str | None = None) -> Iterator[None]:
    """Run a block that calls Spark: its failures become one-line :class:`SparkFailure`
    errors (``TIEEVAL_DEBUG=1``: Spark's own exception, with its trace)."""
    try:
        yield
    except SparkFailure:
        raise
    except Exception as exc:
        if os.environ.get("TIEEVAL_DEBUG"):
            raise
        message = describe(exc, path, master or _master(), source, jvm_output())
        if message is None:
            raise
        raise SparkFailure(message) from None


def _master() -> str | None:
    try:
        from pyspark import SparkContext
        context = SparkContext._active_spark_context
        return context.master if context is not None else None
    except Exception:
        return None
