// The session list's keys: j / k move the selection over the rows (search hits, then
// sessions), enter opens the selected row, / puts the cursor in the search field, escape
// leaves a field. No text of a session is read or written as markup here.
(function () {
  "use strict";
  var rows = Array.prototype.slice.call(document.querySelectorAll("tr[data-href]"));
  var at = -1;

  function select(i) {
    if (!rows.length) return;
    if (at >= 0) {
      rows[at].classList.remove("sel");
      rows[at].removeAttribute("aria-selected");
    }
    at = Math.max(0, Math.min(rows.length - 1, i));
    rows[at].classList.add("sel");
    rows[at].setAttribute("aria-selected", "true");
    rows[at].scrollIntoView({ block: "nearest" });
  }

  function typing(el) {
    var tag = el && el.tagName;
    return tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || (el && el.isContentEditable);
  }

  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (typing(document.activeElement)) {
      if (ev.key === "Escape") document.activeElement.blur();
      return;
    }
    if (ev.key === "j") {
      select(at + 1);
    } else if (ev.key === "k") {
      select(at < 0 ? 0 : at - 1);
    } else if (ev.key === "Enter" && at >= 0) {
      window.location.assign(rows[at].getAttribute("data-href"));
    } else if (ev.key === "/") {
      var field = document.getElementById("search");
      if (!field) return;
      field.focus();
      field.select();
    } else {
      return;
    }
    ev.preventDefault();
  });

  rows.forEach(function (row, i) {
    row.addEventListener("click", function (ev) {
      if (ev.target.closest("a")) return;
      select(i);
    });
    row.addEventListener("dblclick", function () {
      window.location.assign(row.getAttribute("data-href"));
    });
  });
})();
