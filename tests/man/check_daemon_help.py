#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""barrierd --help and docs/barrierd.8 agree: the same long options, the same exit codes.

    check_daemon_help.py BARRIERD_BIN docs/barrierd.8

The man page's options are the .TP entries of OPTIONS, its exit codes those of EXIT STATUS;
--help's options are every --name it prints, its codes the lines of its "Exit status:" section.
Every option of the man page's SYNOPSIS must be one --help knows.
"""
import re
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from roff import roff_text, section, tagged  # noqa: E402

OPT = re.compile(r'(?<![\w-])--[a-z][a-z-]*')


def main():
    binary, man_path = sys.argv[1], sys.argv[2]
    run = subprocess.run([binary, '--help'], capture_output=True, text=True, timeout=10)
    if run.returncode != 0:
        sys.exit('barrierd --help exited %d: %s' % (run.returncode, run.stderr))
    help_text = run.stdout
    page = roff_text(open(man_path, encoding='utf-8').read())
    bad = []
    for name in ('SYNOPSIS', 'OPTIONS', 'EXIT STATUS'):
        if not section(page, name):
            bad.append('%s has no %s section' % (man_path, name))

    h_opts = set(OPT.findall(help_text))
    m_opts = set()
    for tag in tagged(section(page, 'OPTIONS')):
        m_opts |= set(OPT.findall(tag))
    if h_opts != m_opts:
        bad.append('options only in --help: %s; only in the man page: %s' %
                   (sorted(h_opts - m_opts), sorted(m_opts - h_opts)))
    synopsis = set(OPT.findall(section(page, 'SYNOPSIS')))
    if synopsis - h_opts:
        bad.append('SYNOPSIS options --help does not know: %s' % sorted(synopsis - h_opts))

    if 'Exit status:' not in help_text:
        bad.append('--help has no "Exit status:" section')
        h_codes = set()
    else:
        tail = help_text.split('Exit status:', 1)[1].split('\n\n', 1)[0]
        h_codes = set(re.findall(r'^  (\d+) ', tail, re.M))
    m_codes = set()
    for tag in tagged(section(page, 'EXIT STATUS')):
        m = re.fullmatch(r'\.B (\d+)', tag)
        if m:
            m_codes.add(m.group(1))
    if not h_codes or h_codes != m_codes:
        bad.append('exit codes: --help %s, man page %s' % (sorted(h_codes, key=int),
                                                          sorted(m_codes, key=int)))

    for b in bad:
        print('FAIL: ' + b, file=sys.stderr)
    if bad:
        return 1
    print('barrierd --help and %s agree: %d options, exit codes %s' %
          (man_path, len(h_opts), ' '.join(sorted(h_codes, key=int))))
    return 0


if __name__ == '__main__':
    sys.exit(main())
