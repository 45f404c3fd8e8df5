"""A PDF page rendered with passages highlighted: their text boxes from PDFium's char boxes.

Each target (a record id or a quotation) is located like `locate` does (verified against the
page text), its characters' loose boxes are merged into one rectangle per text line, and the
rectangles are painted translucent onto the page render. The boxes are reported in PDF points
(user space, origin bottom-left, like a locator's bbox), so a caller can check them or crop to
them. The highlighted PNG is cached beside the plain one, keyed by the boxes as well.
"""

from __future__ import annotations

import hashlib
import io
from array import array
from pathlib import Path
from typing import Any

from book_agent.domain.errors import BookAgentError
from book_agent_adapters.files.atomic_write import write_atomic
from book_agent_adapters.sources.pdf.reader import PageBox

MAX_TARGETS = 20
FILL = (255, 214, 0, 96)  # translucent yellow: the text stays readable under it
EDGE = (230, 120, 0, 255)


def line_boxes(text: str, flat: array[float], start: int, end: int) -> list[list[float]]:
    """One [x0, y0, x1, y1] per text line of text[start:end] (PDF points). A char starts a new
    line when its vertical centre lies outside the current line's band or it runs backwards."""
    lines: list[list[float]] = []
    for i in range(max(0, start), min(end, len(text))):
        if text[i].isspace():
            continue
        x0, y0, x1, y1 = flat[4 * i : 4 * i + 4]
        if x1 <= x0 or y1 <= y0:
            continue  # no glyph box (a generated char)
        centre = (y0 + y1) / 2
        if lines and lines[-1][1] <= centre <= lines[-1][3] and x0 >= lines[-1][0] - 1:
            line = lines[-1]
            line[0], line[1], line[2], line[3] = min(line[0], x0), min(line[1], y0), max(line[2], x1), max(line[3], y1)
        else:
            lines.append([x0, y0, x1, y1])
    return [[round(v, 2) for v in line] for line in lines]


def to_pixels(rect: list[float], region: list[float], rotation: int, scale: float) -> tuple[float, ...]:
    """A PDF-point rectangle as (left, top, right, bottom) pixels of a render of `region`
    (user space) turned by /Rotate (clockwise) at `scale`."""
    w, h = (region[2] - region[0]) * scale, (region[3] - region[1]) * scale
    u0, u1 = (rect[0] - region[0]) * scale, (rect[2] - region[0]) * scale
    v0, v1 = (region[3] - rect[3]) * scale, (region[3] - rect[1]) * scale  # y grows downwards
    corners = [(u0, v0), (u1, v1)]
    turned = {0: corners, 90: [(h - v, u) for u, v in corners],
              180: [(w - u, h - v) for u, v in corners], 270: [(v, w - u) for u, v in corners]}
    (a, b), (c, d) = turned.get(rotation, corners)
    return min(a, c), min(b, d), max(a, c), max(b, d)


def paint(png: bytes, rects_px: list[tuple[float, ...]]) -> tuple[bytes, int, int]:
    from PIL import Image, ImageDraw

    with Image.open(io.BytesIO(png)) as opened:
        base = opened.convert("RGBA")
    layer = Image.new("RGBA", base.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(layer)
    for left, top, right, bottom in rects_px:
        draw.rectangle((left - 1, top - 1, right + 1, bottom + 1), fill=FILL, outline=EDGE, width=2)
    out = io.BytesIO()
    Image.alpha_composite(base, layer).convert("RGB").save(out, format="PNG", compress_level=1)
    return out.getvalue(), base.width, base.height


def check_targets(targets: Any) -> list[Any]:
    if not isinstance(targets, list | tuple) or not 1 <= len(targets) <= MAX_TARGETS:
        raise BookAgentError("source.highlight_invalid",
                             f"highlight takes 1 to {MAX_TARGETS} record ids or quotations",
                             details={"count": len(targets) if isinstance(targets, list | tuple) else None},
                             remediation="pass record_ids from search hits, or quotes copied from the page")
    return list(targets)


def describe(target: Any, locator: dict[str, Any], boxes: list[list[float]]) -> dict[str, Any]:
    """One highlight as the render result reports it."""
    out: dict[str, Any] = {"record_id": locator.get("record_id")}
    if isinstance(target, str):
        out["quote"] = target if len(target) <= 200 else target[:200] + "…"
    check = locator.get("verification") or {}
    out.update(page_index=locator.get("page_index"), char_start=locator.get("char_start"),
               char_end=locator.get("char_end"), method=check.get("method"), boxes=boxes)
    return out


def highlighted_file(plain: dict[str, Any], box: PageBox, boxes: list[list[float]]) -> dict[str, Any]:
    """Paint `boxes` onto the plain render's PNG (cached by its path and the boxes)."""
    source = Path(plain["path"])
    key = hashlib.sha256(f"{source.name}|{boxes}".encode()).hexdigest()[:16]
    target = source.with_name(f"{source.stem}-hl-{key}.png")
    cached = target.is_file()
    if not cached:
        region = plain["clip"] or plain["page_box"]
        rects = [to_pixels(b, region, box.rotation, plain["scale"]) for b in boxes]
        data, _, _ = paint(source.read_bytes(), rects)
        try:
            write_atomic(target, data, prefix=".render-")
        except OSError as exc:
            raise BookAgentError("render.write_failed", f"cannot write the page image {target}: {exc.strerror or exc}",
                                 details={"path": str(target)},
                                 remediation="check that the data dir is writable and the disk not full") from exc
    return {"path": str(target), "cached": cached, "bytes": target.stat().st_size}


def render_highlights(resolver: Any, targets: Any, page_index: Any = None, page_label: Any = None,
                      **render: Any) -> dict[str, Any]:
    """The page with each target's passage highlighted. The page is the one asked for, else the
    first target's; targets found on other pages are listed in `highlights_elsewhere`."""
    import base64

    include_image = bool(render.pop("include_image", False))
    pdf = resolver.pdf()  # an EPUB is source.not_renderable before any passage is looked for
    found = [(target, resolver.locate(target)) for target in check_targets(targets)]
    if page_index is None and page_label is None:
        page_index = next((loc.get("page_index") for _, loc in found if loc.get("page_index") is not None), None)
        if page_index is None:
            raise BookAgentError("source.highlight_invalid", "none of the passages was found on a page",
                                 details={"count": len(found)},
                                 remediation="pass a page_index, or record ids / quotes that locate_source finds")
    plain = dict(resolver.render_page(page_index, page_label=page_label, **render))
    page = plain["page_index"]
    shown, elsewhere, boxes_all = [], [], []
    for target, loc in found:
        if loc.get("page_index") != page or loc.get("char_start") is None:
            elsewhere.append(describe(target, loc, []))
            continue
        text, flat = pdf.char_boxes(page)
        boxes = line_boxes(text, flat, loc["char_start"], loc["char_end"])
        shown.append(describe(target, loc, boxes))
        boxes_all.extend(boxes)
    plain.update(highlights=shown, highlights_elsewhere=elsewhere)
    if not boxes_all:
        plain["notes"] = [*plain["notes"], "nothing_highlighted"]
        plain["highlight_note"] = ("no passage has text boxes on this page (a scan without a text layer, "
                                   "or the passages are elsewhere): the plain page is returned")
    else:
        plain.update(highlighted_file(plain, pdf.page_box(page), boxes_all))
    if include_image:
        plain["image_base64"] = base64.b64encode(Path(plain["path"]).read_bytes()).decode("ascii")
    return plain
