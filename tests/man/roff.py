# SPDX-License-Identifier: MIT
"""What the man-page checks read of a roff page: plain text and sections."""
import re


def roff_text(s):
    """The page with the escapes the pages use for dashes and fonts turned into plain text."""
    s = s.replace('\\-', '-')
    return re.sub(r'\\f[BIRP]', '', s)


def section(page, name):
    """The body of .SH NAME, up to the next .SH ('' if the page has none)."""
    m = re.search(r'^\.SH "?' + re.escape(name) + r'"?\n(.*?)(?=^\.SH |\Z)', page, re.M | re.S)
    return m.group(1) if m else ''


def tagged(sect):
    """The tag line of every .TP entry of a section."""
    lines = sect.split('\n')
    return [lines[i + 1] for i, line in enumerate(lines[:-1]) if line.startswith('.TP')]
