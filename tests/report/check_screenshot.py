#!/usr/bin/env python3
"""Checks a screenshot of pkb report's HTML page: the charts' bars are there, in the
expected colours, top to bottom, drawn on a log scale from their chart's 1x line.

  check_screenshot.py SHOT.png EXPECT.json

EXPECT.json: {"colours": {name: "#rrggbb"},
              "header": true,                                  the header block ("header" colour) is there,
                                                               with text in it, above the charts
              "charts": [{"bars": [[colour name, speedup], ...],   each speedup chart's bars, top to bottom:
                          "spread": [[low, high], ...]}, ...],      faster ones grow right from the 1x line,
                                                               slower ones left, their lengths in proportion to
                                                               |log speedup|; "spread" (optional): each bar's
                                                               quartile range, a "spread" line under it
                                                               (null for a bar drawn without one)
              "stack": [colour names of the verdict chart],
              "verdicts": [[colour name, fraction], ...]}      that colour's share of each stacked bar
Exits 0 when every check holds, 1 (saying which failed) otherwise. Standard library only.
"""
import json
import math
import struct
import sys
import zlib


def decode_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG")
    at, idat, width = 8, b"", 0
    while at < len(data):
        (length,) = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        at += 12 + length
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise SystemExit(f"{path}: only 8-bit RGB/RGBA, non-interlaced PNGs are handled")
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return rows


def rgb(hex_colour):
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))


def near(p, q, tol=3):
    return all(abs(a - b) <= tol for a, b in zip(p, q))


def classify(rows, colours):
    """Each pixel's colour name, or None; a cache keeps this fast on a large page."""
    cache = {}
    def name_of(p):
        if p not in cache:
            cache[p] = next((n for n, c in colours.items() if near(p, c)), None)
        return cache[p]
    return [[name_of(p) for p in row] for row in rows]


def longest_run(row, name):
    best = cur = 0
    for n in row:
        cur = cur + 1 if n == name else 0
        best = max(best, cur)
    return best


def span_of(row, name):
    """The first and one-past-last x of the longest run of `name` in a row."""
    best, start, cur_start = (0, 0), None, None
    for x, n in enumerate(row + [None]):
        if n == name and cur_start is None:
            cur_start = x
        elif n != name and cur_start is not None:
            if x - cur_start > best[1] - best[0]:
                best = (cur_start, x)
            cur_start = None
    return best


def bands(labels, measure, minimum):
    """Runs of consecutive rows where measure(row) >= minimum, as (first, last) rows."""
    out, start = [], None
    for y in range(len(labels) + 1):
        hit = y < len(labels) and measure(labels[y]) >= minimum
        if hit and start is None:
            start = y
        if not hit and start is not None:
            out.append((start, y - 1))
            start = None
    return out


def main():
    rows = decode_png(sys.argv[1])
    expect = json.load(open(sys.argv[2]))
    colours = {name: rgb(c) for name, c in expect["colours"].items()}
    labels = classify(rows, dict(colours, white=(255, 255, 255)))
    failures = []

    # Not blank: text and bars make plenty of pixels that are not the white background.
    inked = sum(1 for row in labels for n in row if n != "white")
    if inked < 5000:
        failures.append(f"the page looks blank ({inked} non-white pixels)")

    # The speedup charts: bands of rows where a bar colour runs for a while, top to bottom.
    charts = expect["charts"]
    bar_colours = sorted({n for c in charts for n, _ in c["bars"]})
    found = []  # (first row, last row, colour, x0, x1)
    for name in bar_colours:
        for first, last in bands(labels, lambda r, n=name: longest_run(r, n), expect.get("min_bar", 12)):
            row = labels[(first + last) // 2]
            x0, x1 = span_of(row, name)
            found.append((first, last, name, x0, x1))
    found.sort()
    want = [b for c in charts for b in c["bars"]]
    if [f[2] for f in found] != [n for n, _ in want]:
        failures.append(f"speedup bars top to bottom: {[(f[2], f[4] - f[3]) for f in found]}, "
                        f"expected {[n for n, _ in want]}")
    else:
        at = 0
        for c, chart in enumerate(charts):
            bars = found[at:at + len(chart["bars"])]
            at += len(chart["bars"])
            # The 1x line: where faster bars start and slower ones end.
            edges = [x0 if v >= 1 else x1 for (_, _, _, x0, x1), (_, v) in zip(bars, chart["bars"])]
            one = sorted(edges)[len(edges) // 2]
            if max(abs(e - one) for e in edges) > 2:
                failures.append(f"chart {c}: bars do not share a 1x line: they start or end at {edges}")
            scales = [(x1 - x0) / abs(math.log(v)) for (_, _, _, x0, x1), (_, v) in zip(bars, chart["bars"])
                      if abs(math.log(v)) > 0.05]
            scale = sorted(scales)[len(scales) // 2] if scales else 0
            for (first, _, name, x0, x1), (_, v) in zip(bars, chart["bars"]):
                if abs(math.log(v)) > 0.05 and abs((x1 - x0) / abs(math.log(v)) - scale) > 0.03 * scale + 1:
                    failures.append(f"chart {c}: the {name} bar at row {first} is {x1 - x0} px for {v}x; "
                                    f"{scale * abs(math.log(v)):.0f} px expected on the log scale")
            for (first, last, name, x0, x1), spread in zip(bars, chart.get("spread", [])):
                if spread is None:
                    continue
                below = [labels[y] for y in range(last + 1, min(last + 10, len(labels)))]
                line = max(below, key=lambda r: sum(1 for n in r if n == "spread"), default=[])
                xs = [x for x, n in enumerate(line) if n == "spread"]
                if not xs or not scale:
                    failures.append(f"chart {c}: no spread line under the bar at row {first}")
                    continue
                got = (math.exp((xs[0] - one) / scale), math.exp((xs[-1] + 1 - one) / scale))
                if any(abs(math.log(g / w)) > 0.04 for g, w in zip(got, spread)):
                    failures.append(f"chart {c}: spread under the bar at row {first}: {got[0]:.3f}-{got[1]:.3f}, "
                                    f"expected {spread[0]}-{spread[1]}")

    # The header: a block of its background colour across the page (text crosses its rows,
    # so count pixels, not runs), above the first bar, tall enough for its lines, with dark
    # text pixels inside it.
    if expect.get("header"):
        blocks = bands(labels, lambda r: sum(1 for n in r if n == "header"), 500)
        if not blocks:
            failures.append("no header block")
        else:
            first, last = blocks[0]
            ink = sum(1 for y in range(first, last + 1) for p in rows[y] if sum(p) < 300)
            if found and last >= found[0][0]:
                failures.append(f"the header (rows {first}-{last}) is not above the charts (first bar at {found[0][0]})")
            if last - first < 100:
                failures.append(f"the header is {last - first + 1} px tall: its fields are not all there")
            if ink < 500:
                failures.append(f"the header holds {ink} dark pixels: no text rendered in it")

    # The verdict chart: each stacked bar's share of the given colour.
    stack = set(expect["stack"])
    stacked = bands(labels, lambda r: sum(1 for n in r if n in stack), 200)
    if len(stacked) != len(expect["verdicts"]):
        failures.append(f"{len(stacked)} stacked bars, expected {len(expect['verdicts'])}")
    else:
        for (first, last), (name, share) in zip(stacked, expect["verdicts"]):
            mid = labels[(first + last) // 2]
            width = sum(1 for n in mid if n in stack)
            part = sum(1 for n in mid if n == name)
            if abs(part / width - share) > 0.01:
                failures.append(f"stacked bar at row {first}: {name} is {part}/{width} = {part / width:.3f}, expected {share:.3f}")

    for f in failures:
        print("FAIL:", f)
    print(f"{len(found)} speedup bars, {len(stacked)} stacked bars, {inked} inked pixels")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
