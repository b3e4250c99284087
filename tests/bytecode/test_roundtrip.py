"""Decode and decode->assemble of every function of many modules, against dis.

For every function and method (and every code object nested in their
constants) of the standard-library modules below, of all torch.nn submodules
and of torch.nn.functional, checks that the C++ bytecode toolkit
(src/tracer, through _tracejit._bc_*):

  * decodes like dis.get_instructions, instruction by instruction (opname,
    opcode, arg, argval, offset, starts_line, is_jump_target, positions),
    with dis's EXTENDED_ARG entries folded into the instruction they prefix;
  * reads the exception table like dis._parse_exception_table and the
    line table like code.co_positions();
  * computes co_stacksize by its own stack-depth analysis;
  * assembles the decoding back into identical co_code, co_exceptiontable,
    co_linetable, co_stacksize, co_consts, co_names and co_varnames.

Prints "N code objects checked" and exits non-zero on any mismatch (the
first few are printed).
"""
import dis
import importlib
import math
import pkgutil
import sys
import types

import _tracejit

STDLIB_MODULES = [
    "os", "re", "json", "json.decoder", "json.encoder", "ast", "inspect", "typing",
    "collections", "functools", "argparse", "pathlib", "textwrap", "enum", "dataclasses",
    "logging", "logging.handlers", "email.message", "email.parser", "email.utils",
    "email.feedparser", "email._header_value_parser", "http.client", "http.server",
    "unittest.case", "unittest.mock", "difflib", "tokenize", "pickle", "tarfile",
    "zipfile", "_pydecimal", "statistics", "string", "shutil", "tempfile",
    "configparser", "csv", "gettext", "calendar", "heapq", "bisect", "fractions",
    "contextlib", "asyncio.base_events", "asyncio.tasks", "asyncio.streams",
    "traceback", "urllib.parse", "xml.etree.ElementTree", "pydoc", "dis", "copy",
    "pprint", "threading", "subprocess", "random", "datetime", "ipaddress",
    "sre_parse", "sre_compile", "locale", "codecs", "weakref", "abc",
]

MAX_REPORTED = 10


def torch_nn_modules():
    import torch.nn
    import torch.nn.functional
    mods = [torch.nn, torch.nn.functional]
    for info in pkgutil.walk_packages(torch.nn.__path__, "torch.nn."):
        try:
            mods.append(importlib.import_module(info.name))
        except Exception:  # optional parts (quantized backends...) may not import
            pass
    return mods


def code_objects(modules):
    """Every code object reachable from the functions/classes of `modules`."""
    seen = {}

    def add_code(code):
        if id(code) in seen:
            return
        seen[id(code)] = code
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                add_code(const)

    def add_function(fn):
        fn = getattr(fn, "__func__", fn)
        fn = inspect_unwrap(fn)
        code = getattr(fn, "__code__", None)
        if isinstance(code, types.CodeType):
            add_code(code)

    def add_class(cls, depth=0):
        if depth > 5:
            return
        for value in list(vars(cls).values()):
            if isinstance(value, (staticmethod, classmethod)):
                add_function(value.__func__)
            elif isinstance(value, property):
                for f in (value.fget, value.fset, value.fdel):
                    if f is not None:
                        add_function(f)
            elif isinstance(value, types.FunctionType):
                add_function(value)
            elif isinstance(value, type) and value.__module__ == cls.__module__:
                add_class(value, depth + 1)

    for mod in modules:
        for value in list(vars(mod).values()):
            owner = getattr(value, "__module__", None)
            if owner != mod.__name__:
                continue
            if isinstance(value, types.FunctionType):
                add_function(value)
            elif isinstance(value, type):
                add_class(value)
    return list(seen.values())


def inspect_unwrap(fn):
    for _ in range(10):
        inner = getattr(fn, "__wrapped__", None)
        if not isinstance(inner, types.FunctionType):
            return fn
        fn = inner
    return fn


def same_value(a, b):
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return True
    try:
        return bool(a == b)
    except Exception:
        return False


def group_dis(code):
    """dis instructions, EXTENDED_ARG entries grouped with the instruction they prefix."""
    groups, pending = [], []
    for ins in dis.get_instructions(code):
        pending.append(ins)
        if ins.opname != "EXTENDED_ARG":
            groups.append(pending)
            pending = []
    assert not pending
    return groups


def check_decode(code, mismatches):
    ours = _tracejit._bc_decode(code)
    theirs = group_dis(code)
    where = f"{code.co_qualname} ({code.co_filename}:{code.co_firstlineno})"
    if len(ours) != len(theirs):
        mismatches.append(f"{where}: {len(ours)} instructions, dis has {len(theirs)}")
        return
    for mine, group in zip(ours, theirs):
        (opname, opcode, arg, argval, offset, starts_line, is_target, target, line,
         positions, handler) = mine
        first, real = group[0], group[-1]
        expected = {
            "opname": real.opname, "opcode": real.opcode,
            "arg": real.arg if real.arg is not None else -1,
            "offset": first.offset, "starts_line": first.starts_line,
            "is_jump_target": first.is_jump_target, "positions": tuple(first.positions),
        }
        got = {
            "opname": opname, "opcode": opcode, "arg": arg, "offset": offset,
            "starts_line": starts_line, "is_jump_target": is_target, "positions": positions,
        }
        for key, value in expected.items():
            if got[key] != value:
                mismatches.append(f"{where} @{first.offset} {real.opname}: {key} {got[key]!r} != dis {value!r}")
                return
        ref_argval = real.argval
        if real.opname == "KW_NAMES":  # dis 3.11 resolves only LOAD_CONST's constant
            ref_argval = code.co_consts[real.arg]
        if real.opname != "FORMAT_VALUE" and not same_value(argval, ref_argval):
            mismatches.append(f"{where} @{first.offset} {real.opname}: argval {argval!r} != dis {ref_argval!r}")
            return
        if real.opcode in dis.hasjrel and target != real.argval:
            mismatches.append(f"{where} @{first.offset}: jump target {target} != dis {real.argval}")
            return


def check_tables(code, mismatches):
    where = f"{code.co_qualname} ({code.co_filename}:{code.co_firstlineno})"
    exc = _tracejit._bc_exception_table(code)
    ref = [tuple(e) for e in dis._parse_exception_table(code)]
    if exc != ref:
        mismatches.append(f"{where}: exception table {exc} != dis {ref}")
    if _tracejit._bc_positions(code) != list(code.co_positions()):
        mismatches.append(f"{where}: positions differ from co_positions()")
    depth = _tracejit._bc_stack_depth(code)
    if depth != code.co_stacksize:
        mismatches.append(f"{where}: stack depth {depth} != co_stacksize {code.co_stacksize}")


def check_roundtrip(code, mismatches):
    where = f"{code.co_qualname} ({code.co_filename}:{code.co_firstlineno})"
    try:
        new = _tracejit._bc_roundtrip(code)
    except Exception as e:
        mismatches.append(f"{where}: roundtrip failed: {e}")
        return
    for attr in ("co_code", "co_exceptiontable", "co_linetable", "co_stacksize", "co_names",
                 "co_varnames", "co_cellvars", "co_freevars", "co_flags", "co_argcount"):
        if getattr(new, attr) != getattr(code, attr):
            mismatches.append(f"{where}: roundtrip {attr} differs")
            return
    if len(new.co_consts) != len(code.co_consts) or any(
            a is not b for a, b in zip(new.co_consts, code.co_consts)):
        mismatches.append(f"{where}: roundtrip co_consts differ")


def main():
    stdlib = [importlib.import_module(name) for name in STDLIB_MODULES]
    nn = torch_nn_modules()
    codes = code_objects(stdlib + nn)
    mismatches = []
    for code in codes:
        check_decode(code, mismatches)
        check_tables(code, mismatches)
        check_roundtrip(code, mismatches)
    print(f"{len(codes)} code objects checked "
          f"({len(stdlib)} stdlib modules, {len(nn)} torch.nn modules)")
    if mismatches:
        print(f"{len(mismatches)} mismatches; the first {min(len(mismatches), MAX_REPORTED)}:")
        for m in mismatches[:MAX_REPORTED]:
            print("  " + m)
        return 1
    print("decode, tables, stack depth and roundtrip agree with dis")
    return 0


if __name__ == "__main__":
    sys.exit(main())
