// "Run the code" (issue 30), loaded by live-code.js when the reader presses Run, with nothing else
// before it: live-code-worker.js starts Python from _static/pyodide/, every cell that can run (class
// live-runs, _ext/live_code.py) becomes editable and runs in page order, and each one's live output
// replaces the book's output under it (the book's stays until then). A cell that cannot run
// (live-static, with live-needs-<library> or live-uses-<name>) keeps the book's output and says why.
// Without the files, the page says so and stays as it was.
(() => {
  const zh = (document.documentElement.lang || "").startsWith("zh");
  const T = zh ? {
    runAll: "全部重新运行", runCell: "运行", stop: "停止",
    starting: "正在浏览器中启动 Python……", ready: (v, s) => `Python 已就绪（${v}，用时 ${s} 秒）。`,
    running: (n, all) => `正在运行第 ${n}/${all} 个单元格……`, done: "本页可在浏览器中运行的单元格已全部运行。",
    failed: (e) => `无法启动 Python：读取本书的 _static/pyodide/ 文件失败（${e}）。若是直接打开的本地文件，请在书的目录中运行 python -m http.server 后经由它打开。下面显示的仍是本书构建时的输出。`,
    stopped: "已停止：Python 已重新启动，上面的单元格需要重新运行（“全部重新运行”）。",
    label: (v) => `在你的浏览器中计算（${v}）；本书的输出由构建时的版本计算，末位数字可能不同。`,
    editor: (n) => `第 ${n} 个代码单元格，可编辑；Shift+Enter 运行`,
    needs: (lib) => `此单元格需要 ${lib}，它无法在浏览器中运行；下面是本书构建时的输出。`,
    uses: (name) => `此单元格用到 ${name}，它由一个无法在浏览器中运行的单元格算出；下面是本书构建时的输出。`,
    figure: "此单元格在浏览器中画出的图",
  } : {
    runAll: "Run all again", runCell: "Run", stop: "Stop",
    starting: "Starting Python in your browser…", ready: (v, s) => `Python is ready (${v}, ${s} s).`,
    running: (n, all) => `Running cell ${n} of ${all}…`, done: "Every cell of this page that runs in the browser has run.",
    failed: (e) => `Python could not be started: the book's files in _static/pyodide/ could not be read (${e}). If you opened the book as a local file, run python -m http.server in its folder and open it through that. The outputs shown are still the book's.`,
    stopped: "Stopped: Python was restarted, so the cells above must run again (Run all again).",
    label: (v) => `Computed in your browser (${v}); the book's output was computed with the build's versions, so the last digits may differ.`,
    editor: (n) => `Code cell ${n}, editable; Shift+Enter runs it`,
    needs: (lib) => `This cell needs ${lib}, which does not run in the browser; the output below is the book's.`,
    uses: (name) => `This cell uses ${name}, which a cell that cannot run in the browser computed; the output below is the book's.`,
    figure: "A figure this cell drew in your browser",
  };
  const staticRoot = document.currentScript.src.replace(/live-code-run\.js(\?.*)?$/, "");
  const cells = [...document.querySelectorAll(".cell.live-runs, .cell.live-static")];
  const runnable = cells.filter((c) => c.classList.contains("live-runs"));
  let worker = null, versions = "", pending = new Map(), nextId = 0, busy = false;

  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const runButton = document.querySelector(".live-bar .live-run");      // made by live-code.js
  const status = document.querySelector(".live-bar .live-status");

  function startWorker() {
    return new Promise((resolve, reject) => {
      const started = performance.now();
      try {
        worker = new Worker(staticRoot + "live-code-worker.js");
      } catch (err) {
        reject(err);
        return;
      }
      worker.onerror = (event) => reject(new Error(event.message || "the worker could not load"));
      worker.onmessage = ({ data }) => {
        if (data.ready) {
          versions = data.ready;
          worker.onmessage = receive;
          resolve(((performance.now() - started) / 1000).toFixed(1));
        } else if (data.failed) reject(new Error(data.failed));
      };
      worker.postMessage({ start: { indexURL: staticRoot + "pyodide/", lang: zh ? "zh_CN" : "en" } });
    });
  }

  function receive({ data }) {
    const id = data.done ? data.done.id : data.id;
    const done = pending.get(id);
    if (!done) return;
    pending.delete(id);
    done(data.done ? data.done.outputs : [{ kind: "error", text: data.failed }]);
  }

  function execute(code) {
    return new Promise((resolve) => {
      const id = nextId++;
      pending.set(id, resolve);
      worker.postMessage({ run: { id, code } });
    });
  }

  function showOutputs(cell, outputs) {
    let box = cell.querySelector(":scope > .live-output");
    if (!box) {
      box = el("div", "live-output");
      box.setAttribute("role", "region");
      box.setAttribute("aria-label", T.label(versions));
      cell.querySelector(":scope > .cell_input").after(box);
    }
    box.replaceChildren(el("p", "live-label", T.label(versions)));
    for (const out of outputs) box.append(render(out));
    cell.querySelectorAll(":scope > .cell_output").forEach((o) => { o.hidden = true; });
    if (window.MathJax && MathJax.typesetPromise) MathJax.typesetPromise([box]).catch(() => {});
  }

  function render(out) {
    if (out.kind === "stream") return el("pre", "live-stream", out.text);
    if (out.kind === "error") return el("pre", "live-error", out.text);
    if (out.kind === "note") return el("p", "live-note", out.text);
    const data = out.data;
    if (data["image/png"]) {
      const img = el("img", "live-figure");
      img.src = "data:image/png;base64," + data["image/png"];
      img.alt = data["text/plain"] || T.figure;
      return img;
    }
    if (data["text/html"] || data["image/svg+xml"]) {
      const div = el("div", "live-rich");
      div.innerHTML = data["text/html"] || data["image/svg+xml"];   // the reader's own code made it
      return div;
    }
    if (data["text/latex"]) return el("div", "live-math", data["text/latex"]);
    return el("pre", "live-stream", data["text/markdown"] || data["text/plain"]);
  }

  async function runCell(cell) {
    const editor = cell.querySelector(".live-editor");
    const stop = cell.querySelector(".live-stop");
    const timer = setTimeout(() => { stop.hidden = false; }, 2000);
    cell.classList.add("live-running");
    const outputs = await execute(editor.value);
    clearTimeout(timer);
    stop.hidden = true;
    cell.classList.remove("live-running");
    if (outputs !== null) showOutputs(cell, outputs);
    return outputs !== null;
  }

  async function runAll(pressed) {   // pressed: when Run was pressed, to time the first output
    if (busy) return;
    busy = true;
    for (const [i, cell] of runnable.entries()) {
      status.textContent = T.running(i + 1, runnable.length);
      if (!(await runCell(cell))) { busy = false; return; }
      if (i === 0 && typeof pressed === "number") window.liveCode.firstOutputSeconds = (performance.now() - pressed) / 1000;
    }
    status.textContent = T.done;
    busy = false;
  }

  function stopPython() {
    worker.terminate();
    for (const done of pending.values()) done(null);
    pending.clear();
    status.textContent = T.starting;
    startWorker().then(() => { status.textContent = T.stopped; }, (err) => { status.textContent = T.failed(err.message); });
  }

  function makeEditable(cell, n) {
    const input = cell.querySelector(":scope > .cell_input");
    const pre = input.querySelector("pre");
    const editor = el("textarea", "live-editor");
    editor.value = pre.textContent.replace(/\n$/, "");
    editor.rows = Math.max(2, editor.value.split("\n").length);
    editor.spellcheck = false;
    editor.setAttribute("aria-label", T.editor(n));
    editor.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && event.shiftKey) { event.preventDefault(); runCell(cell); }
    });
    editor.addEventListener("input", () => { editor.rows = Math.max(2, editor.value.split("\n").length); });
    const runOne = el("button", "live-cell-run", T.runCell);
    runOne.type = "button";
    runOne.addEventListener("click", () => runCell(cell));
    const stop = el("button", "live-stop", T.stop);
    stop.type = "button";
    stop.hidden = true;
    stop.addEventListener("click", stopPython);
    const tools = el("div", "live-tools");
    tools.append(runOne, stop);
    input.replaceChildren(editor, tools);
  }

  function explainStatic(cell) {
    const needs = [...cell.classList].find((c) => c.startsWith("live-needs-"));   // live-needs-PyTorch
    const uses = [...cell.classList].find((c) => c.startsWith("live-uses-"));     // live-uses-v_l
    const text = uses ? T.uses(uses.slice("live-uses-".length)) : T.needs(needs.slice("live-needs-".length));
    cell.querySelector(":scope > .cell_input").after(el("p", "live-static-note", text));
  }

  async function start() {
    runButton.disabled = true;
    status.textContent = T.starting;
    const pressed = window.liveCode.pressed;
    let seconds;
    try {
      seconds = await startWorker();
    } catch (err) {
      status.textContent = T.failed(err.message);
      runButton.disabled = false;
      runButton.onclick = () => { window.liveCode.pressed = performance.now(); start(); };   // try again
      return;
    }
    status.textContent = T.ready(versions, seconds);
    runnable.forEach((cell, i) => makeEditable(cell, i + 1));
    cells.filter((c) => c.classList.contains("live-static")).forEach(explainStatic);
    runButton.textContent = T.runAll;
    runButton.disabled = false;
    runButton.onclick = () => runAll();
    await runAll(pressed);
  }

  start();
})();
