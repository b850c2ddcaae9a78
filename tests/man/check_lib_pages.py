#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every API function of libbarrierd has a section-3 page, and each page lists its errors.

    check_lib_pages.py LIBBARRIERD_SO MAN3_DIR HEADER...

The API is every symbol the built library exports (nm -D --defined-only) and every static
inline barrierd_* function the public headers define.  For each function F:
  - MAN3_DIR/F.3 exists: a page, or a `.so man3/PAGE.3` link to one that exists;
  - the page's NAME and SYNOPSIS name F;
  - its ERRORS section names every errno (EINVAL, ...) that the header's comment on F names.
A header comment belongs to the declarations that follow it up to the next blank line.  Every
name a page's NAME lists must be an API function (no page outlives its function), and every
file in MAN3_DIR must be a function's or a page's that links point to.
"""
import errno
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from roff import roff_text, section  # noqa: E402

ERRNOS = {n for n in dir(errno) if re.fullmatch(r"E[A-Z0-9]+", n)}
DECL = re.compile(r'^(?![\s#])(?!typedef).*?\b(barrierd_\w+)\s*\(')
INLINE = re.compile(r'^static inline\b.*?\b(barrierd_\w+)\s*\(')


def exported(lib):
    out = subprocess.run(['nm', '-D', '--defined-only', lib], capture_output=True, text=True,
                         check=True, timeout=30).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in 'TtWi':
            names.add(parts[2].split('@')[0])
    return names


def header_docs(path):
    """{function: the comment above its declaration}, and the set of inline functions."""
    docs, inline = {}, set()
    comment, in_comment, buf = '', False, []
    for line in open(path, encoding='utf-8'):
        if in_comment:
            buf.append(line)
            if '*/' in line:
                in_comment, comment = False, ''.join(buf)
            continue
        if line.lstrip().startswith('/*') and not line.startswith((' ', '\t')):
            buf = [line]
            if '*/' in line:
                comment = line
            else:
                in_comment = True
            continue
        if not line.strip():
            comment = ''
            continue
        m = DECL.match(line)
        if m:
            docs[m.group(1)] = comment
            if INLINE.match(line):
                inline.add(m.group(1))
    return docs, inline


def main():
    lib, man3, headers = sys.argv[1], sys.argv[2], sys.argv[3:]
    bad = []
    docs, inline = {}, set()
    for h in headers:
        d, i = header_docs(h)
        docs.update(d)
        inline |= i
    symbols = exported(lib)
    for s in sorted(symbols - set(docs)):
        bad.append('%s is exported but declared in no public header' % s)
    api = symbols | inline

    files = {f[:-2] for f in os.listdir(man3) if f.endswith('.3')}
    pages, targets = {}, set()
    for f in sorted(files):
        text = open(os.path.join(man3, f + '.3'), encoding='utf-8').read()
        m = re.fullmatch(r'\.so man3/(\w+)\.3\n', text)
        if m:
            targets.add(m.group(1))
            if m.group(1) not in files:
                bad.append('%s.3 links to a missing man3/%s.3' % (f, m.group(1)))
            pages[f] = m.group(1)
        elif text.startswith('.so'):
            bad.append('%s.3: a link page must be the one line ".so man3/PAGE.3"' % f)
        else:
            pages[f] = f
    for f, target in pages.items():
        if pages.get(target, target) != target:
            bad.append('%s.3 links to %s.3, itself a link' % (f, target))
        if f != target and f not in api:
            bad.append('%s.3 is a link for a name that is not an API function' % f)

    texts = {p: roff_text(open(os.path.join(man3, p + '.3'), encoding='utf-8').read())
             for p in set(pages.values()) if p in files}
    for p, text in sorted(texts.items()):
        if p == 'libbarrierd':
            continue
        named = set(re.findall(r'\b(barrierd_\w+)', section(text, 'NAME')))
        for n in sorted(named - api):
            bad.append('%s.3 names %s, which is not an API function' % (p, n))
        if p not in api and p not in targets:
            bad.append('%s.3 is neither a function\'s page nor one that links point to' % p)
        if not section(text, 'ERRORS').strip():
            bad.append('%s.3 has no ERRORS section' % p)

    for fn in sorted(api):
        if fn not in pages:
            bad.append('%s has no page or link (%s/%s.3)' % (fn, man3, fn))
            continue
        text = texts.get(pages[fn])
        if text is None:
            continue
        for sect in ('NAME', 'SYNOPSIS'):
            if not re.search(r'\b%s\b' % fn, section(text, sect)):
                bad.append('%s.3 does not name %s in its %s' % (pages[fn], fn, sect))
        documented = set(re.findall(r'\b(E[A-Z0-9]+)\b', docs.get(fn, ''))) & ERRNOS
        listed = set(re.findall(r'\b(E[A-Z0-9]+)\b', section(text, 'ERRORS')))
        for e in sorted(documented - listed):
            bad.append('%s: the header documents %s, %s.3\'s ERRORS does not' %
                       (fn, e, pages[fn]))

    for b in bad:
        print('FAIL: ' + b, file=sys.stderr)
    if bad:
        return 1
    print('%d API functions (%d exported, %d inline), %d pages, %d links: every function has '
          'its page and every errno its header documents' %
          (len(api), len(symbols), len(inline), len(texts), len(pages) - len(texts)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
