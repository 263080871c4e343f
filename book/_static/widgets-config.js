/*
 * Makes the ipywidgets embed manager work offline.  Loaded (by myst-nb, only on pages with widget
 * state) after vendor/require.js and before vendor/jupyter-widgets/embed-amd.js; see
 * nb_ipywidgets_js in _config.yml.
 *
 * - RequireJS's baseUrl becomes this book's _static/ folder, so that the relative
 *   data-jupyter-widgets-cdn="vendor/jupyter-widgets/cdn/" resolves to a local folder on every page,
 *   whatever its depth (third-party widget modules would be looked up there, never on a CDN).
 * - The AMD modules that embed-amd.js defines get URLs inside vendor/jupyter-widgets/, which is where
 *   their webpack bundles look for the Font Awesome fonts they reference.
 * - ipywidgets typesets widget labels with the MathJax 2 API (MathJax.Hub.Queue) when it has no
 *   JupyterLab typesetter; the book has MathJax 3, where that throws "Cannot read properties of
 *   undefined (reading 'Queue')".  A small MathJax.Hub.Queue that forwards to typesetPromise fixes it.
 */
(function () {
  "use strict";
  var script = document.currentScript;
  if (!script || typeof window.requirejs !== "function") {
    return;
  }
  var staticRoot = script.src.replace(/[^/]*$/, ""); // absolute URL of _static/
  var widgets = "vendor/jupyter-widgets/";
  var paths = {};
  [
    "@jupyter-widgets/base",
    "@jupyter-widgets/base7",
    "@jupyter-widgets/controls",
    "@jupyter-widgets/controls7",
    "@jupyter-widgets/html-manager"
  ].forEach(function (name) {
    paths[name] = widgets + name.split("/")[1];
  });
  paths["@jupyter-widgets/html-manager/dist/libembed-amd"] = widgets + "libembed-amd";
  window.requirejs.config({ baseUrl: staticRoot, paths: paths });
  window.__jupyter_widgets_assets_path__ = staticRoot + widgets;

  function typeset(element) {
    var mj = window.MathJax;
    if (!element || !mj || !mj.startup || !mj.startup.promise) {
      return;
    }
    mj.startup.promise
      .then(function () { return mj.typesetPromise ? mj.typesetPromise([element]) : null; })
      .catch(function (err) { console.warn("MathJax could not typeset a widget label", err); });
  }

  function shimMathJax2() {
    // MathJax 3 (deferred) has replaced its configuration object by now.
    var mj = window.MathJax;
    if (!mj || mj.Hub || !mj.startup) {
      return;
    }
    mj.Hub = {
      Queue: function () {
        Array.prototype.forEach.call(arguments, function (job) {
          if (Array.isArray(job) && job[0] === "Typeset") {
            typeset(job[2]);
          }
        });
      }
    };
  }

  // Deferred scripts (MathJax) run before DOMContentLoaded; widgets render at the load event.
  document.addEventListener("DOMContentLoaded", shimMathJax2);
  window.addEventListener("load", shimMathJax2);
})();
