"""Check the built documentation in a real headless browser.

Serves ``docs/_build/html`` on localhost, opens it in Chromium through Playwright and checks
that a page renders (its title, a figure image loaded with a natural width > 0, an equation
typeset by MathJax) and that the search finds a known term. Saves screenshots of the home page,
a Concepts page, a vignette with a figure and the search results.

Build the docs first (``python -m sphinx -W -b html docs docs/_build/html``), then::

    python benchmarks/check_docs_browser.py [--html docs/_build/html] [--screens DIR]

Needs ``pip install playwright`` and a Chromium: the system's (Debian: ``apt-get install
chromium``; found on PATH, or ``--chromium PATH``), else the one ``python -m playwright install
chromium`` downloads, which ``--install`` runs when no Chromium is found (at most
``--install-timeout`` seconds). Exits 0 when every check passes, 1 when one fails, and 2
(skipped) when Playwright or a Chromium that starts cannot be had.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Debian's MathJax 2 (apt-get install libjs-mathjax), used when the pages' MathJax CDN is
#: unreachable (an offline machine): the TeX the pages contain is still what gets typeset.
LOCAL_MATHJAX = Path("/usr/share/javascript/mathjax")
#: System Chromium binaries tried, in order, when ``--chromium`` is not given.
SYSTEM_CHROMIUMS = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        pass


def serve(root: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    """Serve ``root`` on a free localhost port in a daemon thread."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def mathjax_source(page, url: str) -> str | None:
    """Where the pages' MathJax comes from: ``"cdn"``, ``"local"`` (the CDN cannot be reached,
    so its requests are served from :data:`LOCAL_MATHJAX`) or None (neither is available)."""
    import urllib.request

    try:
        urllib.request.urlopen("https://cdn.jsdelivr.net/npm/mathjax@4/tex-mml-chtml.js",
                               timeout=5).close()
        return "cdn"
    except OSError:
        if not (LOCAL_MATHJAX / "MathJax.js").is_file():
            return None
    loader = (f"var s = document.createElement('script'); s.src = "
              f"'{url}/_mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML'; "
              "document.head.appendChild(s);")
    page.route("**/npm/mathjax@*/**", lambda route: route.fulfill(
        body=loader, content_type="application/javascript"))

    def local(route):
        rel = route.request.url.split("/_mathjax/", 1)[1].split("?", 1)[0]
        route.fulfill(path=str(LOCAL_MATHJAX / rel))
    page.route("**/_mathjax/**", local)
    return "local"


def check(page, url: str, screens: Path) -> list[str]:
    """Run the checks; return the failures (empty when all pass)."""
    failures: list[str] = []

    def expect(ok: bool, what: str) -> None:
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    page.goto(f"{url}/index.html")
    page.wait_for_load_state("networkidle")
    expect("restrictiveness" in page.title(), f"home page title: {page.title()!r}")
    page.screenshot(path=str(screens / "home.png"), full_page=False)

    # An equation: MathJax replaces the TeX source by mjx-container (MathJax 3/4) or
    # span.MathJax_CHTML (MathJax 2) elements.
    source = mathjax_source(page, url)
    typeset = "mjx-container, span.MathJax_CHTML, span.MathJax"
    page.goto(f"{url}/concepts.html#restrictiveness-and-its-standard-error")
    if source is None:
        # an offline machine without Debian's MathJax: nothing could typeset the TeX, which
        # says nothing about the pages; the other checks still run
        print(f"skip  equations: the MathJax CDN is unreachable and {LOCAL_MATHJAX} is missing "
              "(apt-get install libjs-mathjax)")
    else:
        if source == "local":
            print(f"note  the MathJax CDN is unreachable: typesetting with {LOCAL_MATHJAX}")
        page.wait_for_selector(typeset, timeout=60_000, state="attached")
        page.wait_for_timeout(2_000)
        n_math = page.locator(typeset).count()
        expect(n_math >= 5, f"concepts page: {n_math} equations typeset by MathJax")
    page.screenshot(path=str(screens / "concepts.png"), full_page=False)

    # A vignette with a figure: every image of the gallery output loaded (natural width > 0).
    page.goto(f"{url}/vignettes/plot_02_lottery.html")
    page.wait_for_load_state("networkidle")
    figures = "img.sphx-glr-single-img, img.sphx-glr-multi-img"
    widths = page.eval_on_selector_all(
        figures, "imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)")
    expect(len(widths) >= 1 and all(w > 0 for w in widths),
           f"vignette 02: figure images with natural widths {widths}")
    page.locator(figures).first.scroll_into_view_if_needed()
    page.screenshot(path=str(screens / "vignette.png"), full_page=False)

    # The search: Sphinx's client-side index must return hits for known terms.
    for term in ("restrictiveness", "NLS"):
        page.goto(f"{url}/search.html?q={term}")
        # count once Sphinx retitles "Searching" (results stream in until then)
        page.wait_for_function(
            "() => document.querySelector('#search-results h2')?.innerText === 'Search Results'",
            timeout=30_000)
        hits = page.locator("#search-results li").count()
        first = page.locator("#search-results li a").first.inner_text() if hits else ""
        expect(hits > 0 and term.lower() in first.lower(),
               f"search {term!r}: {hits} results, the first {first!r}")
        if term == "NLS":
            page.screenshot(path=str(screens / "search.png"), full_page=False)
    return failures


def system_chromium(path: str | None) -> str | None:
    """The Chromium binary to use: ``path`` if given (None when it does not exist), else the
    first of :data:`SYSTEM_CHROMIUMS` present."""
    for candidate in (path,) if path else SYSTEM_CHROMIUMS:
        found = candidate if Path(candidate).is_file() else shutil.which(candidate)
        if found:
            return found
    return None


def install_chromium(timeout: float) -> bool:
    """``python -m playwright install chromium`` (downloads Playwright's Chromium); False when
    it fails or takes longer than ``timeout`` seconds (e.g. no network)."""
    print(f"note  no system Chromium: python -m playwright install chromium "
          f"(at most {timeout:g} s)")
    try:
        done = subprocess.run([sys.executable, "-m", "playwright", "install", "chromium"],
                              capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        print(f"note  playwright install chromium did not finish in {timeout:g} s")
        return False
    if done.returncode != 0:
        print("note  playwright install chromium failed: "
              + (done.stderr or done.stdout).strip()[-300:])
    return done.returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", type=Path, default=ROOT / "docs/_build/html")
    parser.add_argument("--screens", type=Path, default=Path("/work/notes/screens"))
    parser.add_argument("--chromium", default=None,
                        help="Chromium binary (default: the first of "
                             f"{', '.join(SYSTEM_CHROMIUMS)} found, else Playwright's own)")
    parser.add_argument("--install", action="store_true",
                        help="without a Chromium, download Playwright's (playwright install)")
    parser.add_argument("--install-timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("skipped: playwright is not installed (pip install playwright)")
        return 2
    if not (args.html / "index.html").is_file():
        print(f"no built documentation at {args.html}: run "
              "python -m sphinx -W -b html docs docs/_build/html first")
        return 1
    executable = system_chromium(args.chromium)
    if executable is None and args.chromium:
        print(f"skipped: no Chromium at {args.chromium} (apt-get install chromium)")
        return 2
    with sync_playwright() as pw:
        if executable is None and not Path(pw.chromium.executable_path).is_file() and \
                not (args.install and install_chromium(args.install_timeout)):
            print("skipped: no Chromium (apt-get install chromium, or python -m playwright "
                  "install chromium; --install does it)")
            return 2
        try:
            # executable_path=None: the Chromium Playwright downloaded
            browser = pw.chromium.launch(executable_path=executable, args=ARGS)
        except PlaywrightError as exc:
            print(f"skipped: Chromium ({executable or pw.chromium.executable_path}) does not "
                  f"start: {str(exc).strip().splitlines()[0]}")
            return 2
        print(f"note  {browser.browser_type.name} {browser.version} "
              f"({executable or 'Playwright-managed'})")
        args.screens.mkdir(parents=True, exist_ok=True)
        server, url = serve(args.html)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            failures = check(page, url, args.screens)
        finally:
            browser.close()
            server.shutdown()
    print(f"screenshots in {args.screens}")
    print("all checks passed" if not failures else f"{len(failures)} check(s) failed")
    print(f"browser check: {time.perf_counter() - start:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
