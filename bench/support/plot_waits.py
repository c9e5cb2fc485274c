# Draws the waits of bench/contention.php (support/plot.php calls it). Reads JSON on stdin:
#   {"out": PNG path, "title": str, "series": [{"label": str, "waits_ms": [float, ...]}, ...]}
# Above: the CDF of each series; below: the share of waits longer than x on a log scale, where the tail (p99, max)
# shows. Both have a log x axis.
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

data = json.load(sys.stdin)
fig, (cdf, tail) = plt.subplots(2, 1, figsize=(9, 8), dpi=110, sharex=True)
for s in data["series"]:
    w = sorted(max(x, 1e-3) for x in s["waits_ms"])
    n = len(w)
    p50, p99 = w[(n + 1) // 2 - 1], w[max(0, -(-99 * n // 100) - 1)]
    label = "%s  (n=%d, median %.3g ms, p99 %.3g ms, max %.3g ms)" % (s["label"], n, p50, p99, w[-1])
    line, = cdf.step(w, [(i + 1) / n for i in range(n)], where="post", label=label)
    # Share of acquires that waited longer than x: the tail, on a log scale.
    tail.step(w, [(n - i - 1) / n if i < n - 1 else 0.5 / n for i in range(n)], where="post", color=line.get_color())
cdf.set_xscale("log")
cdf.set_ylabel("fraction of acquires that waited <= x")
cdf.set_ylim(0, 1.01)
cdf.grid(True, which="both", alpha=0.3)
cdf.set_title(data["title"])
cdf.legend(loc="center left", fontsize=8)
tail.set_yscale("log")
tail.set_ylabel("fraction that waited > x (log)")
tail.set_xlabel("wait per acquire(true), ms (log scale)")
tail.grid(True, which="both", alpha=0.3)
fig.tight_layout()
fig.savefig(data["out"])
