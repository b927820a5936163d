// The explorers (attnlab.widgets) for keyboard and screen-reader users, in the HTML book.
//
// - A slider's handle (noUiSlider's role="slider", reached with Tab, moved with the arrow keys)
//   has no accessible name in ipywidgets 8 (jupyter-widgets/ipywidgets#2650): it is labelled by
//   the slider's description, and its value text is the readout ("b=1: L=4"), not the index
//   noUiSlider announces. The readout, which can be edited, becomes a labelled text box.
// - Toggle buttons say whether they are pressed (aria-pressed), as a labelled group.
// - Each explorer (class attnlab-explorer) gets one live region: when a control changes the
//   state, the reading of the frame now shown (the hidden .attnlab-reading sentence attnlab
//   writes into every frame, in the page's language) is announced there.
// tests/build/test_a11y_browser.py walks every explorer with the keyboard and reads the region.
(() => {
  let ids = 0;
  const idOf = (el) => el.id || (el.id = "attn-a11y-" + ++ids);
  const text = (el) => (el ? el.textContent.trim() : "");
  const watch = (el, options, callback) => new MutationObserver(callback).observe(el, options);

  function slider(handle) {
    const widget = handle.closest(".widget-slider");
    if (!widget || handle.dataset.attnA11y) return;
    handle.dataset.attnA11y = "1";
    const label = widget.querySelector(":scope > .widget-label");
    const readout = widget.querySelector(":scope > .widget-readout");
    if (label && text(label)) {
      handle.setAttribute("aria-labelledby", idOf(label));
      if (readout) {
        readout.setAttribute("role", "textbox");
        readout.setAttribute("aria-labelledby", idOf(label));
      }
    }
    if (!readout) return;
    const sync = () => {
      const value = text(readout);
      if (value && handle.getAttribute("aria-valuetext") !== value) handle.setAttribute("aria-valuetext", value);
    };
    sync();
    watch(handle, {attributes: true, attributeFilter: ["aria-valuenow", "aria-valuetext"]}, sync);
    watch(readout, {childList: true, characterData: true, subtree: true}, sync);
  }

  function toggles(group) {
    if (group.dataset.attnA11y) return;
    group.dataset.attnA11y = "1";
    group.setAttribute("role", "group");
    const label = group.querySelector(":scope > .widget-label");
    if (label && text(label)) group.setAttribute("aria-labelledby", idOf(label));
    const sync = () => group.querySelectorAll("button.widget-toggle-button").forEach((b) =>
      b.setAttribute("aria-pressed", b.classList.contains("mod-active") ? "true" : "false"));
    sync();
    watch(group, {attributes: true, attributeFilter: ["class"], subtree: true, childList: true}, sync);
  }

  // The reading of the frame on show (hidden frames have no box); the region speaks it when it changes.
  function announcer(explorer) {
    if (explorer.dataset.attnA11y) return;
    explorer.dataset.attnA11y = "1";
    const region = document.createElement("div");
    region.className = "attnlab-announcer";
    region.setAttribute("role", "status");
    region.setAttribute("aria-live", "polite");
    region.setAttribute("aria-atomic", "true");
    explorer.appendChild(region);
    const current = () => {
      const shown = [...explorer.querySelectorAll(".attnlab-reading")].filter((r) => r.getClientRects().length);
      return shown.map(text).join(" ");
    };
    let last = current();
    let queued = false;
    const update = () => {
      queued = false;
      explorer.querySelectorAll(".attnlab-reading[role]").forEach((r) => {  // one voice: the region's
        r.removeAttribute("role");
        r.removeAttribute("aria-live");
      });
      const now = current();
      if (now && now !== last) region.textContent = now;
      last = now || last;
    };
    update();
    watch(explorer, {childList: true, subtree: true, attributes: true, attributeFilter: ["class", "style"]}, (records) => {
      if (records.every((r) => region.contains(r.target))) return;
      if (!queued) {
        queued = true;
        requestAnimationFrame(update);
      }
    });
  }

  function enhance() {
    document.querySelectorAll('.noUi-handle[role="slider"]').forEach(slider);
    document.querySelectorAll(".widget-toggle-buttons").forEach(toggles);
    document.querySelectorAll(".attnlab-explorer").forEach(announcer);
  }

  // The widget manager renders the explorers after the page has loaded, and a stack renders the
  // frame it switches to when it does: look again whenever something is added.
  let pending = false;
  const start = () => {
    enhance();
    watch(document.body, {childList: true, subtree: true}, () => {
      if (!pending) {
        pending = true;
        requestAnimationFrame(() => { pending = false; enhance(); });
      }
    });
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
