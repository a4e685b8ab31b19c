#!/usr/bin/env python3
"""Counts test cases across the JUnit XML files the test runners wrote.

lit, GoogleTest and pytest each write one file into the results directory;
this prints "N passed, M failed" over all of them and fails if any failed or
if a runner wrote nothing.
"""
import pathlib
import sys
import xml.etree.ElementTree as ElementTree


def main() -> int:
    results = pathlib.Path(sys.argv[1])
    files = sorted(results.glob("*.xml"))
    passed = failed = skipped = 0
    for path in files:
        for case in ElementTree.parse(path).getroot().iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
            elif case.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
    if not files:
        print("no test results were written")
        failed += 1
    suffix = f" ({skipped} skipped)" if skipped else ""
    print(f"{passed} passed, {failed} failed{suffix}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
