// Resolve EPUB CFIs with epub.js itself (EpubCFI.toRange) in jsdom XHTML documents, as a web
// reading system does. stdin: a JSON array of {xhtml, cfi}; stdout: a JSON array of
// {text, printed} (the range's text, and the same without ruby annotations) or {error}.
// Run by tests/support/epubjs.py with NODE_PATH pointing at the installed modules.
const { JSDOM } = require("jsdom");
const dom = new JSDOM("");
for (const name of ["window", "document", "Node", "XPathResult", "DOMParser", "NodeFilter"]) {
  global[name] = name === "window" ? dom.window : dom.window[name];
}
const EpubCFI = require("epubjs/lib/epubcfi").default;
console.log = console.warn = () => {};  // epub.js logs a miss; the answer says it
let input = "";
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  const parsed = new Map();  // one parse per chapter: a book's records share their chapters
  const out = JSON.parse(input).map(({ xhtml, cfi }) => {
    try {
      if (!parsed.has(xhtml)) parsed.set(xhtml, new dom.window.DOMParser().parseFromString(xhtml, "application/xhtml+xml"));
      const doc = parsed.get(xhtml);
      const range = new EpubCFI(cfi).toRange(doc);
      if (!range) return { error: "no range" };
      const copy = range.cloneContents();
      copy.querySelectorAll("rt, rp, rtc").forEach((e) => e.remove());
      return { text: range.toString(), printed: copy.textContent };
    } catch (e) {
      return { error: String(e) };
    }
  });
  process.stdout.write(JSON.stringify(out));
});
