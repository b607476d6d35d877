#!/usr/bin/env python3
"""Lay out labelled texts from a CSV as a `gorag eval` dataset folder.

    scripts/dataset-from-csv.py texts.csv out/mydata --shots 1,5 [--dev 0.2] [--seed 7]
    gorag eval out/mydata --shots 1 --llm none --strategy naive,hybrid

The CSV has a header with `label` and `text` columns and, optionally, `round` (1, 2, …: the
round in which the label first appears; without it every label is in round 1). For each shot
count k and round n it writes `<k>shot/r<n>/train.tsv` (k texts of each of the round's labels:
the labelled examples), `test.tsv` (the round's other texts) and, with --dev, `dev.tsv` (that
share of them, held apart for tuning). Labels with fewer than k + 1 texts are left out of that
shot count, with a warning. Lines are `label<TAB>text`; tabs and newlines inside a text become
spaces.
"""
import argparse
import csv
import os
import random
import sys


def clean(value):
    return " ".join(value.replace("\t", " ").split())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("csv")
    parser.add_argument("out")
    parser.add_argument("--shots", default="1", help="comma-separated shot counts (default 1)")
    parser.add_argument("--dev", type=float, default=0.0, help="share of held-out texts for dev.tsv")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    # utf-8-sig: a spreadsheet's "CSV UTF-8" starts with a byte-order mark, not part of a column.
    # strict: an unclosed quote is an error, not the rest of the file swallowed into one field.
    with open(args.csv, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f, strict=True)
        try:
            fieldnames = reader.fieldnames or []
        except csv.Error as error:
            sys.exit(f"{args.csv}:1: {error}")
        missing = {"label", "text"} - set(fieldnames)
        if missing:
            sys.exit(f"{args.csv}: missing column(s) {', '.join(sorted(missing))} (need label, text[, round])")
        by_label, round_of = {}, {}
        rows = iter(reader)
        ended = 1  # the file line where the last good record ended (the header: 1)
        while True:
            try:
                row = next(rows)
            except StopIteration:
                break
            except csv.Error as error:
                sys.exit(f"{args.csv}:{ended + 1}: the record starting here: {error} "
                         "(a quote opened and never closed?)")
            line = ended + 1
            ended = reader.line_num
            if None in row or None in row.values():
                sys.exit(f"{args.csv}:{line}: {len(fieldnames)} columns expected "
                         f"({', '.join(fieldnames)}), the row has "
                         f"{'more' if None in row else 'fewer'}")
            label, text = clean(row["label"] or ""), clean(row["text"] or "")
            if not label or not text:
                sys.exit(f"{args.csv}:{line}: empty label or text")
            round_text = (row.get("round") or "1").strip()
            if not round_text.isdigit() or int(round_text) < 1:
                sys.exit(f"{args.csv}:{line}: round must be 1, 2, …, not {round_text!r}")
            n = int(round_text)
            if round_of.setdefault(label, n) != n:
                sys.exit(f"{args.csv}:{line}: label {label!r} is in round {round_of[label]} earlier")
            by_label.setdefault(label, []).append(text)

    if not by_label:
        sys.exit(f"{args.csv}: no labelled text (a header and at least one row are needed)")
    rounds = sorted(set(round_of.values()))
    if rounds != list(range(1, len(rounds) + 1)):
        sys.exit(f"{args.csv}: rounds must be numbered 1..n without gaps, found {rounds}")
    for k in (int(s) for s in args.shots.split(",")):
        for n in rounds:
            rng = random.Random(args.seed * 1000 + k * 10 + n)
            train, test, dev = [], [], []
            for label in sorted(l for l in by_label if round_of[l] == n):
                texts = by_label[label][:]
                if len(texts) < k + 1:
                    print(f"warning: {label!r} has {len(texts)} text(s), needs {k + 1} for {k}-shot: left out", file=sys.stderr)
                    continue
                rng.shuffle(texts)
                train += [(label, t) for t in texts[:k]]
                held = [(label, t) for t in texts[k:]]
                cut = round(len(held) * args.dev)
                dev += held[:cut]
                test += held[cut:]
            rng.shuffle(test)
            rng.shuffle(dev)
            folder = os.path.join(args.out, f"{k}shot", f"r{n}")
            os.makedirs(folder, exist_ok=True)
            for name, rows in (("train", train), ("test", test), ("dev", dev)):
                if rows or name != "dev":
                    with open(os.path.join(folder, f"{name}.tsv"), "w", encoding="utf-8") as f:
                        f.writelines(f"{label}\t{text}\n" for label, text in rows)
            print(f"{k}shot/r{n}: {len(train)} train, {len(test)} test, {len(dev)} dev", file=sys.stderr)


if __name__ == "__main__":
    main()
