// "Run the code" (issue 30): the button, and nothing more until it is pressed. _ext/live_code.py adds
// this script to pages with a code cell that can run in the browser (class live-runs). It puts a Run
// button and a line of status under the title; pressing it loads live-code-run.js, which starts Python
// (Pyodide) from _static/pyodide/ and runs the cells. A reader who never presses Run loads only this.
// Without WebAssembly or Web Workers the button is disabled and the line says why.
(() => {
  const zh = (document.documentElement.lang || "").startsWith("zh");
  const T = zh ? {
    run: "运行代码",
    about: (mb) => `在浏览器中运行本页的 Python（Pyodide，WebAssembly）：首次最多下载 ${mb} MB，之后可修改任一单元格并重新运行。`,
    noWasm: "此浏览器不支持 WebAssembly 或 Web Worker，无法在页面中运行代码；下面显示的是本书构建时的输出。",
    failed: "无法载入运行代码所需的脚本 live-code-run.js；下面显示的仍是本书构建时的输出。",
  } : {
    run: "Run the code",
    about: (mb) => `Runs this page's Python in your browser (Pyodide, WebAssembly): at most ${mb} MB to download on first use; then edit any cell and run it again.`,
    noWasm: "This browser lacks WebAssembly or Web Workers, so the code cannot run in the page; the outputs shown are the book's.",
    failed: "The script live-code-run.js could not be loaded; the outputs shown are still the book's.",
  };
  const runScript = document.currentScript.src.replace(/live-code\.js(\?.*)?$/, "live-code-run.js");
  window.liveCode = { pressed: null, firstOutputSeconds: null };

  function setUp() {
    if (!document.querySelector(".cell.live-runs")) return;
    const bar = document.createElement("div");
    bar.className = "live-bar";
    const button = document.createElement("button");
    button.type = "button";
    button.className = "live-run";
    button.textContent = T.run;
    const status = document.createElement("p");
    status.className = "live-status";
    status.setAttribute("role", "status");
    status.setAttribute("aria-live", "polite");
    const megabytes = (document.querySelector('meta[name="live-code-megabytes"]') || {}).content || "?";
    status.textContent = T.about(megabytes);
    bar.append(button, status);
    const article = document.querySelector("article.bd-article") || document.querySelector("main") || document.body;
    const heading = article.querySelector("h1");
    (heading || article.firstElementChild).after(bar);
    if (typeof WebAssembly !== "object" || typeof Worker !== "function") {
      button.disabled = true;
      status.textContent = T.noWasm;
      return;
    }
    button.onclick = () => {
      window.liveCode.pressed = performance.now();
      button.disabled = true;
      const script = document.createElement("script");
      script.src = runScript;
      script.onerror = () => { status.textContent = T.failed; button.disabled = false; script.remove(); };
      document.head.append(script);
    };
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setUp);
  else setUp();
})();
