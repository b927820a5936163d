// The Python of the "Run the code" mode (live-code.js starts it): Pyodide in a Web Worker, so a cell
// that never ends leaves the page responsive and Stop can end it. Everything is read from the book's
// own _static/pyodide/ (bookbuild/vendor_pyodide.py); attnlab.live runs the cells.
// Messages: {start: {indexURL, lang}} -> {ready: {versions}} or {failed: text};
//           {run: {id, code}} -> {done: {id, outputs}}.
let page = null;

async function start({ indexURL, lang }) {
  importScripts(indexURL + "pyodide.js");
  const pyodide = await loadPyodide({ indexURL, env: { ATTNLAB_LANG: lang, MPLBACKEND: "agg", HOME: "/home/pyodide" } });
  await pyodide.loadPackage(["attnlab"], { messageCallback: () => {} });
  pyodide.runPython("import attnlab.live; attnlab.live.install_browser_modules()");
  if (lang === "zh_CN") await addChineseFont(pyodide, indexURL);
  page = { pyodide, runner: pyodide.runPython("attnlab.live.Page()") };
  return pyodide.runPython("import sys, numpy; f'Python {sys.version.split()[0]}, NumPy {numpy.__version__}'");
}

// The Chinese figures' font (bookbuild/vendor_pyodide.py); without it they show boxes, and attnlab says so.
async function addChineseFont(pyodide, indexURL) {
  const response = await fetch(indexURL + "cjk-subset.otf").catch(() => null);
  if (!response || !response.ok) return;
  pyodide.FS.writeFile("/tmp/cjk-subset.otf", new Uint8Array(await response.arrayBuffer()));
  pyodide.runPython("from matplotlib import font_manager; font_manager.fontManager.addfont('/tmp/cjk-subset.otf')");
}

async function run({ id, code }) {
  await page.pyodide.loadPackagesFromImports(code, { messageCallback: () => {} });   // pandas, on first import
  const outputs = page.runner.run_cell(code);
  const plain = outputs.toJs({ dict_converter: Object.fromEntries });
  outputs.destroy();
  return { id, outputs: plain };
}

async function handle(data) {
  try {
    if (data.start) self.postMessage({ ready: await start(data.start) });
    else if (data.run) self.postMessage({ done: await run(data.run) });
  } catch (err) {
    self.postMessage({ failed: String(err && err.message || err), id: data.run && data.run.id });
  }
}

// one message at a time, in the order sent: a cell's packages load before it runs, never beside another
let queue = Promise.resolve();
self.onmessage = ({ data }) => { queue = queue.then(() => handle(data)); };
