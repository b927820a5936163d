// The widget manager (embed-amd.js) finds its icon fonts relative to its AMD module id,
// which require.js would resolve against the page's own folder. Point that id at the
// copy served with the book, so every page, at any depth, loads the fonts locally.
if (window.require && window.requirejs) {
  var root = document.documentElement.dataset.content_root || "";
  require.config({paths: {"@jupyter-widgets/html-manager/dist": root + "_static/widgets"}});
}

// The widget manager typesets widget labels with MathJax 2's API (MathJax.Hub.Queue); the
// book serves MathJax 3. Translate the one call it makes, once MathJax 3 has loaded.
document.addEventListener("DOMContentLoaded", function () {
  if (window.MathJax && !window.MathJax.Hub) {
    window.MathJax.Hub = {
      Queue: function (job) {
        var element = job && job[2];
        if (element && window.MathJax.typesetPromise) {
          window.MathJax.typesetPromise([element]).catch(function () {});
        }
      },
    };
  }
});
