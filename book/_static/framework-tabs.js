/*
 * Keras / PyTorch tabs for notebook cells.
 *
 * myst-nb renders a code cell's tags as classes on its container: <div class="cell tag_keras ...">.
 * A cell tagged `keras` immediately followed by a cell tagged `pytorch` (or the other way round)
 * becomes a tab set with one button per framework; a cell's outputs stay inside it, so switching
 * tabs switches outputs too.  The reader's choice is stored in localStorage ("course-framework"),
 * applied to every tab set on the page at once and to every page loaded later.  A lone tagged cell
 * gets a label naming its framework.
 *
 * Markup (WAI-ARIA tabs pattern; arrow keys, Home and End move between tabs):
 *   <div class="framework-tabs">
 *     <div class="framework-tabs__list" role="tablist" aria-label="Framework">
 *       <button role="tab" data-framework="keras" aria-selected="true" ...>Keras</button>
 *       <button role="tab" data-framework="pytorch" aria-selected="false" ...>PyTorch</button>
 *     </div>
 *     <div class="cell tag_keras" role="tabpanel" data-framework="keras" ...>...</div>
 *     <div class="cell tag_pytorch" role="tabpanel" data-framework="pytorch" hidden ...>...</div>
 *   </div>
 */
(function () {
  "use strict";

  var STORAGE_KEY = "course-framework";
  var FRAMEWORKS = [
    { key: "keras", label: "Keras" },
    { key: "pytorch", label: "PyTorch" }
  ];
  var DEFAULT = "keras";
  var counter = 0;

  function isFramework(name) {
    return FRAMEWORKS.some(function (f) { return f.key === name; });
  }

  function frameworkOf(el) {
    if (!el || !el.classList || !el.classList.contains("cell")) {
      return null;
    }
    var found = FRAMEWORKS.filter(function (f) { return el.classList.contains("tag_" + f.key); });
    return found.length === 1 ? found[0].key : null; // a cell tagged with both is not a tab
  }

  function label(key) {
    var f = FRAMEWORKS.filter(function (x) { return x.key === key; })[0];
    return f ? f.label : key;
  }

  function stored() {
    try {
      var value = window.localStorage.getItem(STORAGE_KEY);
      return isFramework(value) ? value : null;
    } catch (e) {
      return null; // storage disabled (privacy settings, file://)
    }
  }

  function store(value) {
    try {
      window.localStorage.setItem(STORAGE_KEY, value);
    } catch (e) {
      /* storage disabled: the choice then lasts for this page only */
    }
  }

  function makeTabs(first, second) {
    var id = "framework-tabs-" + ++counter;
    var wrapper = document.createElement("div");
    wrapper.className = "framework-tabs";
    var list = document.createElement("div");
    list.className = "framework-tabs__list";
    list.setAttribute("role", "tablist");
    list.setAttribute("aria-label", "Framework");
    wrapper.appendChild(list);

    first.parentNode.insertBefore(wrapper, first);
    var cells = {};
    cells[frameworkOf(first)] = first;
    cells[frameworkOf(second)] = second;
    FRAMEWORKS.forEach(function (f) {
      var cell = cells[f.key];
      var button = document.createElement("button");
      button.type = "button";
      button.className = "framework-tabs__tab";
      button.id = id + "-tab-" + f.key;
      button.textContent = f.label;
      button.setAttribute("role", "tab");
      button.setAttribute("data-framework", f.key);
      list.appendChild(button);
      cell.id = cell.id || id + "-panel-" + f.key;
      button.setAttribute("aria-controls", cell.id);
      cell.setAttribute("role", "tabpanel");
      cell.setAttribute("data-framework", f.key);
      cell.setAttribute("data-framework-label", f.label);
      cell.setAttribute("aria-labelledby", button.id);
      cell.classList.add("framework-tabs__panel");
    });
    // keep the cells in their notebook order
    wrapper.appendChild(first);
    wrapper.appendChild(second);
    return wrapper;
  }

  function addLabel(cell, key) {
    var tag = document.createElement("div");
    tag.className = "framework-label";
    tag.setAttribute("data-framework", key);
    tag.textContent = label(key);
    cell.classList.add("framework-single");
    cell.setAttribute("data-framework", key);
    cell.insertBefore(tag, cell.firstChild);
  }

  function apply(key) {
    document.documentElement.setAttribute("data-course-framework", key);
    document.querySelectorAll(".framework-tabs").forEach(function (set) {
      set.querySelectorAll('[role="tab"]').forEach(function (tab) {
        var on = tab.getAttribute("data-framework") === key;
        tab.setAttribute("aria-selected", on ? "true" : "false");
        tab.tabIndex = on ? 0 : -1;
      });
      set.querySelectorAll(':scope > [role="tabpanel"]').forEach(function (panel) {
        panel.hidden = panel.getAttribute("data-framework") !== key;
      });
    });
    window.dispatchEvent(new Event("resize")); // let charts and widgets in the shown panel lay out
  }

  function choose(key, anchor) {
    if (!isFramework(key)) {
      return;
    }
    // All tab sets switch together, which changes the height of content above `anchor`: keep
    // the tab the reader clicked where it was on screen.
    var before = anchor ? anchor.getBoundingClientRect().top : null;
    store(key);
    apply(key);
    if (anchor) {
      var shift = anchor.getBoundingClientRect().top - before;
      if (shift) {
        window.scrollBy(0, shift);
      }
    }
  }

  function onKeydown(event) {
    var tab = event.target.closest('[role="tab"]');
    if (!tab) {
      return;
    }
    var tabs = Array.prototype.slice.call(tab.parentNode.querySelectorAll('[role="tab"]'));
    var i = tabs.indexOf(tab);
    var next = null;
    if (event.key === "ArrowRight" || event.key === "ArrowDown") {
      next = tabs[(i + 1) % tabs.length];
    } else if (event.key === "ArrowLeft" || event.key === "ArrowUp") {
      next = tabs[(i - 1 + tabs.length) % tabs.length];
    } else if (event.key === "Home") {
      next = tabs[0];
    } else if (event.key === "End") {
      next = tabs[tabs.length - 1];
    }
    if (next) {
      event.preventDefault();
      choose(next.getAttribute("data-framework"), next);
      next.focus();
    }
  }

  function init() {
    var cells = Array.prototype.slice.call(document.querySelectorAll("div.cell"));
    var done = new Set();
    cells.forEach(function (cell) {
      if (done.has(cell)) {
        return;
      }
      var key = frameworkOf(cell);
      if (!key) {
        return;
      }
      var next = cell.nextElementSibling;
      var other = frameworkOf(next);
      if (other && other !== key && !done.has(next)) {
        done.add(cell);
        done.add(next);
        makeTabs(cell, next);
      } else {
        done.add(cell);
        addLabel(cell, key);
      }
    });
    document.querySelectorAll(".framework-tabs").forEach(function (set) {
      set.addEventListener("click", function (event) {
        var tab = event.target.closest('[role="tab"]');
        if (tab) {
          choose(tab.getAttribute("data-framework"), tab);
        }
      });
      set.addEventListener("keydown", onKeydown);
    });
    apply(stored() || DEFAULT);
    // another browser tab of the book changed the choice
    window.addEventListener("storage", function (event) {
      if (event.key === STORAGE_KEY && isFramework(event.newValue)) {
        apply(event.newValue);
      }
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
