"""Real PDFs with the page boxes real books have: a MediaBox inherited from the /Pages node,
a CropBox, /Rotate (on a page or inherited). reportlab writes each page's own MediaBox; the
PDF is then edited as text (uncompressed) and its cross-reference table rebuilt, so PDFium
reads it as written, without its repair mode."""

from __future__ import annotations

import re
from pathlib import Path

A4 = (595.2756, 841.8898)


def _rebuild_xref(pdf: bytes) -> bytes:
    body = pdf[: pdf.rindex(b"xref")]
    offsets = {int(m.group(1)): m.start() for m in re.finditer(rb"(?m)^(\d+) 0 obj", body)}
    trailer = re.search(rb"trailer\s*(<<.*?>>)\s*startxref", pdf, re.S)
    assert trailer is not None
    count = max(offsets) + 1
    rows = b"".join(b"%010d 00000 n \n" % offsets[i] for i in range(1, count))
    xref = b"xref\n0 %d\n0000000000 65535 f \n" % count + rows
    return body + xref + b"trailer\n" + trailer.group(1) + b"\nstartxref\n%d\n%%%%EOF\n" % len(body)


def write_boxed_pdf(path: Path, pages: list[dict[str, object]], inherit_rotate: int | None = None) -> Path:
    """One page per entry, A4 with its MediaBox only in /Pages; entry keys: `text` (drawn near the
    top and bottom edges), `crop` ([x0, y0, x1, y1] -> /CropBox), `rotate` (-> the page's /Rotate)."""
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=A4, pageCompression=0, invariant=1)
    for page in pages:
        c.setFont("Helvetica", 12)
        c.drawString(72, A4[1] - 30, f"TOP {page.get('text', '')}")  # inside the top 50 pt
        c.drawString(72, 400, str(page.get("text", "")))
        c.drawString(72, 20, "BOTTOM")
        c.showPage()
    c.save()
    pdf = Path(path).read_bytes()
    media = re.search(rb"/MediaBox \[[^\]]*\]", pdf)
    assert media is not None
    page_dicts = list(re.finditer(rb"/Type /Page\b(?!s)", pdf))
    assert len(page_dicts) == len(pages)
    pdf = pdf.replace(media.group(0), b"").replace(b"/Rotate 0 ", b"")  # from every page
    extra_pages = media.group(0) + (b" /Rotate %d" % inherit_rotate if inherit_rotate is not None else b"")
    pdf = re.sub(rb"/Type /Pages\b", b"/Type /Pages " + extra_pages, pdf, count=1)
    chunks = re.split(rb"(/Type /Page\b(?!s))", pdf)
    out = [chunks[0]]
    for page, marker, rest in zip(pages, chunks[1::2], chunks[2::2], strict=True):
        extra = b""
        if page.get("crop"):
            extra += b" /CropBox [%s]" % " ".join(str(v) for v in page["crop"]).encode()  # type: ignore[attr-defined]
        if page.get("rotate") is not None:
            extra += b" /Rotate %d" % int(page["rotate"])  # type: ignore[call-overload]
        out += [marker + extra, rest]
    Path(path).write_bytes(_rebuild_xref(b"".join(out)))
    return Path(path)
