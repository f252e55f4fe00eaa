"""The reports of ``moorage run``: a terminal table, a JSON file and one HTML page.

All three read a finished ``RunResult`` and never change it; the figures they show are
defined once, in ``figures``, so the table, the charts and the page always agree.
"""

from moorage.run.report.html_page import write_html
from moorage.run.report.json_file import write_json
from moorage.run.report.terminal import terminal_table

__all__ = ["terminal_table", "write_html", "write_json"]
