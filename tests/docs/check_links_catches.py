#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_links_catches.py CHECK_LINKS.py: the link check passes a tree whose links all resolve
and fails, naming the link, on a missing file and on an anchor no heading has.  Run by ctest as
test_doc_links_catches."""
import os
import subprocess
import sys
import tempfile

GOOD = """# Doc

See [the other](other.md#2-the-users-part) and [it again](other.md#notes-1), [here](#doc-1),
[code](#a-b_c-heading), [a folder](sub/), [from the root](/other.md), a link in code
`[no](missing.md)`, and a [link that
spans lines](other.md#notes).

```
[not a link](missing.md)
```

## Doc

## A `b_c` heading!
"""
OTHER = """# Other

## 2. The user's part

## Notes

## Notes
"""


def run(checker, files):
    with tempfile.TemporaryDirectory() as root:
        os.mkdir(os.path.join(root, "sub"))
        for name, text in files.items():
            with open(os.path.join(root, name), "w", encoding="utf-8") as f:
                f.write(text)
        p = subprocess.run([sys.executable, checker, root, "a.md"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True)
        return p.returncode, p.stdout


def main(checker):
    failed = 0

    def expect(what, text, rc_want, needle):
        nonlocal failed
        rc, out = run(checker, {"a.md": text, "other.md": OTHER})
        ok = rc == rc_want and needle in out
        print("%s: %s (exit %d)" % ("ok" if ok else "FAIL", what, rc))
        if not ok:
            print(out)
            failed += 1

    expect("every link resolves", GOOD, 0, "0 broken")
    expect("a missing file", GOOD + "\n[gone](gone.md)\n", 1, "a.md:16: gone.md: no such file")
    expect("a missing anchor", GOOD + "\n[bad](other.md#the-users-part)\n", 1,
           "a.md:16: other.md#the-users-part: no heading with the id")
    expect("a missing anchor in the same file", GOOD + "\n[bad](#doc-2)\n", 1,
           "a.md:16: #doc-2: no heading")
    expect("a missing file in a reference definition", GOOD + "\n[x]: ../nowhere.md\n", 1,
           "no such file")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
