// Search snippets: formulas as plain text ("α(1−α)") instead of their TeX source.
// Sphinx's searchtools.js cuts each snippet out of the page's text, where MathJax has not run;
// this wraps Search.htmlToText (search page only) and rewrites every .math element first.
(() => {
  if (typeof Search === "undefined" || !Search.htmlToText) return;
  const SYMBOLS = {
    alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", varepsilon: "ε", zeta: "ζ", eta: "η",
    theta: "θ", kappa: "κ", lambda: "λ", mu: "μ", nu: "ν", xi: "ξ", pi: "π", rho: "ρ", sigma: "σ",
    tau: "τ", phi: "φ", varphi: "φ", chi: "χ", psi: "ψ", omega: "ω", Gamma: "Γ", Delta: "Δ",
    Theta: "Θ", Lambda: "Λ", Pi: "Π", Sigma: "Σ", Phi: "Φ", Psi: "Ψ", Omega: "Ω", sum: "Σ", prod: "Π",
    sqrt: "√", cdot: "·", times: "×", odot: "⊙", otimes: "⊗", le: "≤", leq: "≤", ge: "≥", geq: "≥",
    ne: "≠", neq: "≠", approx: "≈", to: "→", rightarrow: "→", mapsto: "↦", infty: "∞", in: "∈",
    partial: "∂", nabla: "∇", top: "ᵀ", ldots: "…", dots: "…", cdots: "⋯", pm: "±", mid: "|",
    lVert: "‖", rVert: "‖", Vert: "‖", langle: "⟨", rangle: "⟩", forall: "∀", exists: "∃",
  };
  const plain = (tex) => tex
    .replace(/^\s*(\\\(|\\\[|\$\$?)|(\\\)|\\\]|\$\$?)\s*$/g, "")      // the delimiters
    .replace(/\\(begin|end)\{[^}]*\}/g, " ")
    .replace(/\\frac\{([^{}]*)\}\{([^{}]*)\}/g, "($1)/($2)")
    .replace(/\\([A-Za-z]+)/g, (m, name) => SYMBOLS[name] ?? "")       // other commands: dropped
    .replace(/\\[,;:! ]/g, " ")
    .replace(/[{}]/g, "")
    .replace(/-/g, "−")
    .replace(/\s+/g, " ")
    .trim();
  const htmlToText = Search.htmlToText;
  Search.htmlToText = (htmlString, anchor) => {
    const doc = new DOMParser().parseFromString(htmlString, "text/html");
    doc.querySelectorAll(".math").forEach((el) => { el.textContent = ` ${plain(el.textContent)} `; });
    return htmlToText(doc.documentElement.outerHTML, anchor);
  };
})();
