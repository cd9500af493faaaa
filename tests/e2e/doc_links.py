#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The links of README.md and docs/*.md resolve: doc_links.py TOP.

Every relative link [text](path) or [text](path#anchor) outside code names
a file of the tree, and an #anchor of a .md file one of its headings (as
GitHub makes anchors: lowercase, punctuation dropped, spaces to hyphens).
Every docs/*.md is linked from README.md. Prints a one-line summary; exit 1
with one line per broken link otherwise.
"""
import os
import re
import sys

LINK = re.compile(r'\[[^\]]*\]\(([^)\s]+)\)')


def prose(path):
    """The lines outside fenced and indented code blocks, and no code spans."""
    fenced = False
    for n, line in enumerate(open(path, encoding='utf-8'), 1):
        if line.startswith('```'):
            fenced = not fenced
            continue
        if fenced or line.startswith('    '):
            continue
        yield n, re.sub(r'`[^`]*`', '', line)


def anchors(path):
    out = set()
    for _, line in prose(path):
        m = re.match(r'#+ (.*)', line)
        if m:
            slug = re.sub(r'[^\w\- ]', '', m.group(1).strip().lower())
            out.add(slug.replace(' ', '-'))
    return out


def main(top):
    docs = sorted('docs/' + f for f in os.listdir(os.path.join(top, 'docs'))
                  if f.endswith('.md'))
    bad, count, from_readme = [], 0, set()
    for doc in ['README.md'] + docs:
        for n, line in prose(os.path.join(top, doc)):
            for target in LINK.findall(line):
                if re.match(r'[a-z]+:', target):
                    continue  # http:, https:, mailto:
                count += 1
                path, _, anchor = target.partition('#')
                full = os.path.normpath(os.path.join(top, os.path.dirname(doc), path)) \
                    if path else os.path.join(top, doc)
                rel = os.path.relpath(full, top)
                if not os.path.exists(full):
                    bad.append(f'{doc}:{n}: {target}: no file {rel}')
                elif anchor and full.endswith('.md') and anchor not in anchors(full):
                    bad.append(f'{doc}:{n}: {target}: no heading #{anchor} in {rel}')
                if doc == 'README.md':
                    from_readme.add(rel)
    for doc in docs:
        if doc not in from_readme:
            bad.append(f'{doc}: not linked from the map in README.md')
    if bad:
        print('\n'.join(bad))
        return 1
    print(f'{count} links in README.md and {len(docs)} documents resolve; '
          f'every document is in the map')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1]))
