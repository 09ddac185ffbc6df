"""``tieeval check`` outcomes as JUnit XML, the test report that GitLab, Jenkins and
GitHub's test reporters read (docs/output.md, "JUnit XML", describes the document and the
schema it follows). A testcase is named by the check and its metric so that a reporter
tracks the same check from one pipeline to the next. xml.etree escapes every attribute and
text node; user text (a path) is written in its one-line form first
(:func:`tieeval.util.escaping.escape`), which holds none of the characters XML 1.0 cannot (a
parser would refuse the whole report) and no line break.
"""

from __future__ import annotations

from tieeval.records.check import CheckResult
from tieeval.report.check import advice, message
from tieeval.report.format import metric_title
from tieeval.report.registry import Output, register
from tieeval.util.escaping import escape


def _text(value: str) -> str:
    return escape(value, "xml")


@register("check", "junit", "JUnit XML, one testcase per check (GitLab, Jenkins)",
          machine_readable=True)
def check_junit(result: CheckResult, out: Output) -> None:
    import xml.etree.ElementTree as ET  # only when a JUnit report is written (start-up)
    outcomes = result.outcomes
    errors = len(result.errors)
    root = ET.Element("testsuites", name="tieeval check", tests=str(len(outcomes) + errors),
                      failures=str(sum(not o.passed for o in outcomes)), errors=str(errors),
                      time="0")
    for path, cases, error in result.by_dump():
        suite = ET.SubElement(root, "testsuite", name=_text(path),
                              tests=str(len(cases) + (error is not None)),
                              failures=str(sum(not o.passed for o in cases)),
                              errors=str(int(error is not None)), skipped="0", time="0")
        run = next((r for r in result.runs if r.path == path), None)
        if run is not None:  # the rule behind the Original figures its checks read
            properties = ET.SubElement(suite, "properties")
            ET.SubElement(properties, "property", name="original_rule",
                          value=run.effective_original_rule)
        if error is not None:  # the dump could not be read: one case, in error
            case = ET.SubElement(suite, "testcase", name="read", classname=_text(path),
                                 time="0")
            ET.SubElement(case, "error", message=_text(error.message),
                          type="input").text = _text(error.message)
        for o in cases:
            # the check and what it measured: max_change NDCG@10, max_tie_frequency
            name = o.threshold.kind + ("" if o.metric is None
                                       else f" {metric_title(str(o.metric), o.gamma)}")
            case = ET.SubElement(suite, "testcase", name=_text(name), classname=_text(path),
                                 time="0")
            reason = _text(message(o))
            if o.passed:
                ET.SubElement(case, "system-out").text = reason
            else:
                failure = ET.SubElement(case, "failure", message=reason,
                                        type=o.threshold.kind)
                failure.text = "\n".join([reason, *advice([o])])
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n'
              + ET.tostring(root, encoding="unicode") + "\n")
