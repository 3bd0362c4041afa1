#!/usr/bin/env python3
"""Checks how pkb report's HTML page lays out in headless Chromium at a laptop's width,
and optionally takes a screenshot of the whole page (or of its top PX).

  check_layout.py CHROMIUM PAGE.html [--width 1366] [--shot OUT.png [--height PX]]

The page is loaded in an iframe of a wrapper page whose script measures it: the page and
every table must fit the width (no horizontal scrolling), and no text of a chart may
overlap another text or a bar. The measurements come back through --dump-dom. Exits 0 when
every check holds, 1 (saying which failed) otherwise. Standard library only; the wrapper
and Chromium's profile go in a temporary folder that is removed.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

MEASURE = r"""
<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0">
<iframe id="page" src="%(src)s" style="width:%(width)dpx;height:900px;border:0"></iframe>
<script>
function overlap(a, b) {
  var w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
  var h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
  return w > 1 && h > 1;
}
document.getElementById('page').onload = function () {
  var d = this.contentDocument, r = {problems: []};
  r.page_width = d.documentElement.scrollWidth;
  r.view_width = d.documentElement.clientWidth;
  r.height = d.documentElement.scrollHeight;
  r.tables = d.querySelectorAll('table').length;
  d.querySelectorAll('.scroll').forEach(function (s, i) {
    if (s.scrollWidth > s.clientWidth + 1)
      r.problems.push('table ' + i + ' (' + (s.querySelector('th') || {}).textContent + '...) is ' + s.scrollWidth +
                      ' px wide in ' + s.clientWidth + ' px');
  });
  r.charts = 0;
  d.querySelectorAll('svg').forEach(function (svg, i) {
    ++r.charts;
    var texts = [].map.call(svg.querySelectorAll('text'), function (t) {
      return {box: t.getBoundingClientRect(), text: t.textContent};
    });
    var bars = [].map.call(svg.querySelectorAll('rect'), function (b) { return b.getBoundingClientRect(); });
    var svgBox = svg.getBoundingClientRect();
    texts.forEach(function (a, j) {
      if (a.box.right > svgBox.right + 1 || a.box.left < svgBox.left - 1)
        r.problems.push('chart ' + i + ': "' + a.text + '" sticks out of the chart');
      texts.slice(j + 1).forEach(function (b) {
        if (overlap(a.box, b.box)) r.problems.push('chart ' + i + ': "' + a.text + '" overlaps "' + b.text + '"');
      });
      bars.forEach(function (b) {
        if (overlap(a.box, b)) r.problems.push('chart ' + i + ': "' + a.text + '" overlaps a bar');
      });
    });
  });
  if (r.page_width > r.view_width + 1)
    r.problems.push('the page is ' + r.page_width + ' px wide in a ' + r.view_width + ' px window');
  var pre = document.createElement('pre');
  pre.id = 'measured';
  pre.textContent = JSON.stringify(r);
  document.body.appendChild(pre);
};
</script></body></html>
"""


def chromium_run(chromium, args, profile):
    base = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--user-data-dir=" + profile, "--allow-file-access-from-files"]
    return subprocess.run(base + args, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, HOME=profile))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("chromium")
    ap.add_argument("page")
    ap.add_argument("--width", type=int, default=1366)
    ap.add_argument("--shot")
    ap.add_argument("--height", type=int, default=16000)
    a = ap.parse_args()
    page = os.path.abspath(a.page)
    scratch = tempfile.mkdtemp(prefix="pkb-layout-")
    try:
        wrapper = os.path.join(scratch, "measure.html")
        with open(wrapper, "w") as f:
            f.write(MEASURE % {"src": "file://" + page, "width": a.width})
        r = chromium_run(a.chromium, ["--virtual-time-budget=20000", "--window-size=%d,900" % (a.width + 40),
                                      "--dump-dom", "file://" + wrapper], os.path.join(scratch, "profile"))
        m = re.search(r'<pre id="measured">(.*?)</pre>', r.stdout, re.S)
        if not m:
            print("FAIL: the wrapper measured nothing (chromium: %s)" % r.stderr.strip()[-500:])
            return 1
        got = json.loads(m.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
                         .replace("&amp;", "&"))
        for p in got["problems"]:
            print("FAIL:", p)
        print("%d px wide in %d, %d px tall, %d tables, %d charts" %
              (got["page_width"], got["view_width"], got["height"], got["tables"], got["charts"]))
        if a.shot:
            height = min(int(got["height"]) + 20, a.height)
            chromium_run(a.chromium, ["--screenshot=" + os.path.abspath(a.shot), "--window-size=%d,%d" % (a.width, height),
                                      "file://" + page], os.path.join(scratch, "profile"))
            if not os.path.exists(a.shot):
                print("FAIL: chromium wrote no screenshot")
                return 1
        return 1 if got["problems"] else 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
