// The theme's controls, named by what they show (WCAG 2.5.3, "label in name": a speech-input user
// says what they see). pydata-sphinx-theme and sphinx-togglebutton give three of them an
// aria-label that differs from their visible text:
// - the search field ("Search Ctrl+K" on screen, named "Search"): its name comes from its text, the
//   shortcut stays out of the name and is declared as a shortcut instead;
// - the colour-mode button (named "Color mode", its icons titled Light, Dark, System Settings, titles
//   that Font Awesome copies into the <svg> it draws for each): the icons are decoration, untitled;
// - a folded code cell's summary ("Show code cell source", named "Toggle hidden content"): its
//   name comes from its text, which says what it does in the page's language.
// Run when the page is parsed and again when it has loaded: the toggle script adds its summaries on
// DOMContentLoaded too, and may come after this one.
const attnNameTheControls = () => {
  document.querySelectorAll(".search-button-field").forEach((button) => {
    button.removeAttribute("aria-label");
    button.setAttribute("aria-keyshortcuts", "Control+K");
    button.querySelectorAll(".search-button__kbd-shortcut").forEach((k) => k.setAttribute("aria-hidden", "true"));
  });
  document.querySelectorAll(".theme-switch-button").forEach((button) => {
    const untitle = () => button.querySelectorAll(":scope > i, :scope > svg").forEach((icon) => {
      icon.removeAttribute("title");
      icon.removeAttribute("aria-labelledby");
      icon.setAttribute("aria-hidden", "true");
      icon.querySelectorAll("title").forEach((t) => t.remove());
    });
    untitle();
    if (!button.dataset.attnUntitled) {
      button.dataset.attnUntitled = "1";
      new MutationObserver(untitle).observe(button, {childList: true});   // Font Awesome swaps <i> for <svg>
    }
  });
  document.querySelectorAll('summary[aria-label="Toggle hidden content"]').forEach((s) => s.removeAttribute("aria-label"));
};
document.addEventListener("DOMContentLoaded", attnNameTheControls);
window.addEventListener("load", attnNameTheControls);
