/*
 * A cue under whatever scrolls sideways inside the column: a chart kept at its own size on a phone (so that its
 * text stays legible), a wide table, a long display equation. Without it a reader on a phone sees a chart cut at
 * the edge and does not know the rest is there. The cue is a line of text after the element, "Scroll sideways to
 * see all of it", shown only while the element is wider than its box; it is checked when the page loads, when the
 * window changes size, when a tab is switched and when a chart finishes drawing.
 */
(function () {
  "use strict";

  var WIDE = ".course-vega, .bd-article table, mjx-container[display='true']";
  var HINT = "course-scroll-hint";

  function overflows(el) {
    return el.getClientRects().length > 0 && el.scrollWidth > el.clientWidth + 1;
  }

  function update() {
    document.querySelectorAll(WIDE).forEach(function (el) {
      // an equation sits in the theme's div.math, a flex row (reversed, for its number): the cue goes under it
      var anchor = (el.tagName.toLowerCase() === "mjx-container" && el.closest("div.math")) || el;
      var next = anchor.nextElementSibling;
      var has = next && next.classList.contains(HINT);
      if (overflows(el) && !has) {
        var hint = document.createElement("div");
        hint.className = HINT;
        hint.setAttribute("aria-hidden", "true");
        hint.textContent = "Scroll sideways to see all of it \u2192";
        anchor.insertAdjacentElement("afterend", hint);
      } else if (!overflows(el) && has) {
        next.remove();
      }
    });
  }

  var pending = null;
  function soon() {
    if (pending === null) {
      pending = window.setTimeout(function () { pending = null; update(); }, 100);
    }
  }

  window.addEventListener("load", soon);
  window.addEventListener("resize", soon);
  document.addEventListener("click", soon);          // a framework tab shows other charts
  if (typeof MutationObserver === "function") {
    document.addEventListener("DOMContentLoaded", function () {
      var article = document.querySelector("article") || document.body;
      new MutationObserver(function (records) {
        for (var i = 0; i < records.length; i++) {
          var t = records[i].target;
          if (!(t.classList && t.classList.contains(HINT))) { soon(); return; }
        }
      }).observe(article, { childList: true, subtree: true });
    });
  }
})();
