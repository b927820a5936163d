// "Going deeper" sections (see _ext/core_path.py): a section that takes more than FOLD_MINUTES to
// read starts folded behind a button under its title, unless the address points into it. The button
// says what it does and how long the section is, in minutes (a count of words means nothing in
// Chinese), in the page's language, and carries aria-expanded, so a keyboard or screen-reader user
// can open it too.
(() => {
  const WORDS_PER_MINUTE = 200;     // the reading time of the core path counts the same (bookbuild/reading_time.py)
  const CJK_PER_WORD = 2;           // a Chinese translation runs about two characters per English word
  const FOLD_MINUTES = 1.25;        // 250 English words
  const zh = (document.documentElement.lang || "").startsWith("zh");
  const say = (open, minutes) => zh
    ? (open ? "收起本节" : `展开本节（约 ${minutes} 分钟）`)
    : (open ? "Fold this section" : `Show this section (about ${minutes} min)`);

  function readingMinutes(text) {
    const cjk = (text.match(/[\u3400-\u9fff]/g) || []).length;
    const words = text.replace(/[\u3400-\u9fff\u3000-\u303f\uff00-\uffef]/g, " ").split(/\s+/).filter(Boolean).length;
    return (words + cjk / CJK_PER_WORD) / WORDS_PER_MINUTE;
  }

  function setUp(section) {
    const heading = section.querySelector(":scope > :is(h2, h3, h4)");
    if (!heading) return;
    const minutes = readingMinutes(section.textContent);
    if (minutes < FOLD_MINUTES) return;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "going-deeper-toggle";
    const target = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
    const set = (open) => {
      section.classList.toggle("folded", !open);
      button.setAttribute("aria-expanded", String(open));
      button.textContent = say(open, Math.ceil(minutes));
    };
    button.addEventListener("click", () => set(section.classList.contains("folded")));
    heading.after(button);
    set(Boolean(target && section.contains(target)));
  }

  const run = () => document.querySelectorAll("section.going-deeper").forEach(setUp);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", run);
  else run();
})();
