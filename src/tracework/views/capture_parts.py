"""The parts of an investigation record that a capture fills in by itself.

A published investigation states its provenance, its status conditions, its results
and its limits.  Every fact of those parts is already in the capture (its manifest,
``results.json``, ``model-arm.json``) or the register, so an analyst who types them
by hand can only get them wrong.  Each function here renders one part from those
files alone; ``tracework new NAME --kind investigation`` puts one cell per part in the
notebook (``cap.provenance()``, ``cap.conditions()``, ``cap.results()``,
``cap.limits()``), and the analyst writes the prose between them.
"""

from __future__ import annotations

from tracework.capture.evidence import CapturedAt
from tracework.capture.store import CaptureResults, CaseResult, EnvironmentProvenance, ModelArm
from tracework.views.capture import (
    cases_table_html,
    meta_html,
    observed_line,
    state_badge,
    table_html,
)
from tracework.views.cards import badge, esc, esc_name, sha256_html


def _code(text: str) -> str:
    return f"<code>{esc(text)}</code>"


def _stale(at: CapturedAt) -> str:
    if not at.stale:
        return ""
    return (
        f"<p>{state_badge('stale', at)}: no capture at the commit rendered "
        f"({_code(at.commit[:12])}); every part below is the capture made at "
        f"{_code(at.baseline.commit[:12])}.</p>"
    )


def provenance_html(at: CapturedAt, subject_url: str | None) -> str:
    """ "Data and provenance": the subject's commit and the files hashed before the run,
    the environment, the isolation and limits, the harness, and every file the capture
    keeps with its SHA-256."""
    cap = at.shown
    m = cap.manifest
    env = m.environment
    subject = f"{esc(m.subject)}" + (f" ({esc(subject_url)})" if subject_url else "")
    lock = (
        "the subject's own uv.lock, installed as written"
        if env.lock == "uv"
        else "pinned requirements (the subject has no lock of its own in use)"
    )
    made = env.provenance
    rows = [
        ("Subject", f"{subject} at {_code(m.commit)}, committed {esc(m.commit_date)}"),
        ("Environment", f"Python {esc(env.python)}; {lock}"),
        *(_environment_rows(made) if made is not None else []),
        ("Frozen list", f"<code>environment.txt</code>, sha256 {_code(env.sha256)}"),
        ("Harness", f"<code>harness.py</code>, sha256 {_code(m.harness_sha256)}"),
        ("Declaration", f"<code>{esc(m.capture)}.toml</code>, sha256 {_code(m.config_sha256)}"),
        ("Isolation", f"{esc(m.isolation)}: its own network (loopback only), no host files"),
        *(_model_rows(m.model) if m.model is not None else []),
        ("Runs", f"{m.identical_runs} run{'s' if m.identical_runs != 1 else ''}, "
         "byte-identical in every scripted file"),
        ("Made by", f"tracework {esc(m.tracework)}"),
    ]  # fmt: skip
    checked = "".join(
        f"<tr><td>{esc_name(path)}</td><td>{sha256_html(sha)}</td><td>"
        + (badge("changed", "differs from the pin") if path in m.changed_since_pin else "")
        + "</td></tr>"
        for path, sha in sorted(m.verified_files.items())
    )
    kept = "".join(
        f"<tr><td>{esc_name(f.path)}</td><td>{sha256_html(f.sha256)}</td>"
        f'<td class="tw-num">{f.size:,}</td></tr>'
        for f in m.files
    )
    return (
        f'<section class="tw-capture tw-provenance">{_stale(at)}{meta_html(rows)}'
        + (_distributions_html(made) if made is not None else "")
        + "<h3>Subject files hashed before the harness ran</h3>"
        + (
            '<div class="tw-scroll"><table class="tw-hashes"><thead><tr><th>file</th>'
            f"<th>sha256 in the exported tree</th><th></th></tr></thead><tbody>{checked}"
            "</tbody></table></div>"
            if checked
            else "<p>None: the register holds no file of this subject.</p>"
        )
        + f"<h3>Files of the capture ({esc(cap.folder)})</h3>"
        '<div class="tw-scroll"><table class="tw-hashes"><thead><tr><th>file</th>'
        f"<th>sha256</th><th>bytes</th></tr></thead><tbody>{kept}</tbody></table></div>"
        "</section>"
    )


def _environment_rows(made: EnvironmentProvenance) -> list[tuple[str, str]]:
    """uv, the interpreter, the lock and what of it was installed, the harness's own lock."""
    py = made.python
    rows = [
        ("uv", esc(made.uv)),
        (
            "Interpreter",
            f"CPython {esc(py.version)}, {_code(py.path)}, sha256 {_code(py.sha256)}"
            + (
                f"; its library {_code(py.library)}, sha256 {_code(py.library_sha256 or '')}"
                if py.library
                else ""
            ),
        ),
    ]
    if made.lock is not None:
        lock = made.lock
        groups = [f"{g} (default)" if g in lock.default_groups else g for g in lock.groups]
        rows += [
            (
                "Lock",
                f"<code>uv.lock</code>, sha256 {_code(lock.sha256)}; <code>pyproject.toml</code>, "
                f"sha256 {_code(lock.project_sha256)}",
            ),
            (
                "Installed",
                f"{_code(lock.command)}; groups: {esc(', '.join(groups) or 'none')}"
                + ("; the default groups left out" if lock.no_default_groups else "")
                + f"; extras: {esc(', '.join(lock.extras) or 'none')}",
            ),
        ]
    if made.extra_lock is not None:
        extra = made.extra_lock
        rows.append(
            (
                "Added by the harness",
                f"{esc(', '.join(extra.resolved_from))}, resolved into "
                f"{_code(extra.path)}, sha256 {_code(extra.sha256)}",
            )
        )
    return rows


def _model_rows(model: ModelArm) -> list[tuple[str, str]]:
    """The model-driven arm's one endpoint, and what the server said of itself."""
    rows = [
        (
            "Model endpoint",
            f"{_code(model.endpoint)}, the one address the sandbox could reach (model-driven "
            f"arm only); {model.trials} trial{'s' if model.trials != 1 else ''} of each "
            f"condition; {model.exchanges} exchange{'s' if model.exchanges != 1 else ''} kept "
            "in <code>model-arm/exchanges.jsonl</code>",
        )
    ]
    for reply in model.info:
        body = reply.text if reply.text is not None else f"({len(reply.base64 or '')} base64)"
        shown = body if len(body) <= 300 else body[:300] + "…"
        rows.append(
            (
                f"GET {esc(reply.path)}",
                f"{reply.status}, sha256 {_code(reply.sha256)}: {_code(shown)}",
            )
        )
    return rows


def _distributions_html(made: EnvironmentProvenance) -> str:
    """Every distribution installed, with the file it came from and that file's hash."""
    rows = "".join(
        f"<tr><td>{esc(d.name)}</td><td>{esc(d.version)}</td>"
        f"<td>{esc(d.installed_by or 'none named it')}"
        f"{' (built from source)' if d.built_from_source else ''}</td>"
        f"<td>{esc(d.file or '')}</td>"
        + (
            f"<td>{sha256_html(d.sha256)}</td>"
            if d.sha256
            else f"<td>one of {len(d.hashes)} accepted</td>"
        )
        + "</tr>"
        for d in made.distributions
    )
    count = len(made.distributions)
    return (
        f"<details><summary>{count} distribution{'s' if count != 1 else ''} installed, each "
        "with the file it came from</summary>"
        '<div class="tw-scroll"><table class="tw-hashes"><thead><tr><th>name</th>'
        "<th>version</th><th>installed by</th><th>file</th><th>sha256</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></div></details>"
    )


def _arms(at: CapturedAt) -> list[CaptureResults]:
    cap = at.shown
    return [cap.results] + ([cap.model_arm] if cap.model_arm is not None else [])


def _condition(case: CaseResult) -> str:
    if case.arm == "model-driven":
        return f"<li>{esc(case.id)}: model-driven, not graded</li>"
    if case.checks:
        items = "".join(f"<li>{esc(c.criterion)}</li>" for c in case.checks)
        return (
            f"<li>{esc(case.id)}: FAIL if any of these fails, PASS if all hold, UNKNOWN "
            f"if one cannot be shown by the fixture<ul>{items}</ul></li>"
        )
    return f"<li>{esc(case.id)}: {esc(case.criterion or '')}</li>"


def conditions_html(at: CapturedAt) -> str:
    """ "Status conditions": what makes each case PASS, FAIL or UNKNOWN, as its harness
    judged it."""
    items = "".join(_condition(c) for arm in _arms(at) for c in arm.cases)
    return (
        f'<section class="tw-capture tw-conditions">{_stale(at)}'
        "<p>Each status is computed by the harness from what crossed the subject's "
        "boundaries (recorded requests, stored rows), never from a model's reply.</p>"
        f'<ul class="tw-checks">{items}</ul></section>'
    )


def results_html(at: CapturedAt) -> str:
    """ "Results": the scripted cases with their statuses and counts, the harness's
    tables, then the model-driven arm apart, labelled and never counted."""
    cap = at.shown
    order = {"PASS": 0, "FAIL": 1, "UNKNOWN": 2}
    counts = ", ".join(
        f"{n} {status}"
        for status, n in sorted(cap.results.counts.items(), key=lambda kv: order.get(kv[0], 3))
    )
    out = [
        f'<section class="tw-capture tw-results">{_stale(at)}',
        f"<p>Scripted arm: {len(cap.results.cases)} cases ({esc(counts or 'none graded')}).</p>",
        cases_table_html(cap.results.cases, "Scripted cases"),
        "".join(table_html(t, cap.results) for t in cap.results.tables),
    ]
    if cap.model_arm is not None:
        out += [
            "<h3>Model-driven arm (not graded)</h3><p>Its replies vary from run to run; "
            "it is kept apart from the statuses above and exempt from the byte-identical "
            "rule.</p>",
            cases_table_html(cap.model_arm.cases, "Model-driven cases"),
            "".join(table_html(t, cap.model_arm) for t in cap.model_arm.tables),
        ]
    return "".join(out) + "</section>"


def limits_html(at: CapturedAt) -> str:
    """ "Limits": what the capture cannot show, computed — cases left UNKNOWN and why,
    the arm never graded, code that moved since the pin, the limits it ran under."""
    cap = at.shown
    m = cap.manifest
    items: list[str] = []
    for case in cap.results.cases:
        if case.status == "UNKNOWN":
            items.append(f"{esc(case.id)} is UNKNOWN: {esc(observed_line(case))}")
    if cap.model_arm is not None:
        items.append(
            f"{len(cap.model_arm.cases)} model-driven case"
            f"{'s are' if len(cap.model_arm.cases) != 1 else ' is'} not graded"
        )
    if m.changed_since_pin:
        items.append(
            "captured at another commit than the register's pin: "
            + ", ".join(esc_name(p) for p in m.changed_since_pin)
            + " differ from the code quoted"
        )
    if at.stale:
        items.append(f"no capture at {esc(at.commit[:12])}: the statuses are older")
    if m.limits is not None:
        lim = m.limits
        where = (
            f"the sandbox as a whole (control group {lim.control_group})"
            if lim.control_group
            else "each process alone (no control group here)"
        )
        items.append(
            f"ran under {lim.memory_mib} MiB of memory and {lim.processes} processes, bounded "
            f"for {where}; {lim.cpu_seconds} s of CPU; {lim.output_mib} MiB of output"
        )
    items.append(
        f"isolated by {esc(m.isolation)}: namespaces, not a virtual machine; what the "
        "harness replaced (a model, a clock) is the harness's, not the subject's"
    )
    return (
        '<section class="tw-capture tw-limits"><ul>'
        + "".join(f"<li>{i}</li>" for i in items)
        + "</ul></section>"
    )
