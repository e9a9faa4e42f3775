"""Sphinx configuration: the pages are Markdown (MyST), the API reference comes from the
docstrings (autodoc) and needs the package importable (build the extension first)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from docutils import nodes
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
# The repository's Markdown files that the pages link to (the README, results pages), and those
# they link to in turn, are pages too: mirrored by symbolic links under _repository/ (made here,
# git-ignored), so that their own relative links and images resolve as on GitHub.
MIRROR = "_repository"
LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)")


def _linked_markdown() -> list[Path]:
    """Markdown files outside docs/ that the pages link to, transitively."""
    found: set[Path] = set()
    queue = [p for p in DOCS.glob("*.md")]
    while queue:
        page = queue.pop()
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            path = (page.parent / target).resolve()
            if path.is_file() and REPOSITORY in path.parents and DOCS not in path.parents and path not in found:
                found.add(path)
                queue.append(path)
    return sorted(found)


def _mirror() -> list[str]:
    """Links under _repository/ to the repository's folders that hold linked Markdown files
    (and to the README); returns the pages' source names for include_patterns."""
    root = DOCS / MIRROR
    pages = [p.relative_to(REPOSITORY) for p in _linked_markdown()]
    root.mkdir(exist_ok=True)
    for top in sorted({page.parts[0] for page in pages}):
        link = root / top
        if not link.is_symlink():
            link.symlink_to(os.path.relpath(REPOSITORY / top, root))
    return [f"{MIRROR}/{page.as_posix()}" for page in pages]


include_patterns = ["*.md", "*.rst"] + _mirror()


def _orphan(app: Sphinx, docname: str, source: list[str]) -> None:
    """The mirrored pages are in no table of contents: say that they need none."""
    if docname.startswith(MIRROR + "/"):
        source[0] = "---\norphan: true\n---\n" + source[0]


class RepositoryFileLinks(SphinxTransform):
    """The pages link to files of the repository outside docs/ with relative paths, which work
    on GitHub. MyST makes such a link a download link (the browser saves the file); instead, a
    mirrored Markdown file becomes a link to its page, a page of docs/ reached from a mirrored
    page a link to that page, and any other file (figures, JSON, logs) a plain link to a copy in
    the HTML output that the browser shows (copied when the build finishes). Links to anything
    that does not exist stay as they are, and fail the build."""

    default_priority = 870  # before the doctree-read event (880), where downloads are collected

    def apply(self, **kwargs: object) -> None:
        docname = self.env.docname
        # Where the page's relative links start: the mirrored file's own folder, or docs/.
        here = (REPOSITORY / docname[len(MIRROR) + 1:] if docname.startswith(MIRROR + "/") else DOCS / docname).parent
        for node in list(self.document.findall(addnodes.download_reference)):
            self._relink(node, (here / node.get("reftarget", "")).resolve())
        for node in list(self.document.findall(addnodes.pending_xref)):
            if node.get("reftype") != "myst" or node.get("refdomain") not in ("doc", None) \
                    or node["reftarget"] in self.env.found_docs:
                continue
            target_text, _, anchor = node["reftarget"].partition("#")
            if anchor and not node.get("reftargetid"):
                node["reftargetid"] = anchor
            target = Path(target_text if os.path.isabs(target_text) else here / target_text)
            if target.is_dir() and REPOSITORY in target.resolve().parents:
                node.replace_self(nodes.inline("", "", *node.children))  # a folder: no page to show
                continue
            candidates = [target.with_name(target.name + ".md"), target] if target.suffix != ".md" else [target]
            found = next((c.resolve() for c in candidates if c.is_file()), None)
            if found is not None:
                self._relink(node, found)

    def _relink(self, node: nodes.Element, path: Path) -> None:
        if not path.is_file() or REPOSITORY not in path.parents:
            return
        if DOCS in path.parents and path.suffix in (".md", ".rst"):
            docname = path.relative_to(DOCS).with_suffix("").as_posix()
        elif path.suffix == ".md":
            docname = f"{MIRROR}/{path.relative_to(REPOSITORY).with_suffix('').as_posix()}"
        else:
            docname = None
        if docname is not None and docname in self.env.found_docs:
            link: nodes.Element = addnodes.pending_xref(
                refdomain="doc", reftype="myst", reftarget=docname, reftargetid=node.get("reftargetid"),
                refdoc=node["refdoc"], refexplicit=node.get("refexplicit", True), classes=["xref", "myst"])
        else:
            copy = f"{MIRROR}/{path.relative_to(REPOSITORY).as_posix()}"
            self.env.repository_files = getattr(self.env, "repository_files", set()) | {copy}
            link = nodes.reference("", "", internal=True, classes=["xref", "myst"],
                                   refuri=os.path.relpath(copy, os.path.dirname(self.env.docname) or "."))
        link += node.children
        node.replace_self(link)


def _copy_repository_files(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for copy in sorted(getattr(app.env, "repository_files", ())):
        source = REPOSITORY / copy[len(MIRROR) + 1:]
        destination = Path(app.outdir) / copy
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, destination)


def _merge(app: Sphinx, env: object, docnames: object, other: object) -> None:
    merged = getattr(env, "repository_files", set()) | getattr(other, "repository_files", set())
    setattr(env, "repository_files", merged)


def setup(app: Sphinx) -> dict[str, object]:
    app.connect("source-read", _orphan)
    app.add_transform(RepositoryFileLinks)
    app.connect("env-merge-info", _merge)
    app.connect("build-finished", _copy_repository_files)
    return {"parallel_read_safe": True}
