// report.html's filters and cell links. Works offline; reads only the page.
(function () {
  "use strict";
  var selects = Array.prototype.slice.call(document.querySelectorAll("select[data-filter]"));
  var items = Array.prototype.slice.call(document.querySelectorAll(".f"));
  var cells = Array.prototype.slice.call(document.querySelectorAll("details.cell"));
  var count = document.getElementById("filter-count");

  function wanted() {
    var want = {};
    selects.forEach(function (select) { want[select.getAttribute("data-filter")] = select.value; });
    return want;
  }

  // An element is shown when each filter it carries an attribute for matches.
  function matches(element, want) {
    return Object.keys(want).every(function (key) {
      var value = element.getAttribute("data-" + key);
      return want[key] === "" || value === null || value === want[key];
    });
  }

  function apply() {
    var want = wanted();
    items.forEach(function (element) { element.hidden = !matches(element, want); });
    var shown = cells.filter(function (cell) { return !cell.hidden; }).length;
    count.textContent = shown + " of " + cells.length + " " +
      (count.getAttribute("data-noun") || "cells");
  }

  function openTarget() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var target = id ? document.getElementById(id) : null;
    if (target && target.tagName === "DETAILS") {
      target.hidden = false;
      target.open = true;
      target.scrollIntoView({block: "start"});
    }
  }

  selects.forEach(function (select) { select.addEventListener("change", apply); });
  document.getElementById("filter-reset").addEventListener("click", function () {
    selects.forEach(function (select) { select.value = ""; });
    apply();
  });
  document.getElementById("open-all").addEventListener("click", function () {
    cells.forEach(function (cell) { if (!cell.hidden) { cell.open = true; } });
  });
  document.getElementById("close-all").addEventListener("click", function () {
    cells.forEach(function (cell) { cell.open = false; });
  });
  window.addEventListener("hashchange", openTarget);
  apply();
  openTarget();
}());
