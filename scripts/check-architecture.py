#!/usr/bin/env python3
"""Checks that docs/ARCHITECTURE.md's module tables match Package.swift (run by scripts/test.sh).

Usage: scripts/check-architecture.py Package.swift docs/ARCHITECTURE.md
Package.swift is read for its target declarations (`.target(name: "X", path: "…"`, one per
call as written there), not run: SwiftPM holds the build folder's lock while tests run, and
this check runs before every build. Under "## Modules" the doc has two tables whose
first two columns are a target's name and its folder, both in backticks: one for the Swift
targets (modules and executables), one for the C targets (system libraries and C code). Every
target of the package but the tests is in the right table exactly once, with its folder; every
row names a target; every folder exists. Exit 1 with each difference on its own line.
"""
import os
import re
import sys


def targets(manifest):
    with open(manifest) as f:
        text = f.read()
    swift, c = {}, {}
    starts = list(re.finditer(r'\.(target|systemLibrary|executableTarget|testTarget)\(\s*name:\s*"([^"]+)"', text))
    if not starts:
        sys.exit(f"{manifest}: no target declarations found")
    for n, start in enumerate(starts):
        kind, name = start.group(1), start.group(2)
        if kind == "testTarget":
            continue
        # `path:` of this declaration: before the next one begins.
        end = starts[n + 1].start() if n + 1 < len(starts) else len(text)
        path = re.search(r'\bpath:\s*"([^"]+)"', text[start.end():end])
        folder = (path.group(1) if path else "Sources/" + name).rstrip("/")
        is_c = kind == "systemLibrary" or os.path.isdir(os.path.join(folder, "include"))
        (c if is_c else swift)[name] = folder
    return swift, c


def tables(doc):
    with open(doc) as f:
        text = f.read()
    start = text.find("\n## Modules")
    if start < 0:
        sys.exit(f"{doc}: no '## Modules' section")
    end = text.find("\n## ", start + 1)
    section = text[start:end if end > 0 else len(text)]
    found, current = [], None
    for line in section.splitlines():
        if not line.startswith("|"):
            current = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if current is None:
            current = {"header": cells, "rows": []}
            found.append(current)
            continue
        if set(cells[0]) <= set("-: "):
            continue
        name = re.fullmatch(r"`([^`]+)`", cells[0])
        folder = re.fullmatch(r"`([^`]+)`", cells[1]) if len(cells) > 1 else None
        current["rows"].append((name.group(1) if name else cells[0], folder.group(1).rstrip("/") if folder else cells[1] if len(cells) > 1 else ""))
    c_tables = [t for t in found if t["header"][0].lower().startswith("c target")]
    swift_tables = [t for t in found if t["header"][0].lower() == "module"]
    if len(c_tables) != 1 or len(swift_tables) != 1:
        sys.exit(f"{doc}: '## Modules' needs one table headed 'module' and one headed 'C target' (found {len(swift_tables)} and {len(c_tables)})")
    return swift_tables[0]["rows"], c_tables[0]["rows"]


def compare(kind, expected, rows):
    problems, seen = [], {}
    for name, folder in rows:
        if name in seen:
            problems.append(f"{kind} table: `{name}` is listed twice")
        seen[name] = folder
        if name not in expected:
            problems.append(f"{kind} table: `{name}` is not a {kind} target of Package.swift")
        elif expected[name] != folder:
            problems.append(f"{kind} table: `{name}` is in `{expected[name]}`, not `{folder}`")
        if not os.path.isdir(folder):
            problems.append(f"{kind} table: folder `{folder}` of `{name}` does not exist")
    for name, folder in sorted(expected.items()):
        if name not in seen:
            problems.append(f"{kind} table: target `{name}` (`{folder}`) is missing")
    return problems


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    swift, c = targets(sys.argv[1])
    swift_rows, c_rows = tables(sys.argv[2])
    problems = compare("module", swift, swift_rows) + compare("C target", c, c_rows)
    for p in problems:
        print(f"{sys.argv[2]}: {p}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
