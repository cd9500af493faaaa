#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Evaluate a Grafana dashboard's PromQL through Prometheus' HTTP API.

dash_queries.py DASHBOARD PROM_URL VAR=VALUE... [--positive TITLE]...

First the dashboard's shape: valid JSON, unique panel ids, every panel but
a row has a title, the ${datasource} data source and at least one target
with an expression, and fits the 24-column grid; every query variable's
label_values(METRIC, LABEL) has values in Prometheus. Then every target's
expression, its $VARIABLES (and ${VARIABLE}) replaced by the VALUEs given,
goes to /api/v1/query: it must return a non-empty result. A panel named by
--positive must also have a value above zero in each of its targets.
Prints one line per check, "ok ..." or "FAIL ..."; exit 1 if any failed.
"""
import json
import re
import sys
import urllib.parse
import urllib.request


def query(url, path, params):
    with urllib.request.urlopen(f'{url}{path}?{urllib.parse.urlencode(params)}',
                                timeout=30) as r:
        return json.load(r)


def subst(expr, values):
    # longest names first: $__rate_interval before a $__rate, say
    for k in sorted(values, key=len, reverse=True):
        expr = expr.replace('${' + k + '}', values[k]).replace('$' + k, values[k])
    return expr


def main(argv):
    dash_path, url = argv[0], argv[1]
    values, positive, rest = {}, set(), argv[2:]
    while rest:
        a = rest.pop(0)
        if a == '--positive':
            positive.add(rest.pop(0))
        else:
            k, _, v = a.partition('=')
            values[k] = v
    d = json.load(open(dash_path))
    out = []

    def check(ok, what):
        out.append(('ok   ' if ok else 'FAIL ') + what)

    panels = d.get('panels', [])
    ids = [p.get('id') for p in panels]
    check(len(ids) == len(set(ids)) and None not in ids,
          f'{len(panels)} panels, unique ids')
    names = {v['name'] for v in d.get('templating', {}).get('list', [])}
    check('datasource' in names, 'a datasource variable (provisioning-ready: no fixed uid)')
    for v in d['templating']['list']:
        if v.get('type') != 'query':
            continue
        q = v['query']['query'] if isinstance(v['query'], dict) else v['query']
        m = re.fullmatch(r'label_values\((\w+),\s*(\w+)\)', q)
        vals = m and query(url, f'/api/v1/label/{m.group(2)}/values',
                           {'match[]': m.group(1)})['data']
        check(bool(vals), f'variable ${v["name"]}: {q} = {vals}')
    exprs = 0
    for p in panels:
        if p.get('type') == 'row':
            continue
        t = p.get('title', '')
        g = p.get('gridPos', {})
        check(bool(t) and p.get('datasource', {}).get('uid') == '${datasource}'
              and p.get('targets') and g.get('x', 99) + g.get('w', 99) <= 24,
              f'panel "{t}": title, data source ${{datasource}}, targets, on the grid')
        for tg in p.get('targets', []):
            exprs += 1
            e = subst(tg.get('expr', ''), values)
            left = re.findall(r'\$\{?\w+', e)
            try:
                r = query(url, '/api/v1/query', {'query': e})
                res = r['data']['result'] if r.get('status') == 'success' else []
                err = r.get('error', '')
            except Exception as ex:  # a 400 for a syntax error, say
                res, err = [], str(ex)
            vals = [float(s['value'][1]) for s in res] if isinstance(res, list) else []
            ok = bool(res) and not left and (t not in positive or max(vals, default=0) > 0)
            check(ok, f'panel "{t}" {tg.get("refId")}: {len(vals)} series'
                  f'{", max %g" % max(vals) if vals else ""}'
                  f'{" (wanted > 0)" if t in positive else ""}'
                  f'{" unreplaced " + str(left) if left else ""}'
                  f'{" error: " + err if err else ""}: {e}')
    for t in positive - {p.get('title') for p in panels}:
        check(False, f'--positive "{t}": no such panel')
    check(exprs >= 1, f'{exprs} expressions evaluated')
    print('\n'.join(out))
    return 1 if any(o.startswith('FAIL') for o in out) else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
