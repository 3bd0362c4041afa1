#!/usr/bin/env python3
"""Checks a screenshot of pkb report's HTML page: the charts' bars are there, in the
expected colours, top to bottom, with lengths in the expected proportions.

  check_screenshot.py SHOT.png EXPECT.json

EXPECT.json: {"colours": {name: "#rrggbb"},
              "header": true,                                  the header block ("header" colour) is there,
                                                               with text in it, above the charts
              "speedup": [[colour name, speedup], ...],        bars of the speedup chart
              "spread": [[low, high], ...],                    each bar's quartile range, a "spread"
                                                               line under it, in speedup units
              "stack": [colour names of the verdict chart],
              "verdicts": [[colour name, fraction], ...]}      that colour's share of each stacked bar
Exits 0 when every check holds, 1 (saying which failed) otherwise. Standard library only.
"""
import json
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

    # The speedup chart: bars of either colour, top to bottom, longer than legend swatches.
    found = []
    for name in sorted({n for n, _ in expect["speedup"]}):
        for first, last in bands(labels, lambda r, n=name: longest_run(r, n), 30):
            found.append((first, name, longest_run(labels[(first + last) // 2], name)))
    found.sort()
    want = expect["speedup"]
    if [n for _, n, _ in found] != [n for n, _ in want]:
        failures.append(f"speedup bars top to bottom: {[(n, l) for _, n, l in found]}, expected colours {[n for n, _ in want]}")
    else:
        longest = max(l for _, _, l in found)
        top = max(v for _, v in want)
        for (_, name, length), (_, value) in zip(found, want):
            if abs(length / longest - value / top) > 0.02:
                failures.append(f"{name} bar of {length} px: {length / longest:.3f} of the longest, expected {value / top:.3f}")

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

    # The spread: under each speedup bar, a line from its low to its high speedup.
    if "spread" in expect and len(found) == len(want):
        longest = max(l for _, _, l in found)
        scale = longest / max(v for _, v in want)  # pixels per 1x
        for (first, name, _), (low, high) in zip(found, expect["spread"]):
            bar_last = next(y for y in range(first, len(labels)) if longest_run(labels[y], name) < 30) - 1
            x0 = labels[(first + bar_last) // 2].index(name)
            below = [labels[y] for y in range(bar_last + 1, min(bar_last + 10, len(labels)))]
            line = max(below, key=lambda r: sum(1 for n in r if n == "spread"), default=[])
            xs = [x for x, n in enumerate(line) if n == "spread"]
            if not xs:
                failures.append(f"no spread line under the bar at row {first}")
                continue
            got = ((xs[0] - x0) / scale, (xs[-1] + 1 - x0) / scale)
            if abs(got[0] - low) > 0.03 or abs(got[1] - high) > 0.03:
                failures.append(f"spread under the bar at row {first}: {got[0]:.3f}-{got[1]:.3f}, expected {low}-{high}")

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
