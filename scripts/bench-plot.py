#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""SVG plots of a `make bench` run: bench-plot.py RESULTS.json OUTDIR.

Reads BUILD/bench/results.json (scripts/bench.sh) and writes, for each
part the run has, gnuplot SVGs into OUTDIR:

  kernel-ring-size.svg  per-packet cost of each path against the ring size,
                        the baseline beside each (median, min-max bars)
  kernel-flows.svg      each path with 1 flow and with 65,536 flows,
                        director beside baseline, on the largest ring
  encap.svg             per forwarding method (l2, ipip, gue), director
                        beside its baseline
  search.svg            userspace ring search against ring size, indexed
                        beside a plain binary search
  quality-balance.svg   peak / mean share against nodes: ring, Maglev, modulo
  quality-movement.svg  keyspace moved on a node's add and remove, over the
                        ideal, against nodes

Prints one line per file written. Exit 0 when every part present was
plotted (a run of other parts only has nothing to plot: said on stderr),
1 when gnuplot failed or a part present had no row to plot, 2 on usage. The numbers are the run's: nothing is smoothed or dropped.
"""
import json
import os
import subprocess
import sys
import tempfile

TERM = ("set terminal svg size 900,520 fixed enhanced font 'Helvetica,13' "
        "background '#ffffff'\n")
STYLE = """set grid ytics lc rgb '#dddddd'
set key outside right top vertical Left reverse noenhanced
set border 3
set tics nomirror
"""
COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b',
          '#17becf', '#7f7f7f']


def med(x):
    return x['median'], x['min'], x['max']


def label_of(meta):
    """Where the figures come from, for every plot's subtitle."""
    if not meta:
        return ''
    return (f"{meta.get('cpus', '?')} CPUs ({meta.get('cpu', '?')}), commit "
            f"{meta.get('commit', '?')}, load average {meta.get('loadavg_start', '?')}")


def size_tics(sizes):
    """gnuplot xtics naming ring sizes 1k, 64k, 1M."""
    def name(n):
        return f'{n >> 20}M' if n >= 1 << 20 else f'{n >> 10}k' if n >= 1024 else str(n)
    return 'set xtics (' + ', '.join(f'"{name(n)}" {n}' for n in sorted(set(sizes))) + ')\n'


def gnuplot(title, sub, script, out):
    r = subprocess.run(['gnuplot'], input=TERM + f"set output '{out}'\n" +
                       STYLE + f"set title {q(title + chr(10) + sub)} noenhanced\n" +
                       script, text=True, capture_output=True)
    if r.returncode or not os.path.getsize(out):
        sys.stderr.write(f'bench-plot: gnuplot failed for {out}:\n{r.stderr}')
        return False
    return True


def write(tmp, name, rows):
    path = os.path.join(tmp, name)
    with open(path, 'w') as f:
        for r in rows:
            f.write('\t'.join(str(v) for v in r) + '\n')
    return path


def q(s):
    """A gnuplot string: double quotes, escaped."""
    return '"' + s.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n') + '"'


def kernel_ring_size(k, tmp, out, sub):
    series = {}
    for ring in k.get('rings') or []:
        for r in ring.get('rows') or []:
            if r.get('status') != 'ok' or 'director_ns' not in r:
                continue
            key = (r['path'], r['flows'])
            series.setdefault(key, []).append(
                (ring['entries'],) + med(r['director_ns']) + med(r['baseline_ns']))
    if not series:
        return False
    tics = size_tics(r[0] for rows in series.values() for r in rows)
    plots = []
    for i, (key, rows) in enumerate(sorted(series.items())):
        f = write(tmp, f'kr{i}.tsv', sorted(rows))
        name = f"{key[0]}, {key[1]:,} flow{'s' if key[1] > 1 else ''}"
        c = COLORS[i % len(COLORS)]
        plots.append(f"{q(f)} u 1:2:3:4 w yerrorlines lw 2 pt 7 ps 0.6 lc rgb '{c}' t {q(name)}")
        plots.append(f"{q(f)} u 1:5:6:7 w yerrorlines dt 2 lw 1 pt 6 ps 0.6 lc rgb '{c}' t {q('  baseline')}")
    return gnuplot('Per-packet cost by path against ring size (bpf_prog_test_run)', sub, f"""set logscale x 2
{tics}set xlabel 'ring entries'
set ylabel 'ns per packet (median, min-max)'
set yrange [0:*]
plot {', '.join(plots)}
""", out)


def kernel_flows(k, tmp, out, sub):
    rings = [r for r in k.get('rings') or [] if r.get('rows')]
    if not rings:
        return False
    # the ring with the most rows (the 1M ring has only its new-flow row),
    # the 64k one of those (the targets' ring), else the largest
    ring = max(rings, key=lambda r: (len(r['rows']), r['entries'] == 65536, r['entries']))
    paths = []
    for r in ring['rows']:
        if r.get('status') == 'ok' and 'director_ns' in r and r['path'] not in paths:
            paths.append(r['path'])
    rows = []
    for p in paths:
        by = {r['flows']: r for r in ring['rows']
              if r['path'] == p and r.get('status') == 'ok' and 'director_ns' in r}
        one, many = by.get(1), by.get(65536)
        rows.append((q(p.replace(' (', chr(10) + '(')),
                     one['baseline_ns']['median'] if one else '-',
                     one['director_ns']['median'] if one else '-',
                     many['baseline_ns']['median'] if many else '-',
                     many['director_ns']['median'] if many else '-'))
    if not rows:
        return False
    f = write(tmp, 'kf.tsv', rows)
    return gnuplot(f"Per-packet cost, 1 flow and 65,536 flows ({ring['entries']:,}-entry ring)", sub, f"""set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set datafile missing '-'
set bmargin 5
set ylabel 'ns per packet (median)'
set yrange [0:*]
set xtics noenhanced
plot {q(f)} u 2:xtic(1) lc rgb '#aec7e8' t 'baseline, 1 flow', \
     '' u 3 lc rgb '#1f77b4' t 'director, 1 flow', \
     '' u 4 lc rgb '#ff9896' t 'baseline, 65,536 flows', \
     '' u 5 lc rgb '#d62728' t 'director, 65,536 flows'
""", out)


def encap(e, tmp, out, sub):
    rows = [(q(m['method'].replace(' (', chr(10) + '(')), m['baseline_ns']['median'],
             m['director_ns']['median'])
            for m in e.get('methods') or [] if m.get('status') == 'ok']
    if not rows:
        return False
    f = write(tmp, 'en.tsv', rows)
    return gnuplot('Per-packet cost by forwarding method (new flow, TCP SYN)', sub, f"""set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set bmargin 5
set ylabel 'ns per packet (median)'
set yrange [0:*]
set xtics noenhanced
plot {q(f)} u 2:xtic(1) lc rgb '#aec7e8' t 'baseline (same forwarding work)', \
     '' u 3 lc rgb '#1f77b4' t 'director'
""", out)


def search(s, tmp, out, sub):
    rows = [(r['entries'],) + med(r['indexed_ns']) + med(r['plain_ns'])
            for r in s.get('rings') or [] if 'indexed_ns' in r and 'plain_ns' in r]
    if not rows:
        return False
    f = write(tmp, 'se.tsv', sorted(rows))
    tics = size_tics(r[0] for r in rows)
    return gnuplot('Ring search in userspace, random keys', sub, f"""set logscale xy 2
{tics}set xlabel 'ring entries'
set ylabel 'ns per lookup (median, min-max)'
plot {q(f)} u 1:2:3:4 w yerrorlines lw 2 pt 7 lc rgb '#1f77b4' t 'indexed (rm_search.h)', \
     '' u 1:5:6:7 w yerrorlines dt 2 lw 2 pt 6 lc rgb '#7f7f7f' t 'plain binary search'
""", out)


def quality(qd, tmp, out_bal, out_mov, sub):
    schemes = {}
    for r in qd.get('rows') or []:
        # one curve per scheme and size; modulo's size is N itself
        size = 'hash % N' if r['size'].startswith('hash %') else r['size']
        schemes.setdefault((r['scheme'], size), []).append(r)
    if not schemes:
        return False
    bal, mov = [], []
    for i, ((scheme, size), rows) in enumerate(sorted(schemes.items())):
        c = COLORS[i % len(COLORS)]
        rows.sort(key=lambda r: r['nodes'])
        f = write(tmp, f'q{i}.tsv', [
            (r['nodes'], r['peak_to_mean'], r['moved_on_add'] / r['moved_on_add_ideal'],
             r['moved_on_remove'] / r['moved_on_remove_ideal']) for r in rows])
        bal.append(f"{q(f)} u 1:2 w linespoints lw 2 pt 7 lc rgb '{c}' t {q(f'{scheme}, {size}')}")
        mov.append(f"{q(f)} u 1:3 w linespoints lw 2 pt 7 lc rgb '{c}' t {q(f'{scheme}, {size}: add')}")
        mov.append(f"{q(f)} u 1:4 w linespoints dt 2 lw 2 pt 6 lc rgb '{c}' t {q(f'{scheme}, {size}: remove')}")
    ok = gnuplot("Balance: the busiest node's share over the mean (exact, all 2^32 keys)", sub, f"""set logscale x 2
set xlabel 'nodes'
set ylabel 'peak / mean share (1 = perfect)'
plot {', '.join(bal)}
""", out_bal)
    return gnuplot('Movement: keyspace moved when a node joins or leaves, over the ideal', sub, f"""set logscale xy 2
set xlabel 'nodes'
set ylabel 'moved / ideal (1 = only the node''s fair share)'
plot {', '.join(mov)}
""", out_mov) and ok


def main(argv):
    if len(argv) != 2:
        sys.stderr.write('usage: bench-plot.py RESULTS.json OUTDIR\n')
        return 2
    try:
        with open(argv[0]) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        sys.stderr.write(f'bench-plot: {argv[0]}: {e} (a results.json of scripts/bench.sh?)\n')
        return 1
    if not isinstance(d, dict):
        sys.stderr.write(f'bench-plot: {argv[0]}: not a results object\n')
        return 1
    os.makedirs(argv[1], exist_ok=True)
    sub = label_of(d.get('meta'))
    o = lambda n: os.path.join(argv[1], n)  # noqa: E731
    done, failed = [], []
    with tempfile.TemporaryDirectory() as tmp:
        jobs = []
        if d.get('kernel'):
            jobs += [('kernel-ring-size.svg', lambda: kernel_ring_size(d['kernel'], tmp, o('kernel-ring-size.svg'), sub)),
                     ('kernel-flows.svg', lambda: kernel_flows(d['kernel'], tmp, o('kernel-flows.svg'), sub))]
        if d.get('encap'):
            jobs.append(('encap.svg', lambda: encap(d['encap'], tmp, o('encap.svg'), sub)))
        if d.get('search'):
            jobs.append(('search.svg', lambda: search(d['search'], tmp, o('search.svg'), sub)))
        if d.get('quality'):
            jobs.append(('quality-balance.svg quality-movement.svg',
                         lambda: quality(d['quality'], tmp, o('quality-balance.svg'),
                                         o('quality-movement.svg'), sub)))
        for names, job in jobs:
            (done if job() else failed).append(names)
    for names in done:
        for n in names.split():
            print(o(n))
    if failed:
        sys.stderr.write(f'bench-plot: not plotted: {" ".join(failed)}\n')
    if not jobs:
        sys.stderr.write('bench-plot: no part with plots (kernel, encap, search, quality) in this run\n')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
