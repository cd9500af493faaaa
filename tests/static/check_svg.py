#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""check_svg.py SVG TITLE [LEGEND...]: SVG is a plot worth showing.

Well-formed XML whose root is an <svg> with a width, a height and a
viewBox; its text holds TITLE and every LEGEND; it draws at least one
polyline or path of four points or more (a curve or a bar, not only axes).
Prints what it found; exit 1 when anything is missing.
"""
import re
import sys
import xml.etree.ElementTree as ET


def main(path, title, *legends):
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as e:
        print(f'{path}: not well-formed XML: {e}')
        return 1
    bad = []
    if not root.tag.endswith('}svg') and root.tag != 'svg':
        bad.append(f'root element {root.tag}, not svg')
    for a in ('width', 'height', 'viewBox'):
        if not root.get(a):
            bad.append(f'no {a}')
    text = ' '.join(t.strip() for e in root.iter() if e.tag.endswith('text')
                    for t in e.itertext())
    for want in (title,) + legends:
        if want not in text:
            bad.append(f'no text "{want}"')
    shapes = 0
    for e in root.iter():
        pts = e.get('points') or e.get('d') or ''
        if len(re.findall(r'-?\d+(?:\.\d+)?[ ,]+-?\d+(?:\.\d+)?', pts)) >= 4:
            shapes += 1
    if shapes < 2:
        bad.append(f'{shapes} shapes of 4 points or more')
    print(f'{path}: {"; ".join(bad) if bad else f"svg, title, {len(legends)} legend entries, {shapes} shapes"}')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(*sys.argv[1:]) if len(sys.argv) > 2 else 2)
