"""Rendering a PDF page (or a clip of it) to a PNG in the runtime dir, cached and atomic.

Clips are `[x0, y0, x1, y1]` in PDF points, user space, origin bottom-left (like a
locator's bbox). A clip is refused when malformed, inverted or outside the page; a clip
that overhangs the page is clamped to it; a clip too small to read is widened around its
centre to at least MIN_CLIP_W x MIN_CLIP_H points (within the page). A render never exceeds
MAX_PIXELS: the scale is lowered instead, and the result says so. PNGs are written to a
temp file and moved into place with os.replace, so a concurrent reader never sees half a
file; the file name encodes the original's identity, page, clip and scale (the cache key).
"""

from __future__ import annotations

import base64
import hashlib
import math
from pathlib import Path
from typing import Any

from book_agent.domain.errors import BookAgentError
from book_agent.domain.limits import DEFAULT_DPI, DPI_RANGE
from book_agent_adapters.files.atomic_write import write_atomic
from book_agent_adapters.sources.pdf.reader import PageBox, PdfSource

MAX_PIXELS = 25_000_000
MIN_CLIP_W, MIN_CLIP_H = 200.0, 100.0
SCALE_RANGE = (0.25, 16.0)
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _clip_error(clip: Any, why: str, box: PageBox | None = None) -> BookAgentError:
    details: dict[str, Any] = {"clip": clip}
    if box is not None:
        details["page_box"] = [box.x0, box.y0, box.x1, box.y1]
    return BookAgentError(
        "source.clip_invalid",
        f"clip {clip!r}: {why}",
        details=details,
        remediation="pass clip as [x0, y0, x1, y1] in PDF points with x0 < x1, y0 < y1, inside the page box",
    )


def plan_clip(box: PageBox, clip: Any) -> tuple[list[float], list[str]]:
    """The clip to render (clamped, widened) and notes on what was changed."""
    if not isinstance(clip, list | tuple) or len(clip) != 4:
        raise _clip_error(clip, "must be four numbers [x0, y0, x1, y1]")
    if any(isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) for v in clip):
        raise _clip_error(clip, "must be four finite numbers")
    x0, y0, x1, y1 = (float(v) for v in clip)
    if x0 >= x1 or y0 >= y1:
        raise _clip_error(clip, "is inverted or empty (need x0 < x1 and y0 < y1)", box)
    notes: list[str] = []
    cx0, cy0, cx1, cy1 = max(x0, box.x0), max(y0, box.y0), min(x1, box.x1), min(y1, box.y1)
    if cx0 >= cx1 or cy0 >= cy1:
        raise _clip_error(clip, "lies outside the page", box)
    if (cx0, cy0, cx1, cy1) != (x0, y0, x1, y1):
        notes.append("clip_clamped")
    widened = False
    cx0, cx1, w = _widen(cx0, cx1, MIN_CLIP_W, box.x0, box.x1)
    widened |= w
    cy0, cy1, w = _widen(cy0, cy1, MIN_CLIP_H, box.y0, box.y1)
    widened |= w
    if widened:
        notes.append("clip_widened")
    return [round(v, 2) for v in (cx0, cy0, cx1, cy1)], notes


def _widen(lo: float, hi: float, minimum: float, page_lo: float, page_hi: float) -> tuple[float, float, bool]:
    if hi - lo >= minimum:
        return lo, hi, False
    size = min(minimum, page_hi - page_lo)
    centre = (lo + hi) / 2
    lo = min(max(centre - size / 2, page_lo), page_hi - size)
    return lo, lo + size, True


def crop_for(box: PageBox, clip: list[float]) -> tuple[float, float, float, float]:
    """pypdfium2's crop (left, bottom, right, top), taken after the page's /Rotate."""
    left, bottom = clip[0] - box.x0, clip[1] - box.y0
    right, top = box.x1 - clip[2], box.y1 - clip[3]
    # /Rotate turns the page clockwise: the edges move round
    turns = {0: (left, bottom, right, top), 90: (bottom, right, top, left),
             180: (right, top, left, bottom), 270: (top, left, bottom, right)}
    return turns.get(box.rotation, turns[0])


def choose_scale(dpi: Any, scale: Any) -> float:
    if scale is not None:
        if isinstance(scale, bool) or not isinstance(scale, int | float) or not SCALE_RANGE[0] <= scale <= SCALE_RANGE[1]:
            raise BookAgentError("source.render_option_invalid", f"scale {scale!r} is outside {SCALE_RANGE[0]}..{SCALE_RANGE[1]}",
                                 details={"scale": scale}, remediation="pass a scale such as 2.0, or a dpi instead")
        return float(scale)
    if isinstance(dpi, bool) or not isinstance(dpi, int | float) or not DPI_RANGE[0] <= dpi <= DPI_RANGE[1]:
        raise BookAgentError("source.render_option_invalid", f"dpi {dpi!r} is outside {DPI_RANGE[0]}..{DPI_RANGE[1]}",
                             details={"dpi": dpi}, remediation=f"pass a dpi such as {DEFAULT_DPI}")
    return float(dpi) / 72.0


def _png_size(path: Path) -> tuple[int, int] | None:
    try:
        with open(path, "rb") as handle:
            head = handle.read(24)
    except OSError:
        return None
    if len(head) < 24 or not head.startswith(_PNG_MAGIC):
        return None
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data, prefix=".render-")


def render_page(pdf: PdfSource, renders_dir: Path, cache_tag: str, page_index: Any, clip: Any = None,
                scale: Any = None, dpi: Any = DEFAULT_DPI, include_image: bool = False,
                max_pixels: int = MAX_PIXELS) -> dict[str, Any]:
    page_index = pdf.check_page(page_index)
    wanted = choose_scale(dpi, scale)
    box = pdf.page_box(page_index)
    notes: list[str] = []
    region = [box.x0, box.y0, box.x1, box.y1]
    if clip is not None:
        region, notes = plan_clip(box, clip)
    # a hair under the asked scale: pypdfium2 ceil()s width * scale, and 792 * (150 / 72)
    # in floating point is 1650.0000001, which would add a pixel row
    used = wanted * (1 - 1e-9)
    w, h = region[2] - region[0], region[3] - region[1]
    while math.ceil(w * used) * math.ceil(h * used) > max_pixels:
        used = min(used * 0.995, math.sqrt(max_pixels / (w * h)))
        if "scaled_down" not in notes:
            notes.append("scaled_down")
    key = f"{cache_tag}|{page_index}|{region if clip is not None else 'page'}|{used:.6f}"
    name = f"p{page_index:05d}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.png"
    path = Path(renders_dir) / name
    size = _png_size(path)
    cached = size is not None
    if size is None:
        data, width, height = pdf.render_png(page_index, used, crop_for(box, region) if clip is not None else (0, 0, 0, 0))
        try:
            _write_atomic(path, data)
        except OSError as exc:  # the runtime dir: a full disk, a file in the way, permissions
            raise BookAgentError("render.write_failed", f"cannot write the page image {path}: {exc.strerror or exc}",
                                 details={"path": str(path)},
                                 remediation="check that the data dir is writable and the disk not full") from exc
        size = (width, height)
    result: dict[str, Any] = {
        "page_index": page_index,
        "page_label": pdf.page_label(page_index),
        "path": str(path),
        "media_type": "image/png",
        "width_px": size[0],
        "height_px": size[1],
        "page_size_pt": [round(v, 2) for v in box.displayed_size],
        "page_box": [box.x0, box.y0, box.x1, box.y1],
        "rotation": box.rotation,
        "clip": region if clip is not None else None,
        "requested_clip": list(clip) if clip is not None else None,
        "clip_widened": "clip_widened" in notes,
        "clip_clamped": "clip_clamped" in notes,
        "scale": round(used, 6),
        "requested_scale": round(wanted, 6),
        "dpi": round(used * 72.0, 2),
        "scaled_down": "scaled_down" in notes,
        "max_pixels": max_pixels,
        "cached": cached,
        "bytes": path.stat().st_size,
        "notes": notes,
        "host_image_support": "unknown",
    }
    if include_image:
        result["image_base64"] = base64.b64encode(path.read_bytes()).decode("ascii")
    return result
