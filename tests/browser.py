"""An HTML page rendered by Debian's headless Chromium: its laid-out size,
where each image landed, and a screenshot of the whole page.

Chromium runs as a plain subprocess (no driver library): ``--dump-dom``
of a copy of the page with a script that writes the layout into the DOM,
then ``--screenshot`` at the page's full height.
"""
import html
import json
import re
import shutil
import subprocess

WIDTH = 1400
_MEASURE = """<script>window.addEventListener('load', () => {
  const imgs = [...document.images].map(i => {
    const r = i.getBoundingClientRect();
    return [r.left + scrollX, r.top + scrollY, r.width, r.height,
            i.naturalWidth];
  });
  document.body.setAttribute('data-layout', JSON.stringify({
    height: document.documentElement.scrollHeight,
    width: document.documentElement.scrollWidth, images: imgs}));
});</script>"""


def chromium():
    return shutil.which('chromium') or shutil.which('chromium-browser')


def _run(args, timeout=180):
    # --no-sandbox: the suite runs as root in CI, where the sandbox refuses
    return subprocess.run([chromium(), '--headless', '--no-sandbox',
                           '--disable-gpu', '--hide-scrollbars',
                           '--no-first-run', *args],
                          capture_output=True, text=True, timeout=timeout,
                          check=True)


def layout(page, workdir, width=WIDTH):
    """{'height', 'width', 'images': [[x, y, w, h, natural width]]} of
    ``page`` laid out ``width`` pixels wide."""
    probe = workdir / 'layout-probe.html'
    probe.write_text(page.read_text().replace('</body>', _MEASURE + '</body>'))
    out = _run([f'--window-size={width},1000', '--dump-dom',
                probe.resolve().as_uri()]).stdout
    found = re.search(r'data-layout="([^"]*)"', out)
    assert found, 'Chromium gave no layout (did the page load?)'
    return json.loads(html.unescape(found[1]))


def screenshot(page, png, height, width=WIDTH):
    _run([f'--window-size={width},{height}', f'--screenshot={png}',
          page.resolve().as_uri()])
    return png
