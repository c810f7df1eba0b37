"""The vignette figures as sphinx-gallery saves them: cropped to their artists.

Legends placed outside the axes would otherwise be cut at the figure's edge.
"""

from sphinx_gallery.scrapers import matplotlib_scraper


def tight_matplotlib_scraper(block, block_vars, gallery_conf):
    """sphinx-gallery's matplotlib scraper with ``bbox_inches="tight"``."""
    return matplotlib_scraper(block, block_vars, gallery_conf, bbox_inches="tight")
