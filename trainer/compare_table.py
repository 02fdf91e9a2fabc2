#!/usr/bin/env python3
"""compare_table.py DIR OUT.md COMMAND: the markdown table of trainer/compare.sh.

DIR holds tutti-<ranks>-<launch>.json (tutti-train --json), ddp-<ranks>-<launch>.json
(ddp_gloo.py --json) and optionally ddpob-... (ddp_gloo.py with OpenBLAS). Per rank count:
medians over the launches of tutti-train's step time, communication time and share, exposed
(waited-for) communication, overlap, time per epoch and final test accuracy, beside each DDP
variant's step time, time per epoch and final accuracy. Every run
is listed below the medians; all the JSON goes to OUT with .json for .md.
"""
import glob
import json
import os
import platform
import re
import statistics
import sys
import time


def load(d):
    runs = {}
    for path in sorted(glob.glob(os.path.join(d, "*.json"))):
        m = re.match(r"(tutti|ddp|ddpob)-(\d+)-(\d+)\.json$", os.path.basename(path))
        if m:
            with open(path) as f:
                runs.setdefault((m[1], int(m[2])), []).append((int(m[3]), json.load(f)))
    return runs


def epoch_s(doc):
    return statistics.mean(e["time_s"] for e in doc["epochs"])


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


VARIANTS = (("ddp", "DDP"), ("ddpob", "DDP+OpenBLAS"))


def ddp_cells(docs, t_ep):
    ep = med([epoch_s(x) for x in docs])
    return (f" {med([x['summary']['step_ms'] for x in docs]):.2f} | {ep:.2f} | "
            f"{100 * med([x['summary']['final_test_accuracy'] for x in docs]):.2f}% | "
            f"{ep / t_ep:.2f}x |")


def tutti_cells(docs):
    ts = [x["summary"] for x in docs]
    return (f" {med([s['step_ms'] for s in ts]):.2f} | "
            f"{med([s['comm_ms'] for s in ts]):.2f} ({100 * med([s['comm_share'] for s in ts]):.0f}%) | "
            f"{med([s['exposed_ms'] for s in ts]):.2f} ({100 * med([s['exposed_share'] for s in ts]):.0f}%) | "
            f"{100 * med([s['overlap'] for s in ts]):.0f}% | {med([epoch_s(x) for x in docs]):.2f} | "
            f"{100 * med([s['final_test_accuracy'] for s in ts]):.2f}% |")


def main():
    d, out, cmd = sys.argv[1], sys.argv[2], sys.argv[3]
    runs = load(d)
    ranks = sorted({n for (_, n) in runs})
    variants = [(k, name) for k, name in VARIANTS if any(t == k for t, _ in runs)]
    head = ("| ranks | tutti step ms | comm ms (share) | exposed ms (share) | overlap | tutti epoch s "
            "| tutti final acc |")
    rule = "|---:|---:|---:|---:|---:|---:|---:|"
    for _, name in variants:
        head += f" {name} step ms | {name} epoch s | {name} final acc | {name} ratio |"
        rule += "---:|---:|---:|---:|"
    rows, raw, blas = [], [], {}
    for n in ranks:
        t = [doc for _, doc in runs.get(("tutti", n), [])]
        t_ep = med([epoch_s(x) for x in t])
        row = f"| {n} |" + tutti_cells(t)
        for k, name in variants:
            docs = [doc for _, doc in runs.get((k, n), [])]
            row += ddp_cells(docs, t_ep)
            blas[name] = ", ".join(docs[0].get("blas", [])) if docs else ""
        rows.append(row)
        for k, name in [("tutti", "tutti-train")] + variants:
            for launch, doc in runs.get((k, n), []):
                acc = " / ".join(f"{100 * e['test_accuracy']:.2f}" for e in doc["epochs"])
                raw.append(f"| {n} | {name} | {launch} | {doc['summary']['step_ms']:.2f} | "
                           f"{epoch_s(doc):.2f} | {acc} |")
    some = next(iter(runs.values()))[0][1]["config"]
    lines = [
        f"# tutti-train vs PyTorch DDP (Gloo) on Fashion-MNIST, {time.strftime('%Y-%m-%d')}",
        "",
        f"Machine: {cpu_model()}, {os.cpu_count()} CPUs ({platform.node()}). Made by `{cmd}`.",
        f"Model MLP 784-512-256-10, global batch {some['global_batch']}, lr {some['lr']}, "
        f"momentum {some['momentum']}, {some['epochs']} epochs, seed {some['seed']}; both sides "
        "start from the same weights, visit the data in the same order and split each batch the "
        "same way (trainer/ddp_gloo.py). One thread per rank, ranks pinned to CPUs when they fit. "
        "Medians over launches; the tools ran alternately.",
        "",
        *[f"{name}: PyTorch's BLAS is {lib or 'unknown'}." for name, lib in blas.items()],
        "",
        "tutti: *step* = forward + backward + waiting for the gradients + SGD, mean over ranks; "
        "*comm* = time some gradient bucket was in flight (its share of the step); *exposed* = "
        "time the training thread waited for gradients; *overlap* = 1 - exposed / comm. DDP: "
        "*step* = zero_grad + forward + backward (all-reduce included) + SGD, mean over ranks. "
        "*epoch* = wall time of an epoch's steps, test evaluation excluded. *ratio* = DDP epoch "
        "/ tutti epoch.",
        "",
        head,
        rule,
        *rows,
        "",
        "Every run (test accuracy after each epoch, %):",
        "",
        "| ranks | tool | launch | step ms | epoch s | test accuracy per epoch |",
        "|---:|---|---:|---:|---:|---|",
        *raw,
        "",
    ]
    with open(out, "w") as f:
        f.write("\n".join(lines))
    with open(re.sub(r"\.md$", "", out) + ".json", "w") as f:
        json.dump({f"{tool}-{n}": [doc for _, doc in docs] for (tool, n), docs in runs.items()},
                  f, indent=1)


if __name__ == "__main__":
    main()
