#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Section-3 manual pages of the C API, from include/hixl/hixl.h.

The header is the reference: its doc comments and prototypes become the
pages, so a page cannot say something the header does not.

  hixl.3            the overview: the header's opening comment (threads,
                    errors, timeouts), its types and constants, and the
                    families of calls
  <first call>.3    one page per family, a "/* ---- Family ---- */" part of
                    the header: the family's own comment, then every call
                    with its comment
  <other call>.3    ".so" links to its family's page, so that every public
                    call name has a page (man 3 hixl_transfer_async)
  man3.am           the list of pages, included by man/Makefile.am

Usage:
  gen_man3.py --version V HEADER OUTDIR            write the pages
  gen_man3.py --version V --check HEADER OUTDIR    compare, write nothing

Standard library only.
"""

import argparse
import os
import re
import sys

SECTION_RE = re.compile(r'^/\* -{4} (.+?) -+ \*/$')


class Item:
    """A declaration with the comment in front of it (or none)."""

    def __init__(self, comment, decl):
        self.comment = comment    # list of lines, or None
        self.decl = decl          # declaration text, as in the header
        self.names = []           # functions it declares
        self.kind = 'other'


class Family:
    def __init__(self, title):
        self.title = title
        self.intro = None         # the family's own /* ... */ comment
        self.items = []


def comment_lines(text):
    """The text of a /* */ or /** */ comment, without its markers."""
    text = re.sub(r'^/\*\*?<?', '', text.strip())
    text = re.sub(r'\*/$', '', text)
    lines = text.split('\n')
    out = []
    for line in lines:
        line = line.rstrip()
        m = re.match(r'^\s*\* ?(.*)$', line)
        if m:
            line = m.group(1)
        else:
            line = line.strip() if not out else line.lstrip()
        out.append(line)
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return out


def read_decl(lines, i):
    """The declaration starting at lines[i]: up to the ';' that ends it
    at brace depth 0, or a #define line.  Returns (text, next index)."""
    if lines[i].startswith('#'):
        return lines[i].rstrip(), i + 1
    depth = 0
    buf = []
    while i < len(lines):
        line = lines[i]
        buf.append(line.rstrip())
        code = re.sub(r'/\*.*?\*/', '', line)
        depth += code.count('{') - code.count('}')
        i += 1
        if depth == 0 and code.rstrip().endswith(';'):
            break
    return '\n'.join(buf), i


def parse(path):
    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')

    # the opening comment: the first block comment after the SPDX line
    i = 1
    while not lines[i].startswith('/*'):
        i += 1
    j = i
    while '*/' not in lines[j]:
        j += 1
    overview = comment_lines('\n'.join(lines[i:j + 1]))
    i = j + 1

    types = []        # items before the first family
    families = []
    cur = None
    pending = None    # a comment waiting for its declaration
    while i < len(lines):
        line = lines[i]
        s = line.strip()
        m = SECTION_RE.match(s)
        if m:
            cur = Family(m.group(1))
            families.append(cur)
            pending = None
            i += 1
            continue
        if s.startswith('#ifdef __cplusplus') and cur is not None:
            break     # the end of the C declarations
        if s.startswith('/*'):
            j = i
            while '*/' not in lines[j]:
                j += 1
            text = comment_lines('\n'.join(lines[i:j + 1]))
            doc = s.startswith('/**')
            i = j + 1
            nxt = lines[i].strip() if i < len(lines) else ''
            if not doc and cur is not None and not nxt:
                # a family's own comment, standing alone
                cur.intro = text if cur.intro is None else cur.intro + [''] + text
                pending = None
            elif cur is None and not doc:
                pending = None   # guards, licence, inline notes
            else:
                pending = text
            continue
        if not s:
            pending = None
            i += 1
            continue
        if (s.startswith('HIXL_API') or s.startswith('typedef') or
                s.startswith('enum') or
                (s.startswith('#define HIXL_') and cur is None and
                 pending is not None) or
                (s.startswith('#define HIXL_') and cur is None and
                 re.match(r'#define HIXL_(NOTIFY|ENGINE)_', s))):
            decl, i = read_decl(lines, i)
            item = Item(pending, decl)
            pending = None
            flat = re.sub(r'/\*.*?\*/', '', decl, flags=re.S)
            if flat.startswith('HIXL_API'):
                item.kind = 'call'
                m = re.search(r'\b(hixl_\w+)\s*\(', flat)
                item.names = [m.group(1)]
            else:
                item.kind = 'type'
            if cur is None:
                types.append(item)
            else:
                cur.items.append(item)
            continue
        i += 1
    return overview, types, families


# ---- roff --------------------------------------------------------------------

def esc(text):
    """Escape a line of text for roff."""
    text = text.replace('\\', '\\e')
    text = text.replace('-', '\\-')
    if text.startswith('.') or text.startswith("'"):
        text = '\\&' + text
    return text


def prose(lines):
    """Comment lines as paragraphs; indented lines (code, lists of
    steps) are kept as they are."""
    out = []
    para = []
    block = []

    def flush_para():
        if para:
            out.append('.PP')
            out.extend(esc(l.strip()) for l in para)
            para.clear()

    def flush_block():
        if block:
            out.append('.PP')
            out.append('.RS 4')
            out.append('.nf')
            out.extend(esc(l) for l in block)
            out.append('.fi')
            out.append('.RE')
            block.clear()

    for line in lines:
        if not line.strip():
            flush_para()
            flush_block()
        elif line.startswith('  ') and not para:
            block.append(line[2:])
        elif line.startswith(' - ') or line.startswith('- '):
            flush_para()
            flush_block()
            para.append(line)
        else:
            if block:
                flush_block()
            para.append(line)
    flush_para()
    flush_block()
    # a list item per paragraph
    return out


def code(text):
    """A declaration as in the header; a call's without HIXL_API and with
    its continuation lines indented by eight spaces (the header aligns
    them to the HIXL_API line)."""
    call = text.startswith('HIXL_API ')
    out = []
    for k, line in enumerate(text.split('\n')):
        if call and k == 0:
            line = line[len('HIXL_API '):]
        elif call:
            line = '        ' + line.strip()
        out.append(esc(line))
    return out


def page_head(name, version, title):
    return ['.\\" SPDX-License-Identifier: BSD-3-Clause',
            '.\\" Generated by man/gen_man3.py from include/hixl/hixl.h:',
            '.\\" edit the header\'s comments, not this file.',
            '.TH %s 3 "" "libhixl-ucx %s" "libhixl-ucx Manual"'
            % (name.upper(), version),
            '.nh',
            '.ad l',
            '.SH NAME']


def family_page(fam, families, version):
    calls = [n for it in fam.items for n in it.names]
    name = calls[0]
    out = page_head(name, version, fam.title)
    out.append(esc(', '.join(calls)) + ' \\- ' + esc(fam.title.lower()) +
               ' (libhixl\\-ucx)')
    out.append('.SH SYNOPSIS')
    out.append('.nf')
    out.append('.B #include <hixl/hixl.h>')
    for it in fam.items:
        out.append('.PP')
        out.extend(code(it.decl))
    out.append('.fi')
    out.append('.PP')
    out.append('Link with \\fI\\-lhixl\\-ucx\\fP '
               '(\\fBpkg\\-config \\-\\-libs hixl\\-ucx\\fP).')
    out.append('.SH DESCRIPTION')
    if fam.intro:
        out.extend(prose(fam.intro))
    # each documented item, with the undocumented calls after it joined
    groups = []
    for it in fam.items:
        if it.comment is None and groups:
            groups[-1].append(it)
        else:
            groups.append([it])
    for g in groups:
        heads = []
        for it in g:
            if it.kind == 'call':
                heads.append(it.names[0] + '()')
            else:
                m = re.findall(r'\b(hixl_\w+_t)\b', it.decl)
                heads.append(m[-1] if m else 'types')
        out.append('.SS ' + esc(', '.join(heads)))
        if g[0].comment:
            out.extend(prose(g[0].comment))
        if len(g) > 1 and g[0].comment is not None:
            rest = [h for h in heads[1:]]
            out.append('.PP')
            out.append(esc(', '.join(rest)) + ' has no comment of its own in '
                       'the header; the calls above say when to use it.')
    out.append('.SH SEE ALSO')
    refs = ['hixl'] + [f.items and [n for it in f.items for n in it.names][0]
                       for f in families if f is not fam]
    out.append(',\n'.join('.BR %s (3)' % esc(r) for r in refs))
    return name, out


def overview_page(overview, types, families, version):
    out = page_head('hixl', version, 'overview')
    out.append('hixl \\- libhixl\\-ucx: the hixl point\\-to\\-point '
               'transfer API over UCX')
    out.append('.SH SYNOPSIS')
    out.append('.nf')
    out.append('.B #include <hixl/hixl.h>')
    out.append('.fi')
    out.append('.PP')
    out.append('Link with \\fI\\-lhixl\\-ucx\\fP '
               '(\\fBpkg\\-config \\-\\-cflags \\-\\-libs hixl\\-ucx\\fP).')
    out.append('.SH DESCRIPTION')
    out.extend(prose(overview))
    out.append('.SH CALLS')
    for fam in families:
        calls = [n for it in fam.items for n in it.names]
        out.append('.TP')
        out.append('.BR %s (3)' % esc(calls[0]))
        out.append(esc(fam.title) + ': ' + esc(', '.join(calls)) + '.')
    out.append('.SH TYPES AND CONSTANTS')
    for it in types:
        out.append('.PP')
        out.append('.RS 4')
        out.append('.nf')
        out.extend(code(it.decl))
        out.append('.fi')
        out.append('.RE')
        if it.comment:
            out.extend(prose(it.comment))
    out.append('.SH SEE ALSO')
    refs = [[n for it in f.items for n in it.names][0] for f in families]
    out.append(',\n'.join('.BR %s (3)' % esc(r) for r in refs) + ',')
    out.append('.BR hixl_info (1)')
    return out


def generate(header, version):
    overview, types, families = parse(header)
    files = {}
    files['man3/hixl.3'] = '\n'.join(
        overview_page(overview, types, families, version)) + '\n'
    for fam in families:
        name, out = family_page(fam, families, version)
        files['man3/%s.3' % name] = '\n'.join(out) + '\n'
        for it in fam.items:
            for n in it.names:
                if n != name:
                    files['man3/%s.3' % n] = '.so man3/%s.3\n' % name
    pages = sorted(files)
    am = ['# SPDX-License-Identifier: BSD-3-Clause',
          '# Generated by man/gen_man3.py: the section-3 pages.',
          'MAN3_PAGES = \\']
    am += ['\t%s%s' % (p, ' \\' if k < len(pages) - 1 else '')
           for k, p in enumerate(pages)]
    files['man3.am'] = '\n'.join(am) + '\n'
    return files


def main():
    ap = argparse.ArgumentParser(description='section-3 pages from hixl.h')
    ap.add_argument('--version', required=True)
    ap.add_argument('--check', action='store_true',
                    help='compare with OUTDIR, write nothing')
    ap.add_argument('header')
    ap.add_argument('outdir')
    args = ap.parse_args()

    files = generate(args.header, args.version)
    if args.check:
        stale = []
        for rel, text in files.items():
            path = os.path.join(args.outdir, rel)
            try:
                with open(path, encoding='utf-8') as f:
                    if f.read() != text:
                        stale.append(rel)
            except OSError:
                stale.append(rel)
        mandir = os.path.join(args.outdir, 'man3')
        if os.path.isdir(mandir):
            for n in os.listdir(mandir):
                if 'man3/' + n not in files:
                    stale.append('man3/' + n + ' (no longer generated)')
        if stale:
            print('gen_man3.py: out of date with %s: %s' %
                  (args.header, ', '.join(sorted(stale))), file=sys.stderr)
            print('gen_man3.py: run "make -C man update-man3" and commit '
                  'man/man3 and man/man3.am', file=sys.stderr)
            return 1
        print('gen_man3.py: %d files up to date' % len(files))
        return 0
    os.makedirs(os.path.join(args.outdir, 'man3'), exist_ok=True)
    for rel, text in files.items():
        with open(os.path.join(args.outdir, rel), 'w', encoding='utf-8') as f:
            f.write(text)
    mandir = os.path.join(args.outdir, 'man3')
    for n in os.listdir(mandir):
        if 'man3/' + n not in files:
            os.remove(os.path.join(mandir, n))
    return 0


if __name__ == '__main__':
    sys.exit(main())
