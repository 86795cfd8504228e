"""plotly's ``FigureWidget`` without plotly.js in its widget state. Used by: labkit._render.

plotly's widget carries its whole 5 MB script (plotly.js with it) in the ``_esm`` trait, so every
panel added 5 MB to a saved or executed notebook. :class:`FigureWidget`'s ``_esm`` is a 3 kB loader:
the browser page asks the kernel for plotly's script once, over the widget's comm (the kernel also
sends it with its first figure, so a panel draws while "Run All" still runs), imports it, keeps it
for every later figure of the page, then hands each figure to plotly's own code; what Python sent
before then is replayed to it. Offline: the script comes from the installed plotly package.
What it leaves out: a page with no kernel (a notebook opened with saved widget state, no kernel
running) shows "Waiting for plotly.js from the kernel" where the figure would be.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import plotly
import plotly.graph_objects as go

__all__ = ["BUNDLE", "LOADER", "FigureWidget"]

BUNDLE = Path(plotly.__file__).parent / "package_data" / "widgetbundle.js"  # plotly's widget script

# The loader (an anywidget module): plotly's module is imported once per page and cached on
# globalThis, asked of each kernel (widget manager) once while it is missing; each figure buffers
# the _py2js_* messages that arrive before plotly's code and replays them to it.
LOADER = """// labkit._figure_widget: plotly's FigureWidget, its script fetched from the kernel once per page
const KEY = Symbol.for("labkit.plotly-widget");
const PY2JS = ["_py2js_addTraces", "_py2js_deleteTraces", "_py2js_moveTraces", "_py2js_restyle",
  "_py2js_relayout", "_py2js_update", "_py2js_animate", "_py2js_removeLayoutProps",
  "_py2js_removeTraceProps"];

function plotlyModule(model) {  // plotly's widget module, imported once per page
  let entry = globalThis[KEY];
  if (!entry) {
    entry = globalThis[KEY] = {asked: new WeakSet()};
    entry.module = new Promise((resolve) => { entry.deliver = resolve; }).then(async (script) => {
      const url = URL.createObjectURL(new Blob([script], {type: "text/javascript"}));
      try { return await import(/* webpackIgnore: true */ url); } finally { URL.revokeObjectURL(url); }
    });
    entry.module.catch(() => { if (globalThis[KEY] === entry) delete globalThis[KEY]; });
  }
  if (entry.deliver) {  // the script not here yet: ask this figure's kernel (once each), listen
    const kernel = model.widget_manager || model;
    if (!entry.asked.has(kernel)) {
      entry.asked.add(kernel);
      model.send({labkit: "plotly-script?"});
    }
    const listen = (msg, buffers) => {
      if (msg && msg.labkit === "plotly-script" && entry.deliver) {
        const deliver = entry.deliver;
        entry.deliver = null;
        deliver(buffers[0]);
      }
    };
    model.on("msg:custom", listen);
    entry.module.finally(() => model.off("msg:custom", listen)).catch(() => {});
  }
  return entry.module;
}

export default () => {
  let plotly = null, ready = null;
  return {
    initialize({model}) {
      const early = [], handlers = {}, now = {};
      const keep = PY2JS.map((key) => [`change:${key}`, () => early.push([key, model.get(key)])]);
      for (const [event, fn] of keep) model.on(event, fn);
      let replayed = false;
      const proxy = {...model, get: (key) => (key in now ? now[key] : model.get(key)),
        on: (event, fn) => { if (!replayed) (handlers[event] ??= []).push(fn); model.on(event, fn); }};
      ready = plotlyModule(model).then((module) => {
        for (const [event, fn] of keep) model.off(event, fn);
        plotly = module.default();
        plotly.initialize({model: proxy});
        for (const [key, value] of early) {  // what Python sent before plotly's code listened
          now[key] = value;
          for (const fn of handlers[`change:${key}`] || []) fn();
          delete now[key];
        }
        replayed = true;
      });
    },
    async render({el, signal}) {
      el.textContent = "Waiting for plotly.js from the kernel (if this stays, run the cell again)…";
      try { await ready; } catch (error) {
        el.textContent = `plotly.js could not be loaded: ${error}`;
        return;
      }
      if (signal && signal.aborted) return;
      el.textContent = "";
      const cleanup = await plotly.render({el});
      // plotly redraws a responsive figure when the window resizes, not when its cell does (a
      // side bar closed): redraw it when its element's width changes
      let width = null, stopped = false, box = null;
      const observer = new ResizeObserver(([entry]) => {  // the plot is in the box, not always in el
        const gd = box.querySelector(".js-plotly-plot"), now = Math.round(entry.contentRect.width);
        if (now !== width && gd && gd._responsiveChartHandler) {
          width = now;
          gd._responsiveChartHandler();
        }
      });
      const watch = () => {  // the output's box, once el is in the page (el itself may not resize)
        if (stopped) return;
        if (!el.isConnected) { requestAnimationFrame(watch); return; }
        box = el.closest(".jp-OutputArea-output") || el.parentElement || el;
        observer.observe(box);
      };
      watch();
      return () => { stopped = true; observer.disconnect(); if (typeof cleanup === "function") cleanup(); };
    },
  };
};
"""


@cache
def script() -> bytes:
    """plotly's widget script, read once per process."""
    return BUNDLE.read_bytes()


class FigureWidget(go.FigureWidget):
    """plotly's ``FigureWidget`` (notebook 04's panels), whose widget state holds :data:`LOADER`
    rather than plotly's script: the script goes to the browser page in a message, once."""

    _esm = LOADER
    _sent_first = False  # this kernel has sent the script with its first figure

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._config = {**self._config, "responsive": True}  # redrawn to the page's new width (zoom)
        self.on_msg(self._on_custom_msg)
        if not FigureWidget._sent_first:
            FigureWidget._sent_first = True
            self.send_script()

    def send_script(self) -> None:
        """Send plotly's script to the browser, as a binary buffer beside a small message."""
        self.send({"labkit": "plotly-script"}, buffers=[script()])

    def _on_custom_msg(self, _widget, content, _buffers) -> None:
        if isinstance(content, dict) and content.get("labkit") == "plotly-script?":
            self.send_script()
