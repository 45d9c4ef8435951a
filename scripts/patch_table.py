#!/usr/bin/env python3
"""The one source of the patch-based inference figures (issue 17, re-measured in issue 32): for
each model, TFLM's greedy arena, memfold's best plan without splitting, and `--planner best`
with the input resident and streamed (--stream-input), at the default 10 % recompute budget and
at 2 % (where cached halos, which recompute nothing, must carry the split). Every figure comes
from `memfold plan --json`; planning time is the wall time of that command. The PyTorch-layout
MobileNet v2 is written with memfold's TFLite writer (`memfold inspect --write-tflite`).

Since issue 33 it also measures msf-CNN's three models (NeurIPS 2025, multi-stage fusion): for
each published (peak bytes, overhead factor F) point, `memfold plan --stream-input
--max-recompute F-1`, and the `--pareto` curve of each model drawn as docs/curve_KEY.svg.

`make patch-table` writes tests/golden/patch_figures.json and regenerates, from it, the table
of docs/patches.md and the README's headline rows between their `<!-- patch-figures -->`
markers; python/tests/test_figures.py checks that both documents carry exactly what the JSON
renders, and re-measures the shared models' rows, so a figure cannot drift from the code.

Usage: scripts/patch_table.py [path/to/memfold]   (re-measure, write JSON and documents)
       scripts/patch_table.py --render            (documents from the JSON only)
"""
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SHARED = os.environ.get("MEMFOLD_SHARED_DIR", os.path.join(ROOT, "..", "shared"))
GOLDEN = os.path.join(ROOT, "tests", "golden", "patch_figures.json")
PYTORCH_V2 = "zoo:mobilenet_v2,dtype=i8,pads=explicit"
# (key, table name, model source); a source "written:SPEC" is SPEC written as a .tflite file.
MODELS = [
    ("mobilenet_v2", "MobileNet v2 1.0/224 int8 (zoo)", "zoo:mobilenet_v2,dtype=i8"),
    ("mobilenet_v2_pytorch", "MobileNet v2 1.0/224 int8, PyTorch layout (a PAD before every "
     "stride-2 window), written as .tflite", "written:" + PYTORCH_V2),
    ("mobilenet_v1", "MobileNet v1 1.0/224 int8 (zoo)", "zoo:mobilenet_v1,dtype=i8"),
    ("mobilenet_v1_025", "MobileNet v1 0.25/128 int8 (zoo, DMO paper)",
     "zoo:mobilenet_v1,alpha=0.25,res=128,dtype=i8"),
    ("tinyengine_vww", "TinyEngine `vww.tflite` (MCUNet vww1)", "shared:tinyengine/vww.tflite"),
    ("person_detect", "TFLM `person_detect.tflite`", "shared:tflite-micro/person_detect.tflite"),
    ("vww_96_int8", "MLPerf Tiny `vww_96_int8.tflite`", "shared:mlcommons-tiny/vww_96_int8.tflite"),
]
# msf-CNN's MBV2 points are for its own network (zoo:msf_mobilenet_v2: int(c*alpha) channels, no
# residual adds, a 448-channel head); memfold is measured on that network and on the published one.
MSF_MBV2_POINTS = [(83133, 1.02), (67996, 1.10), (25803, 1.25), (21389, 1.30), (15199, 1.38),
                   (14132, 1.56), (8560, 1.68)]
# msf-CNN's models and published points (bytes, overhead factor = total MACs / the model's), its
# figures excluding the network input as memfold's streamed arenas do (REFERENCE.md section 7).
MSF_CNN = [
    ("msf_vww", "MCUNetV2-vww-5fps-r80 (TinyEngine `vww.tflite`)", "shared:tinyengine/vww.tflite",
     [(45283, 1.04), (26240, 1.11), (20568, 1.30), (17904, 1.35), (15368, 1.96)]),
    ("msf_mcunet_320kb", "MCUNet-320KB-ImageNet-r176 (`mcunet-320kb-1mb_imagenet.tflite`)",
     "anchor:mcunet-320kb-1mb_imagenet.tflite",
     [(217891, 1.04), (156864, 1.37), (94224, 1.46), (63456, 2.02), (51164, 2.69)]),
    ("msf_mbv2_035_msf", "MBV2-w0.35-r144 as msf-CNN deploys it (`zoo:msf_mobilenet_v2,dtype=i8`)",
     "zoo:msf_mobilenet_v2,dtype=i8", MSF_MBV2_POINTS),
    ("msf_mbv2_035", "MBV2-w0.35-r144, the published network "
     "(`zoo:mobilenet_v2,alpha=0.35,res=144,dtype=i8`)",
     "zoo:mobilenet_v2,alpha=0.35,res=144,dtype=i8", MSF_MBV2_POINTS),
]
# The three plans of every row: flags of `memfold plan MODEL --planner best --json`.
RUNS = {"resident": [], "streamed": ["--stream-input"],
        "cached": ["--stream-input", "--max-recompute", "0.02"]}


def source_path(source, memfold, folder):
    """The model argument for `memfold plan`."""
    kind, _, rest = source.partition(":")
    if kind == "shared":
        return os.path.join(SHARED, "models", rest)
    if kind == "anchor":
        return os.path.join(SHARED, "anchors", rest)
    if kind == "written":
        path = os.path.join(folder, "written.tflite")
        subprocess.run([memfold, "inspect", rest, "--write-tflite", path], check=True,
                       capture_output=True)
        return path
    return source


def plan(memfold, model, flags):
    start = time.monotonic()
    out = subprocess.run([memfold, "plan", model, "--planner", "best", "--json", *flags],
                         check=True, capture_output=True, text=True).stdout
    data = json.loads(out)
    return {"arena_bytes": data["arena_bytes"],
            "recompute_fraction": round(data["recompute_fraction"], 4),
            "steps": {s["step"]: s["arena_bytes"] for s in data["steps"]},
            "seconds": round(time.monotonic() - start, 1)}


def measure_row(memfold, source):
    """Every figure of one row."""
    with tempfile.TemporaryDirectory() as folder:
        model = source_path(source, memfold, folder)
        runs = {name: plan(memfold, model, flags) for name, flags in RUNS.items()}
    steps = runs["resident"]["steps"]
    row = {"tflm_greedy": steps["greedy"], "no_split": steps["concat"],
           "seconds": max(r["seconds"] for r in runs.values())}
    for name, run in runs.items():
        row[name] = {"arena_bytes": run["arena_bytes"],
                     "recompute_fraction": run["recompute_fraction"]}
    return row


def measure_msf(memfold, source, points, key):
    """memfold's plan within each msf-CNN point's extra work, and the curve's SVG."""
    with tempfile.TemporaryDirectory() as folder:
        model = source_path(source, memfold, folder)
        rows = []
        for peak, factor in points:
            run = plan(memfold, model, ["--stream-input", "--max-recompute", f"{factor - 1:.2f}"])
            rows.append({"msf_bytes": peak, "msf_factor": factor,
                         "arena_bytes": run["arena_bytes"],
                         "recompute_fraction": run["recompute_fraction"],
                         "seconds": run["seconds"]})
        top = max(factor for _, factor in points) - 1
        subprocess.run([memfold, "plan", model, "--planner", "best", "--stream-input", "--pareto",
                        "--max-recompute", f"{top:.2f}", "--svg",
                        os.path.join(ROOT, "docs", f"curve_{key}.svg")],
                       check=True, capture_output=True)
    return rows


def msf_table(figures):
    """The side-by-side table of docs/patches.md: every msf-CNN point, memfold's plan within
    its extra work, and whether memfold's is no larger."""
    lines = ["| model | msf-CNN peak @ overhead | memfold, `--max-recompute F-1` | "
             "no larger? | planning s |", "|---|--:|--:|:-:|--:|"]
    for key, name, _, _ in MSF_CNN:
        for row in figures[key]:
            wins = row["arena_bytes"] <= row["msf_bytes"]
            lines.append(
                f"| {name} | {row['msf_bytes']:,} @ {row['msf_factor']:.2f} "
                f"| {row['arena_bytes']:,} @ {1 + row['recompute_fraction']:.3f} "
                f"| {'yes' if wins else '**no**'} | {row['seconds']:.1f} |")
    return "\n".join(lines)


def cell(run):
    return f"{run['arena_bytes']:,} (+{100 * run['recompute_fraction']:.1f} %)"


def table(figures):
    """The markdown table of docs/patches.md."""
    lines = ["| model | TFLM greedy | no split | best, resident | best, streamed "
             "| streamed, ≤ 2 % recompute | planning s |", "|---|--:|--:|--:|--:|--:|--:|"]
    for key, name, _ in MODELS:
        row = figures[key]
        lines.append(f"| {name} | {row['tflm_greedy']:,} | {row['no_split']:,} "
                     f"| {cell(row['resident'])} | {cell(row['streamed'])} "
                     f"| {cell(row['cached'])} | {row['seconds']:.1f} |")
    return "\n".join(lines)


def percent(run):
    return f"{100 * run['recompute_fraction']:.1f} %"


def cheaper(row):
    """'; N at +F %' when the 2 % budget gives another plan than the default."""
    cached, streamed = row["cached"], row["streamed"]
    if cached == streamed:
        return ""
    return f"; {cached['arena_bytes']:,} at +{percent(cached)}"


def headline(figures):
    """The README's headline rows of int8 inference arenas."""
    v2, pd = figures["mobilenet_v2"], figures["person_detect"]
    vww, te = figures["vww_96_int8"], figures["tinyengine_vww"]
    msf = figures["msf_vww"][-1]  # msf-CNN's smallest published point on the same file
    return "\n".join([
        f"| MobileNet v2 1.0/224 int8 (`zoo:mobilenet_v2,dtype=i8`) | {v2['tflm_greedy']:,} "
        "(TFLM's planner) | MCUNetV2: 1,372 kB → 172 kB (4×4 patches, input streamed, about "
        f"10 % extra MACs) | **{v2['streamed']['arena_bytes']:,}** streamed "
        f"(+{percent(v2['streamed'])} FLOPs{cheaper(v2)}); {v2['resident']['arena_bytes']:,} "
        "resident | `memfold plan MODEL --planner best [--stream-input]` |",
        f"| TFLM `person_detect.tflite` | {pd['tflm_greedy']:,} (TFLM, measured) | – "
        f"| **{pd['resident']['arena_bytes']:,}**; {pd['streamed']['arena_bytes']:,} streamed "
        "| same |",
        f"| MLCommons `vww_96_int8.tflite` | {vww['tflm_greedy']:,} (TFLM, measured) | – "
        f"| **{vww['resident']['arena_bytes']:,}**; {vww['streamed']['arena_bytes']:,} streamed "
        "| same |",
        f"| TinyEngine `vww.tflite` (MCUNet vww1) | {te['tflm_greedy']:,} (TFLM, measured) "
        f"| TinyEngine: about 92 kB; msf-CNN: {msf['msf_bytes']:,} at {msf['msf_factor']:.2f}× "
        f"MACs | **{te['streamed']['arena_bytes']:,}** streamed (+{percent(te['streamed'])}); "
        f"{msf['arena_bytes']:,} within msf-CNN's extra work "
        f"(+{100 * msf['recompute_fraction']:.1f} %); {te['resident']['arena_bytes']:,} "
        "resident (its float input alone is 76,800) | same; `--pareto` for the curve |"])


MARK_BEGIN, MARK_END = "<!-- patch-figures:{} -->", "<!-- /patch-figures:{} -->"


def replace_between(text, name, body):
    begin, end = MARK_BEGIN.format(name), MARK_END.format(name)
    head, _, rest = text.partition(begin)
    _, _, tail = rest.partition(end)
    return f"{head}{begin}\n{body}\n{end}{tail}"


def between(text, name):
    """What the document holds between the markers `name`."""
    return text.partition(MARK_BEGIN.format(name))[2].partition(MARK_END.format(name))[0].strip()


# Each document and the (marker name, renderer) pairs of its generated parts.
DOCUMENTS = {"docs/patches.md": [("table", table), ("msf-cnn", msf_table)],
             "README.md": [("headline", headline)]}


def render(figures):
    for path, parts in DOCUMENTS.items():
        full = os.path.join(ROOT, path)
        with open(full) as f:
            text = f.read()
        for name, renderer in parts:
            text = replace_between(text, name, renderer(figures))
        with open(full, "w") as f:
            f.write(text)


def main():
    if sys.argv[1:] == ["--render"]:
        with open(GOLDEN) as f:
            render(json.load(f))
        return
    memfold = sys.argv[1] if len(sys.argv) > 1 else "build/release/memfold"
    figures = {}
    for key, name, source in MODELS:
        figures[key] = measure_row(memfold, source)
        print(name, figures[key], flush=True)
    for key, name, source, points in MSF_CNN:
        figures[key] = measure_msf(memfold, source, points, key)
        print(name, figures[key], flush=True)
    with open(GOLDEN, "w") as f:
        json.dump(figures, f, indent=1)
        f.write("\n")
    render(figures)


if __name__ == "__main__":
    main()
