#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_links.py SOURCE_DIR [FILE.md ...]: every relative link and #anchor in the Markdown docs
resolves.

A link's target file (or directory) must exist, relative to the file that links it (or to
SOURCE_DIR for a target starting with '/', as GitHub reads it).  An anchor into a Markdown file,
or into the linking file itself ("#x"), must be the id GitHub gives one of that file's headings:
the heading's text as rendered, lowercased, with every character that is not a letter, a digit,
a mark, '_', '-' or a space removed, spaces turned into '-', and a repeated id suffixed -1, -2, ...
in document order (an explicit <a name="x"> or id="x" counts too).  Absolute URLs (anything with
a scheme) are not fetched.  Links inside fenced code blocks and code spans are not links.

Without FILE arguments: README.md, CHANGELOG.md, docs/**/*.md, tests/*/README.md and every
README.md under bindings/ and packaging/.  Exit 0 when everything resolves, 1 with one line per
broken link (file:line: target: why) otherwise.  Run by ctest as test_doc_links.
"""
import os
import re
import sys
import unicodedata
import urllib.parse

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
# [text](target "title"): the text may hold one level of brackets and span lines.
INLINE = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(<[^>]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"
                    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REFDEF = re.compile(r"^ {0,3}\[([^\]]+)\]:[ \t]*(<[^>]*>|\S+)", re.M)
HTML_ID = re.compile(r"<a\s[^>]*\b(?:name|id)\s*=\s*[\"']([^\"']+)[\"']", re.I)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def blank_code(text, spans=True):
    """The text with fenced blocks (and code spans) replaced by spaces, offsets kept."""
    out = []
    fence = None
    for line in text.splitlines(keepends=True):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            out.append(re.sub(r"[^\n]", " ", line))
        elif fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and \
                    line.strip() == m.group(1):
                fence = None
            out.append(re.sub(r"[^\n]", " ", line))
        else:
            out.append(line)
    text = "".join(out)
    if not spans:
        return text

    # A code span: a run of backticks, then the same run, not across a blank line.
    def span(m):
        return re.sub(r"[^\n]", " ", m.group(0))

    return re.sub(r"(?<!`)(`+)(?!`)(?:(?!\n[ \t]*\n).)+?(?<!`)\1(?!`)", span, text, flags=re.S)


def slug(heading):
    """GitHub's id for a heading's source text (github-slugger on the rendered text)."""
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", heading)  # images render no text
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links render their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    # Emphasis by underscores renders no '_'; an underscore inside a word (or code) stays.
    parts = re.split(r"(`+[^`]*`+)", text)
    for i in range(0, len(parts), 2):
        parts[i] = re.sub(r"(?<![0-9A-Za-z])_+|_+(?![0-9A-Za-z])", "", parts[i])
    text = "".join(parts).strip().lower()
    kept = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in " -_" or cat[0] in "LMN" or cat == "Pc":
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


def anchors(path, cache={}):
    """Every id GitHub gives in the Markdown file at path."""
    if path in cache:
        return cache[path]
    with open(path, encoding="utf-8") as f:
        raw = f.read()
    lines = blank_code(raw, spans=False).splitlines()  # a heading's code spans are its text
    ids, seen = set(), {}

    def add(base):
        n = seen.get(base, 0)
        seen[base] = n + 1
        ids.add(base if n == 0 else "%s-%d" % (base, n))

    prev = ""
    for line in lines:
        m = ATX.match(line)
        s = SETEXT.match(line)
        if m:
            add(slug(m.group(2) or ""))
        elif s and prev.strip() and not prev.lstrip().startswith(("|", "-", "*", "+", ">")) \
                and not ATX.match(prev):
            add(slug(prev.strip()))
        prev = line
    ids.update(HTML_ID.findall(raw))
    cache[path] = ids
    return ids


def default_files(root):
    want = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        dirnames[:] = [d for d in dirnames
                       if not d.startswith(".") and not d.startswith("build") and
                       d not in ("target", "node_modules")]
        for name in filenames:
            if not name.endswith(".md"):
                continue
            p = os.path.normpath(os.path.join(rel, name))
            top = p.split(os.sep)[0]
            if p in ("README.md", "CHANGELOG.md") or top == "docs" or \
                    (top == "tests" and p.count(os.sep) == 2 and name == "README.md") or \
                    (top in ("bindings", "packaging") and name == "README.md"):
                want.append(p)
    return sorted(want)


def check(root, rel):
    path = os.path.join(root, rel)
    with open(path, encoding="utf-8") as f:
        raw = f.read()
    text = blank_code(raw)
    found = [(m.start(), m.group(2)) for m in INLINE.finditer(text)]
    # A definition cannot interrupt a paragraph: it follows a blank line (or starts the file).
    found += [(m.start(), m.group(2)) for m in REFDEF.finditer(text)
              if m.start() == 0 or text[:m.start()].endswith("\n\n") or
              not text[:m.start() - 1].rsplit("\n", 1)[-1].strip()]
    errors = []
    for pos, target in sorted(found):
        line = text.count("\n", 0, pos) + 1
        target = target.strip("<>")
        if not target or SCHEME.match(target):
            continue
        file_part, _, anchor = target.partition("#")
        file_part = urllib.parse.unquote(file_part)
        anchor = urllib.parse.unquote(anchor)
        if file_part.startswith("/"):
            dest = os.path.join(root, file_part.lstrip("/"))
        elif file_part:
            dest = os.path.join(os.path.dirname(path), file_part)
        else:
            dest = path
        dest = os.path.normpath(dest)
        where = "%s:%d: %s" % (rel, line, target)
        if not os.path.exists(dest):
            errors.append("%s: no such file %s" % (where, os.path.relpath(dest, root)))
            continue
        if anchor and dest.endswith(".md") and os.path.isfile(dest):
            if anchor not in anchors(dest):
                errors.append("%s: no heading with the id '%s' in %s" %
                              (where, anchor, os.path.relpath(dest, root)))
    return len(found), errors


def main(argv):
    if len(argv) < 2:
        sys.stderr.write("usage: check_links.py SOURCE_DIR [FILE.md ...]\n")
        return 2
    root = os.path.abspath(argv[1])
    files = argv[2:] or default_files(root)
    links, errors = 0, []
    for rel in files:
        n, errs = check(root, os.path.relpath(os.path.abspath(os.path.join(root, rel)), root))
        links += n
        errors += errs
    for e in errors:
        print(e)
    print("doc links: %d files, %d links, %d broken" % (len(files), links, len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
