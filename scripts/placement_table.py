#!/usr/bin/env python3
"""The placement benchmark of docs/placement.md: `memfold place` on MiniMalloc's 11 challenging
instances (within their 1 MiB capacity, and minimising), on memfold's own exported problems
(every shared model's greedy and diagonal plans) and on large synthetic training-step problems
(scripts/placement_problems.py). Prints Markdown tables; each placement is checked here, pair
by pair, against the problem file.

With MINIMALLOC=path/to/minimalloc (scripts/build_minimalloc.sh builds it from its repository)
the challenging instances run through MiniMalloc too, in the same run, and its placements are
checked the same way; both columns of seconds are CPU time (user + system) of the process.

usage: [MINIMALLOC=BINARY] placement_table.py MEMFOLD_BINARY
"""
import bisect
import csv
import io
import json
import os
import resource
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "..", "shared")
CAPACITY = 1 << 20


def rows_of(text):
    return list(csv.DictReader(io.StringIO(text)))


def allowed(a, b, rows, spans):
    """Whether row a's `overlaps` lets it overlap the start of row b (b dies where a is created,
    and b starts no lower than a's end less the allowance)."""
    for pair in (rows[a].get("overlaps") or "").split():
        ident, size = pair.rsplit(":", 1)
        if ident == rows[b]["id"] and spans[b][1] - 1 == spans[a][0] and \
                spans[b][2] >= spans[a][3] - int(size):
            return True
    return False


def check_pairwise(rows, spans, capacity):
    """The check for problems with overlap allowances: every pair, O(n^2)."""
    for k, (lower, upper, start, end) in enumerate(spans):
        assert start >= 0 and (capacity is None or end <= capacity), f"row {k} outside"
        for j in range(k):
            lo, up, s, e = spans[j]
            if lower < up and lo < upper and start < e and s < end and start != end and s != e:
                assert allowed(k, j, rows, spans) or allowed(j, k, rows, spans), \
                    f"rows {j} and {k} overlap"


def check(problem_text, placed_text, capacity):
    """Every buffer within [0, capacity), no two live together sharing a byte: a sweep over
    time keeping the live buffers sorted by offset, each new one checked against its two
    neighbours in memory."""
    rows = rows_of(placed_text)
    assert len(rows) == len(rows_of(problem_text)), "row count changed"
    spans = [(int(r["lower"]), int(r["upper"]), int(r["offset"]), int(r["offset"]) + int(r["size"]))
             for r in rows]
    if any(r.get("overlaps") for r in rows):
        check_pairwise(rows, spans, capacity)
        return
    events = sorted([(lo, 1, k) for k, (lo, _, _, _) in enumerate(spans)] +
                    [(up, 0, k) for k, (_, up, _, _) in enumerate(spans)])
    live = []  # (start, end, k), sorted; disjoint while the placement is valid
    for _, kind, k in events:
        _, _, start, end = spans[k]
        if start == end:  # an empty buffer shares no byte
            continue
        if kind == 0:
            live.pop(bisect.bisect_left(live, (start, end, k)))
            continue
        assert start >= 0 and (capacity is None or end <= capacity), f"row {k} outside"
        i = bisect.bisect_left(live, (start, end, k))
        assert i == 0 or live[i - 1][1] <= start, f"rows {live[i - 1][2]} and {k} overlap"
        assert i == len(live) or end <= live[i][0], f"rows {live[i][2]} and {k} overlap"
        live.insert(i, (start, end, k))


def place(binary, path, *args):
    with tempfile.NamedTemporaryFile(suffix=".csv") as out:
        run = subprocess.run([binary, "place", path, "--json", "-o", out.name, *args],
                             capture_output=True, text=True, check=False)
        result = json.loads(run.stdout)
        if os.path.getsize(out.name) > 0:
            with open(path) as problem, open(out.name) as placed:
                check(problem.read(), placed.read(), result.get("capacity"))
        return result


def cpu_seconds(command):
    """Runs `command` and returns its CPU time (user + system), from the children's rusage."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, capture_output=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def minimalloc(binary, path, capacity=CAPACITY, timeout=None):
    """MiniMalloc within the capacity: (fits, CPU seconds), its placement checked here; with a
    timeout (wall seconds) it is stopped there."""
    with tempfile.NamedTemporaryFile(suffix=".csv") as out:
        command = [binary, f"--capacity={capacity}", f"--input={path}", f"--output={out.name}"]
        seconds = cpu_seconds((["timeout", str(timeout)] if timeout else []) + command)
        with open(path) as problem, open(out.name) as placed:
            text = placed.read()
            if not text:
                return False, seconds
            check(problem.read(), text, capacity)
        return True, seconds


def table(header, rows):
    print("| " + " | ".join(h.lstrip(">") for h in header) + " |")
    print("|" + "|".join("--:" if h.startswith(">") else "---" for h in header) + "|")
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")
    print()


def gap(r):
    return f"{100 * r['gap_to_lower_bound']:.3f} %"


def verdict(r):
    """'yes' at the bound (within memfold's 16 B alignment); 'proven, bound +X %' when the
    search proved a plan above a loose bound optimal; else the gap to the bound."""
    if not r["optimal"]:
        return gap(r)
    bound = r["lower_bound"] if "lower_bound" in r else r["lower_bound_bytes"]  # place, plan
    at_bound = r["arena_bytes"] - bound < 16  # memfold's alignment
    return "yes" if at_bound else f"proven, bound +{gap(r)}"


def challenging(binary):
    folder = os.path.join(SHARED, "placement")
    anchor = os.environ.get("MINIMALLOC")
    rows, totals = [], [0.0, 0.0, 0.0]
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".csv"):
            continue
        path = os.path.join(folder, name)
        fit = place(binary, path, "--capacity", str(CAPACITY))
        fit_cpu = cpu_seconds([binary, "place", path, "--capacity", str(CAPACITY)])
        best = place(binary, path, "--time-limit", "10")
        theirs = minimalloc(anchor, path) if anchor else (None, 0.0)
        totals = [totals[0] + fit_cpu, totals[1] + theirs[1], totals[2] + best["seconds"]]
        rows.append([name, fit["buffers"], f"{fit['lower_bound']:,}",
                     "yes" if fit["fits"] else "**no**", f"{fit_cpu:.2f}",
                     {None: "-", True: "yes", False: "**no**"}[theirs[0]],
                     f"{theirs[1]:.2f}" if anchor else "-",
                     f"{best['arena_bytes']:,}", "yes" if best["optimal"] else "no",
                     f"{best['seconds']:.2f}"])
    rows.append(["all 11", "", "", "", f"**{totals[0]:.1f}**", "",
                 f"{totals[1]:.1f}" if anchor else "-", "", "", f"{totals[2]:.1f}"])
    table(["instance", ">buffers", ">lower bound B", "memfold fits 1 MiB", ">CPU s",
           "MiniMalloc fits", ">CPU s", ">memfold smallest arena B", "optimal", ">s"], rows)


def exported(binary):
    models = []
    for folder in ("tflite-micro", "mlcommons-tiny", "tinyengine"):
        for name in sorted(os.listdir(os.path.join(SHARED, "models", folder))):
            if name.endswith(".tflite") and "_vela" not in name:
                models.append(os.path.join(SHARED, "models", folder, name))
    rows = []
    with tempfile.NamedTemporaryFile(suffix=".csv") as problem:
        for model in models:
            for planner in ("greedy", "diagonal"):
                plan = json.loads(subprocess.run(
                    [binary, "plan", model, "--planner", planner, "--json", "--export-problem",
                     problem.name], capture_output=True, text=True, check=True).stdout)
                placed = place(binary, problem.name)
                rows.append([os.path.basename(model), planner, f"{plan['arena_bytes']:,}",
                             verdict(plan), f"{placed['arena_bytes']:,}", verdict(placed),
                             placed["solver"]])
    table(["model", "planner", ">plan B", "plan optimal", ">place B", "place optimal",
           "solver"], rows)


def synthetic(binary):
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for n in (1000, 5000, 25000, 60000):
            path = os.path.join(folder, f"training_{n}.csv")
            with open(path, "w") as f:
                subprocess.run([sys.executable, os.path.join(HERE, "placement_problems.py"),
                                "training", str(n), "2"], stdout=f, check=True)
            r = place(binary, path)
            rows.append([f"training step, {n:,} buffers", f"{r['lower_bound']:,}",
                         f"{r['arena_bytes']:,}", gap(r), r["solver"], f"{r['seconds']:.2f}"])
    table(["problem", ">lower bound B", ">arena B", ">above the bound", "solver", ">s"], rows)


def generated(folder, kind, n, seed):
    path = os.path.join(folder, f"{kind}_{n}_{seed}.csv")
    with open(path, "w") as f:
        subprocess.run([sys.executable, os.path.join(HERE, "placement_problems.py"), kind,
                        str(n), str(seed)], stdout=f, check=True)
    return path


def side_by_side(binary, anchor):
    """Generated problems of 500-5,000 buffers, both solvers asked for a placement at the lower
    bound (where the optimum is for these kinds); MiniMalloc stopped after 30 s."""
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for kind, n, seed in (("packing", 500, 1), ("packing", 500, 2), ("packing", 500, 3),
                              ("packing", 600, 11), ("packing", 1000, 1), ("training", 1000, 3),
                              ("training", 2000, 4), ("training", 5000, 5)):
            path = generated(folder, kind, n, seed)
            bound = place(binary, path, "--time-limit", "0")["lower_bound"]
            ours = place(binary, path, "--capacity", str(bound))
            ours_cpu = cpu_seconds([binary, "place", path, "--capacity", str(bound)])
            fits, theirs_cpu = minimalloc(anchor, path, bound, timeout=30)
            rows.append([f"{kind} {n:,} (seed {seed})", f"{bound:,}",
                         "yes" if ours["fits"] else "no", f"{ours_cpu:.2f}",
                         "yes" if fits else "no", f"{theirs_cpu:.2f}"])
    table(["problem", ">lower bound B", "memfold at the bound", ">CPU s",
           "MiniMalloc at the bound", ">CPU s"], rows)


def main():
    binary = sys.argv[1]
    challenging(binary)
    if os.environ.get("MINIMALLOC"):
        side_by_side(binary, os.environ["MINIMALLOC"])
    exported(binary)
    synthetic(binary)


if __name__ == "__main__":
    main()
