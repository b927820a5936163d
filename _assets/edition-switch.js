// The language switch: a header button to the same page in the other edition (see _ext/edition_switch.py).
document.addEventListener("DOMContentLoaded", () => {
  const meta = document.querySelector('meta[name="edition-switch"]');
  const bar = document.querySelector(".article-header-buttons");
  if (!meta || !bar) return;
  const link = document.createElement("a");
  link.href = meta.content;
  link.textContent = meta.dataset.label;
  link.lang = meta.dataset.lang;
  link.hreflang = meta.dataset.lang;
  link.className = "btn btn-sm edition-switch";
  link.title = meta.dataset.lang === "en" ? "Read this page in English" : "阅读本页的中文版";
  bar.prepend(link);
});
