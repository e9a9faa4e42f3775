"""Sphinx configuration: the pages are Markdown (MyST), the API reference comes from the
docstrings (autodoc) and needs the package importable (build the extension first)."""

from __future__ import annotations

import os
from pathlib import Path

from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform

import torch_green_contexts

project = "torch_green_contexts"
author = "torch_green_contexts contributors"
release = version = torch_green_contexts.__version__

extensions = ["sphinx.ext.autodoc", "myst_parser"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "requirements.txt"]

# GitHub-style anchors for headings, so that links like user-guide.md#split-options work both on
# GitHub and here.
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True}

html_theme = "alabaster"
html_title = f"torch_green_contexts {release}"

DOCS = Path(__file__).resolve().parent
REPOSITORY = DOCS.parent


class RepositoryFileLinks(SphinxTransform):
    """The pages link to files of the repository outside docs/ (committed benchmark results,
    the README) with relative paths, which work on GitHub. MyST takes a link to such a
    Markdown file for a link to a page and cannot find it; make it a download link (the file
    is copied into the HTML output), as MyST already does for the other files outside docs/.
    Links to anything that does not exist stay as they are, and fail the build."""

    default_priority = 870  # before the doctree-read event (880), where downloads are collected

    def apply(self, **kwargs: object) -> None:
        for node in list(self.document.findall(addnodes.pending_xref)):
            if node.get("refdomain") != "doc" or node.get("reftype") != "myst":
                continue
            target = node["reftarget"]
            if target in self.env.found_docs:
                continue
            path = Path(target if os.path.isabs(target) else DOCS / target)
            candidates = [path.with_name(path.name + ".md"), path] if path.suffix != ".md" else [path]
            found = next((c.resolve() for c in candidates if c.is_file()), None)
            if found is None or DOCS in found.parents or REPOSITORY not in found.parents:
                continue
            here = (DOCS / self.env.docname).parent
            link = addnodes.download_reference(
                refdomain=None, reftype="myst", reftarget=os.path.relpath(found, here),
                refdoc=node["refdoc"], refexplicit=node.get("refexplicit", True),
                classes=["xref", "download", "myst"])
            link += node.children
            node.replace_self(link)


def setup(app: Sphinx) -> dict[str, object]:
    app.add_transform(RepositoryFileLinks)
    return {"parallel_read_safe": True}
