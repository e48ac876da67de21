"""Writes python/airlink/_types.py: the TypedDicts of the results airlink's core returns,
generated from the JSON Schema of the Rust structs that define them (`_core.result_schemas()`,
derived by `schemars`), so that `_core.pyi` types those results and cannot drift from them.

    .venv/bin/python scripts/gen_result_types.py          # rewrite the module
    .venv/bin/python scripts/gen_result_types.py --check  # exit 1 (with a diff) if it differs

The schemas use a small part of JSON Schema (objects, arrays, nullable types, string enums,
maps, `$ref`s, untagged unions): each construct maps to one typing form below, and anything
else is refused rather than guessed. Hand-written rather than a general generator (such as
datamodel-code-generator) because the output must be byte-stable for the check above across
tool versions and formatters, and the subset is small.
"""

from __future__ import annotations

import difflib
import json
import keyword
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "python" / "airlink" / "_types.py"

HEADER = '''"""Typed results of airlink's core (`airlink._core`): one TypedDict per Rust struct the core
returns, with the struct's doc comments. Generated from the structs' JSON Schema by
scripts/gen_result_types.py: do not edit (tests/test_result_types.py fails when it is stale)."""
'''


class Generator:
    def __init__(self, schemas: dict[str, Any]) -> None:
        self.defs: dict[str, Any] = schemas["$defs"]
        self.roots: dict[str, Any] = schemas["roots"]
        # A root that is a reference names its definition (RunSummary for the struct Summary).
        self.names = {name: name for name in self.defs}
        for root, schema in self.roots.items():
            ref = schema.get("$ref")
            if ref is None:
                raise ValueError(f"root {root}: expected a $ref, got {schema}")
            self.names[self._def(ref)] = root
        # Every emitted name: its text, and the names it uses.
        self.items: dict[str, tuple[str, set[str]]] = {}
        self.typing: set[str] = set()

    @staticmethod
    def _def(ref: str) -> str:
        prefix = "#/$defs/"
        if not ref.startswith(prefix):
            raise ValueError(f"unsupported $ref {ref}")
        return ref[len(prefix):]

    def run(self) -> str:
        for name, schema in self.defs.items():
            self.define(self.names[name], schema)
        # No `from __future__ import annotations`: before Python 3.14, TypedDict cannot see
        # NotRequired in a string annotation. So every name comes after the names it uses.
        lines = [HEADER, f"from typing import {', '.join(sorted(self.typing))}", ""]
        lines += ["__all__ = [", *(f'    "{n}",' for n in sorted(self.items)), "]"]
        done: set[str] = set()

        def emit(name: str) -> None:
            if name in done:
                return
            done.add(name)
            text, uses = self.items[name]
            for other in sorted(uses - {name}):
                emit(other)
            lines.extend(["", "", text.rstrip()])

        for name in [*self.roots, *sorted(self.items)]:
            emit(name)
        return "\n".join(lines) + "\n"

    def define(self, name: str, schema: dict[str, Any]) -> None:
        if schema.get("type") == "object" and "properties" in schema:
            self.items[name] = self.typed_dict(name, schema)
        else:
            uses: set[str] = set()
            self.typing.add("TypeAlias")
            self.items[name] = (f"{name}: TypeAlias = {self.annotation(schema, name, uses)}", uses)

    def typed_dict(self, name: str, schema: dict[str, Any]) -> tuple[str, set[str]]:
        self.typing.add("TypedDict")
        out = [f"class {name}(TypedDict):"]
        doc = schema.get("description")
        if doc:
            out.append(f'    """{_docstring(doc)}"""')
            out.append("")
        required = set(schema.get("required", []))
        uses: set[str] = set()
        for field, sub in schema["properties"].items():
            if not field.isidentifier() or keyword.iskeyword(field):
                raise ValueError(f"{name}.{field}: not a Python identifier")
            kind = self.annotation(sub, name + _camel(field), uses)
            if field not in required:
                self.typing.add("NotRequired")
                kind = f"NotRequired[{kind}]"
            if isinstance(sub, dict) and sub.get("description"):
                out += [f"    #: {line}".rstrip() for line in sub["description"].splitlines()]
            out.append(f"    {field}: {kind}")
        if schema.get("additionalProperties") not in (None, False):
            raise ValueError(f"{name}: an object with both properties and additional properties")
        return "\n".join(out) + "\n", uses

    def annotation(self, schema: Any, context: str, uses: set[str]) -> str:
        """The type of a value with this schema; `context` names an inline object's class."""
        if schema is True or schema == {} or (isinstance(schema, dict) and set(schema) <= {"description"}):
            self.typing.add("Any")
            return "Any"
        if not isinstance(schema, dict):
            raise ValueError(f"{context}: unsupported schema {schema!r}")
        if "$ref" in schema:
            target = self.names[self._def(schema["$ref"])]
            uses.add(target)
            return target
        for union in ("anyOf", "oneOf"):
            if union in schema:
                variants = schema[union]
                objects = [v for v in variants if isinstance(v, dict) and v.get("type") == "object"]
                # An inline object variant (an untagged enum's struct variant) is named after
                # the union: `RewrittenObject`; several are numbered.
                names = iter([f"{context}Object"] if len(objects) == 1 else
                             [f"{context}Object{i}" for i in range(len(objects))])
                parts = [self.annotation(v, next(names) if v in objects else context, uses) for v in variants]
                return _union(parts)
        if "const" in schema:
            self.typing.add("Literal")
            return f"Literal[{json.dumps(schema['const'])}]"
        if "enum" in schema:
            values = [v for v in schema["enum"] if v is not None]
            self.typing.add("Literal")
            lit = f"Literal[{', '.join(json.dumps(v) for v in values)}]"
            return _union([lit, "None"]) if None in schema["enum"] else lit
        types = schema.get("type")
        if types is None:
            raise ValueError(f"{context}: schema without a type: {schema}")
        if isinstance(types, list):
            return _union([self.annotation({**schema, "type": t}, context, uses) for t in types])
        match types:
            case "null":
                return "None"
            case "boolean":
                return "bool"
            case "integer":
                return "int"
            case "number":
                return "float"
            case "string":
                return "str"
            case "array":
                if "prefixItems" in schema:
                    parts = [self.annotation(s, f"{context}{i}", uses) for i, s in enumerate(schema["prefixItems"])]
                    return f"tuple[{', '.join(parts)}]"
                item = self.annotation(schema.get("items", True), context + "Item", uses)
                n = schema.get("maxItems")
                if n is not None and n == schema.get("minItems"):  # a fixed-size array: a tuple
                    return f"tuple[{', '.join([item] * n)}]"
                return f"list[{item}]"
            case "object":
                if "properties" in schema:
                    self.items[context] = self.typed_dict(context, schema)
                    uses.add(context)
                    return context
                values = schema.get("additionalProperties", True)
                return f"dict[str, {self.annotation(values, context + 'Value', uses)}]"
        raise ValueError(f"{context}: unsupported type {types!r}")


def _union(parts: list[str]) -> str:
    seen: list[str] = []
    literals: list[str] = []
    for p in parts:
        for q in p.split(" | "):
            if q.startswith("Literal[") and q.endswith("]"):
                literals.append(q[len("Literal["):-1])
            elif q not in seen:
                seen.append(q)
    if literals:  # one Literal of every value
        seen.insert(0, f"Literal[{', '.join(literals)}]")
    # None last, as written by hand.
    seen.sort(key=lambda q: q == "None")
    return " | ".join(seen)


def _camel(field: str) -> str:
    return "".join(w.capitalize() for w in field.split("_"))


def _docstring(text: str) -> str:
    lines = text.replace('"""', "'''").splitlines()
    return "\n    ".join(lines)


def generate() -> str:
    from airlink import _core

    if not _core.EMULATION:
        raise SystemExit("this build has no emulation: its schemas lack the emulation results")
    return Generator(_core.result_schemas()).run()


def main(argv: list[str]) -> int:
    text = generate()
    if argv[1:] == ["--check"]:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            diff = difflib.unified_diff(current.splitlines(True), text.splitlines(True), str(OUT), "generated")
            sys.stdout.writelines(diff)
            print(f"\n{OUT} is stale: run scripts/gen_result_types.py", file=sys.stderr)
            return 1
        return 0
    if argv[1:]:
        raise SystemExit(__doc__)
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
