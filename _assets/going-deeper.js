// "Going deeper" sections (see _ext/core_path.py): a section longer than FOLD_WORDS words starts
// folded behind a button under its title, unless the address points into it. The button says what
// it does in the page's language and carries aria-expanded, so a keyboard or screen-reader user can
// open it too.
(() => {
  const FOLD_WORDS = 250;
  const zh = (document.documentElement.lang || "").startsWith("zh");
  const say = (open, words) => zh
    ? (open ? "收起本节" : `展开本节（约 ${words} 词）`)
    : (open ? "Fold this section" : `Show this section (about ${words} words)`);

  function setUp(section) {
    const heading = section.querySelector(":scope > :is(h2, h3, h4)");
    if (!heading) return;
    const words = section.textContent.trim().split(/\s+/).length;
    if (words < FOLD_WORDS) return;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "going-deeper-toggle";
    const target = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
    const set = (open) => {
      section.classList.toggle("folded", !open);
      button.setAttribute("aria-expanded", String(open));
      button.textContent = say(open, words);
    };
    button.addEventListener("click", () => set(section.classList.contains("folded")));
    heading.after(button);
    set(Boolean(target && section.contains(target)));
  }

  const run = () => document.querySelectorAll("section.going-deeper").forEach(setUp);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", run);
  else run();
})();
