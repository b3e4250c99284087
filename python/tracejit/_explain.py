"""tracejit.explain: run a function once, traced from scratch, and report
what was compiled and why anything was not."""
import _tracejit as _C


class BreakReason:
    """Why a part of the program was not compiled, and where."""

    def __init__(self, reason, filename, lineno):
        self.reason = reason
        self.filename = filename
        self.lineno = lineno

    def __repr__(self):
        return f"BreakReason({self.reason!r}, {self.filename!r}, {self.lineno})"

    def __str__(self):
        return f"{self.filename}:{self.lineno}: {self.reason}"


class ExplainOutput:
    """What one traced run produced (docs/api.md)."""

    def __init__(self, record, result):
        self.graphs = list(record["graphs"])
        self.graph_count = len(self.graphs)
        self.break_reasons = [BreakReason(*row) for row in record["break_reasons"]]
        self.graph_break_count = len(self.break_reasons)
        # Frames that ran uncompiled without being traced (torch code the
        # tracer inlines, called by CPython after a break), once each.
        self.skipped_frames = [BreakReason(*row) for row in record.get("skipped_frames", ())]
        self.op_count = record["op_count"]
        # Sizes the traces guarded by value under dynamic shapes, each
        # "L['x'].size(0) == 5 specialized because ..." with its place.
        self.specializations = [BreakReason(*row) for row in record.get("specializations", [])]
        self.specialization_count = len(self.specializations)
        # How many sizes each reason specialized: {"used as an index or key": 2, ...}.
        self.specialization_reasons = {}
        for r in self.specializations:
            why = r.reason.split(" specialized because ", 1)[-1]
            self.specialization_reasons[why] = self.specialization_reasons.get(why, 0) + 1
        self.result = result

    def __str__(self):
        lines = [
            f"Graph count: {self.graph_count}",
            f"Graph break count: {self.graph_break_count}",
            f"Op count: {self.op_count}",
        ]
        if self.break_reasons:
            lines.append("Break reasons:")
            lines += [f"  {i + 1}. {r}" for i, r in enumerate(self.break_reasons)]
        if self.specializations:
            lines.append(f"Specialized sizes: {self.specialization_count}")
            lines += [f"  {n} specialized because {why}" for why, n in self.specialization_reasons.items()]
            lines += [f"  {i + 1}. {r}" for i, r in enumerate(self.specializations)]
        if self.skipped_frames:
            lines.append("Frames run uncompiled:")
            lines += [f"  {i + 1}. {r}" for i, r in enumerate(self.skipped_frames)]
        for i, gm in enumerate(self.graphs):
            lines.append(f"Graph {i}:")
            lines.append(str(gm.graph).rstrip())
        return "\n".join(lines)

    __repr__ = __str__


def explain(fn, compile_fn):
    def run(*args, **kwargs):
        _C.explain_begin()
        try:
            result = compile_fn(fn)(*args, **kwargs)
        finally:
            record = _C.explain_end()
        return ExplainOutput(record, result)

    return run
