// Scroll cue (loaded by html_js_files in _config.yml): a box that scrolls sideways fades out at each edge where
// more of it is hidden, so a reader on a phone sees there is more. A box "scrolls" when more than
// SLACK pixels of it are hidden: MathJax's glyph boxes overhang a formula by a pixel or two, and
// such a formula gets no cue. The classes follow the box as it is scrolled and the page resized.
(() => {
  const BOXES = [
    ".pst-scrollable-table-container", "table.docutils", "div.cell_output", "div.output.text_html",
    'mjx-container[jax="CHTML"]', "span.math", ".cell_output .widget-html-content",
    ".attnlab-readout table", "div.highlight pre", "div.cell_output pre",
  ].join(", ");
  const SLACK = 4;
  const watched = new WeakSet();
  // A box's content can change width after the page has loaded (MathJax, web fonts, an explorer
  // drawn late) with no resize of the window: each box, its first child and its formula are watched.
  const owner = new WeakMap();
  const resized = new ResizeObserver((entries) => {
    for (const entry of entries) mark(owner.get(entry.target));
  });

  // How much of a box is hidden sideways. A formula's box counts its visible formula only
  // (mjx-math): MathJax's hidden copy for screen readers is laid out wider for a while.
  function hiddenWidth(box) {
    const formulas = box.matches("span.math, mjx-container") ? box.querySelectorAll("mjx-math") : [];
    if (!formulas.length) return box.scrollWidth - box.clientWidth;
    const left = box.getBoundingClientRect().left - box.scrollLeft + box.clientLeft;
    const right = Math.max(...[...formulas].map((f) => f.getBoundingClientRect().right));
    return Math.ceil(right - left) - box.clientWidth;
  }

  function mark(box) {
    const hidden = hiddenWidth(box);
    const overflow = getComputedStyle(box).overflowX;
    const scrolls = (overflow === "auto" || overflow === "scroll") && hidden > SLACK;
    box.classList.toggle("attn-scrolls", scrolls);
    box.classList.toggle("attn-more-left", scrolls && box.scrollLeft > 1);
    box.classList.toggle("attn-more-right", scrolls && box.scrollLeft < hidden - 1);
  }

  function scan() {
    for (const box of document.querySelectorAll(BOXES)) {
      if (box.parentElement && box.parentElement.closest("mjx-container")) continue;
      if (!watched.has(box)) {
        watched.add(box);
        box.addEventListener("scroll", () => mark(box), { passive: true });
        for (const el of [box, box.firstElementChild, box.querySelector("mjx-math")]) {
          if (el) { owner.set(el, box); resized.observe(el); }
        }
      }
      mark(box);
    }
  }

  let pending = 0;
  const soon = () => { cancelAnimationFrame(pending); pending = requestAnimationFrame(scan); };
  document.addEventListener("DOMContentLoaded", () => {
    soon();
    // The explorers draw their pictures when the widget manager has rendered them, at no fixed
    // time after load, and replace them when a button is pressed: new nodes mean a new scan.
    new MutationObserver(soon).observe(document.body, { childList: true, subtree: true });
  });
  window.addEventListener("load", () => {
    soon();
    // MathJax typesets after the page has loaded; its formulas get their cue once it is done.
    const typeset = window.MathJax && window.MathJax.startup && window.MathJax.startup.promise;
    if (typeset) typeset.then(soon);
  });
  window.addEventListener("resize", soon);
  if (document.fonts) document.fonts.ready.then(soon);
  setTimeout(soon, 1500);
})();
